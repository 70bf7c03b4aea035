"""The named strategies: benchmarks/strategies.json, read and checked by tools/strategies_file.py,
the file's one reader, which the accuracy tests are generated through too
(Note [Reading strategies.json]), so a strategy runs here with the settings it is tested with."""

import importlib.util
import os

from .common import ROOT, HarnessError


def _reader():
    """tools/strategies_file.py, loaded from its path (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location(
        "strategies_file", os.path.join(ROOT, "tools", "strategies_file.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_READER = _reader()
PATH = _READER.PATH


def load(path=PATH):
    """Strategy name -> its GRADWIRE_* settings, placeholders still in, in the file's order."""
    try:
        spec = _READER.load(path)
    except _READER.StrategiesError as e:
        raise HarnessError(str(e)) from None
    return {s["name"]: s["env"] for s in spec["strategies"]}


def environment(template, steps_per_epoch):
    """One strategy's settings for a run with steps_per_epoch steps in an epoch."""
    return _READER.environment(template, max(1, steps_per_epoch))
