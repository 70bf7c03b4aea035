"""The named strategies: benchmarks/strategies.json, the file the accuracy tests are generated from
(cmake/GradwireStrategies.cmake), so a strategy runs here with the settings it is tested with."""

import json
import os
import re

from .common import ROOT, HarnessError

PATH = os.path.join(ROOT, "benchmarks", "strategies.json")
SCHEMA = "gradwire-strategies/1"
STEPS_PER_EPOCH = "{steps_per_epoch}"  # the only placeholder a setting may hold


def load(path=PATH):
    """Strategy name -> its GRADWIRE_* settings, placeholders still in, in the file's order."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise HarnessError(f"cannot read {path} ({e})")
    if data.get("schema") != SCHEMA:
        raise HarnessError(f"{path}: schema {data.get('schema')!r}; this harness reads {SCHEMA}")
    table = {}
    for i, entry in enumerate(data.get("strategies") or []):
        name = entry.get("name") if isinstance(entry, dict) else None
        where = f"{path}: strategy {name!r} (strategies[{i}])"
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_+]+", name):
            raise HarnessError(f"{where}: name: a string of a-z, 0-9, _ and +")
        env = entry.get("env")
        if not isinstance(env, dict) or not all(
                re.fullmatch(r"GRADWIRE_[A-Z0-9_]+", k) and isinstance(v, str)
                for k, v in env.items()):
            raise HarnessError(f"{where}: env: an object of GRADWIRE_* names to strings")
        for var, value in env.items():
            if re.search(r"\{[a-z_]*\}", value.replace(STEPS_PER_EPOCH, "")):
                raise HarnessError(f"{where}: env.{var}: unknown placeholder in {value!r}")
        if name in table:
            raise HarnessError(f"{where}: name: a second strategy of that name")
        table[name] = env
    if not table:
        raise HarnessError(f"{path}: strategies: none")
    return table


def environment(template, steps_per_epoch):
    """One strategy's settings for a run with steps_per_epoch steps in an epoch."""
    return {name: value.replace(STEPS_PER_EPOCH, str(max(1, steps_per_epoch)))
            for name, value in template.items()}
