#!/usr/bin/env python3
"""benchmarks/strategies.json: the one reader of the file, and the one checker of it.

  tools/strategies_file.py [--file PATH]              check the file: exit 1, naming the entry
                                                      and the field, at its first mistake
  tools/strategies_file.py --cmake OUT [--file PATH]  check it and write OUT, the CMake variables
                                                      the accuracy tests are made from (included
                                                      at configure time by
                                                      cmake/GradwireStrategies.cmake)

tools/results.py, the low-bandwidth harness (benchmarks/lowband/strategies.py) and CMake all read
the file through load(). Python 3 standard library only.
"""
# Note [Reading strategies.json]
# The file is checked whole when it is read, here and nowhere else: an unknown key, a missing field
# or a value of the wrong type stops the reader (and so CMake's configure, which runs it) with a
# message naming the file, the entry and the field, so a typo cannot silently drop an assertion.
# CMake gets what it needs as variables (cmake_variables). They are what its own reader made when
# it read the file itself: object members in key order (the order its JSON library gave them;
# gradwire_check_report evaluates every --min, then every --max, each a separate condition, so
# the order does not matter) and each number as the shortest decimal that reads back as the same
# double, so a command line shows 0.003. A value that CMake would split at a ';' is refused.
# Note [Accuracy at two lengths]
# Each strategy with an accuracy block is trained at two lengths. The full runs (accuracy_run: 3
# epochs, each of the block's seeds) make the committed figures and their thresholds are the
# claims RESULTS.md states; they take minutes each, so they run where figures are made
# (./gradwire.sh results --run, or ctest -L '^accuracy$'), not in CI. CI trains each strategy once
# (ci_accuracy_run: one seed, its epochs over its part of the training set, whose steps fill in
# {steps_per_epoch}) and checks its block's "ci": the same byte and schedule checks where they do
# not depend on the length, the counts that do at this length, and accuracy (or, where accuracy
# swings from step to step, test loss) against the baseline's run of the same length, with a margin
# measured to hold a working strategy and to fail one whose mechanism is broken (the block's
# "ci.why" gives both figures). A CI run is deterministic, so its margin covers a change of
# arithmetic elsewhere, not the run's noise.
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "benchmarks", "strategies.json")
SCHEMA = "gradwire-strategies/2"
STEPS_PER_EPOCH = "{steps_per_epoch}"  # the only placeholder a setting may hold
NAME = re.compile(r"[a-z0-9_+]+")
VARIABLE = re.compile(r"GRADWIRE_[A-Z0-9_]+")
PLACEHOLDER = re.compile(r"\{[a-z_]*\}")
# The flags each kind of expectation becomes (gradwire_compare_reports, gradwire_check_report).
VS_BASELINE = ("max_drop", "min_ratio", "max_ratio")
CHECK = ("min", "max")
FIELDS = ("ID", "ENV", "SEEDS", "LABELS", "VS_BASELINE", "BASE", "CHECK", "CI_ENV",
          "CI_VS_BASELINE", "CI_CHECK")


class StrategiesError(ValueError):
    """A mistake in the file; the message names the file, the entry and the field."""


def json_type(value):
    """The type's name as CMake's string(JSON TYPE) gives it."""
    if value is None:
        return "NULL"
    for types, name in ((bool, "BOOLEAN"), (str, "STRING"), ((int, float), "NUMBER"),
                        (list, "ARRAY"), (dict, "OBJECT")):
        if isinstance(value, types):
            return name
    raise TypeError(f"not a JSON value: {value!r}")


def article(noun):
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def number(value):
    """A JSON number as text: an integer as it is, a fraction as the shortest decimal that reads
    back as the same double (Note [Reading strategies.json])."""
    return str(value) if isinstance(value, int) else repr(value)


class _Checker:
    """Checks a parsed file, stopping at its first mistake with the entry and the field."""

    def __init__(self, path):
        self.path = path

    def fail(self, where, message):
        raise StrategiesError(f"{self.path}: {where}: {message}")

    def keys(self, obj, where, required, optional=()):
        """obj is an object with every required key and none outside the two lists."""
        if not isinstance(obj, dict):
            self.fail(where, "expected an object")
        known = list(required) + list(optional)
        for key in sorted(obj):
            if key not in known:
                self.fail(where, f"unknown key '{key}' (known: {', '.join(known)})")
        for key in required:
            if key not in obj:
                self.fail(where, f"missing field '{key}'")

    def get(self, obj, key, kind, where):
        """obj[key], which must be of kind (a json_type name)."""
        if key not in obj:
            self.fail(where, "missing")
        found = json_type(obj[key])
        if found != kind:
            self.fail(where, f"expected {article(kind.lower())}, found {found}")
        return obj[key]

    def array(self, obj, key, kind, where):
        """obj[key], an array whose every element is of kind."""
        items = self.get(obj, key, "ARRAY", where)
        for i, item in enumerate(items):
            found = json_type(item)
            if found != kind:
                self.fail(f"{where}[{i}]", f"expected {article(kind.lower())}, found {found}")
        return items

    def whole(self, value, least, where):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            self.fail(where, f"{number(value)} is not a whole number of at least {least}")

    def one_list_item(self, text, where):
        if ";" in text:
            self.fail(where, f"'{text}': a ';' would split it in two in CMake's lists")

    def check(self, spec):
        self.keys(spec, "top level",
                  ("schema", "baseline", "accuracy_run", "ci_accuracy_run", "strategies"),
                  ("placeholders",))
        schema = self.get(spec, "schema", "STRING", "schema")
        if schema != SCHEMA:
            self.fail("schema", f"'{schema}' (this build reads {SCHEMA})")
        baseline = self.get(spec, "baseline", "STRING", "baseline")
        if "placeholders" in spec:
            placeholders = self.get(spec, "placeholders", "OBJECT", "placeholders")
            for key in sorted(placeholders):
                self.get(placeholders, key, "STRING", f"placeholders.{key}")
        run = spec["accuracy_run"]
        self.keys(run, "accuracy_run", ("ranks", "args", "steps_per_epoch"))
        self.whole(self.get(run, "ranks", "NUMBER", "accuracy_run.ranks"), 1,
                   "accuracy_run.ranks")
        steps = self.get(run, "steps_per_epoch", "NUMBER", "accuracy_run.steps_per_epoch")
        self.whole(steps, 1, "accuracy_run.steps_per_epoch")
        for i, arg in enumerate(self.array(run, "args", "STRING", "accuracy_run.args")):
            self.one_list_item(arg, f"accuracy_run.args[{i}]")
        if "--epochs" not in run["args"][:-1]:
            self.fail("accuracy_run.args", "no --epochs N (ci_accuracy_run.epochs replaces it)")
        ci = spec["ci_accuracy_run"]
        self.keys(ci, "ci_accuracy_run",
                  ("why", "epochs", "train_subset", "steps_per_epoch", "seed"))
        self.get(ci, "why", "STRING", "ci_accuracy_run.why")
        self.whole(self.get(ci, "epochs", "NUMBER", "ci_accuracy_run.epochs"), 1,
                   "ci_accuracy_run.epochs")
        if "--train-subset" in run["args"]:
            self.fail("accuracy_run.args", "--train-subset (ci_accuracy_run.train_subset adds it)")
        subset = self.get(ci, "train_subset", "NUMBER", "ci_accuracy_run.train_subset")
        self.whole(subset, 1, "ci_accuracy_run.train_subset")
        ci_steps = self.get(ci, "steps_per_epoch", "NUMBER", "ci_accuracy_run.steps_per_epoch")
        self.whole(ci_steps, 1, "ci_accuracy_run.steps_per_epoch")
        batch = run["args"][run["args"].index("--batch-size") + 1] \
            if "--batch-size" in run["args"][:-1] else None
        if batch is None or not batch.isdigit() or int(batch) < 1:
            self.fail("accuracy_run.args", "no --batch-size N (ci_accuracy_run.steps_per_epoch "
                      "is counted with it)")
        if ci_steps != subset // (run["ranks"] * int(batch)):
            self.fail("ci_accuracy_run.steps_per_epoch",
                      f"{ci_steps}, but {subset} samples make "
                      f"{subset // (run['ranks'] * int(batch))} steps of {run['ranks']} x {batch}")
        self.whole(self.get(ci, "seed", "NUMBER", "ci_accuracy_run.seed"), 0,
                   "ci_accuracy_run.seed")
        strategies = self.get(spec, "strategies", "ARRAY", "strategies")
        if not strategies:
            self.fail("strategies", "empty")
        names = []
        for i, entry in enumerate(strategies):
            names.append(self.strategy(entry, i, names, steps))
        if baseline not in names:
            self.fail("baseline", f"'{baseline}' is not a strategy in the file")
        for entry in strategies:
            self.against(spec, entry, names)

    def strategy(self, entry, i, names, steps):
        """One entry of strategies; its name."""
        where = f"strategies[{i}]"
        if not isinstance(entry, dict):
            self.fail(where, "expected an object")
        name = self.get(entry, "name", "STRING", f"{where}.name")
        where = f"strategy '{name}' ({where})"
        if not NAME.fullmatch(name):
            self.fail(where, "name: only a-z, 0-9, _ and +")
        if name in names:
            self.fail(where, "name: a second strategy of that name")
        self.keys(entry, where, ("name", "summary", "env"), ("accuracy",))
        self.get(entry, "summary", "STRING", f"{where}: summary")
        self.env(self.get(entry, "env", "OBJECT", f"{where}: env"), where, steps)
        if "accuracy" in entry:
            self.accuracy(entry["accuracy"], f"{where}: accuracy", steps)
        return name

    def env(self, env, where, steps):
        for var in sorted(env):
            if not VARIABLE.fullmatch(var):
                self.fail(where, f"env: '{var}' is not a GRADWIRE_* variable")
            value = self.get(env, var, "STRING", f"{where}: env.{var}")
            value = value.replace(STEPS_PER_EPOCH, number(steps))
            if PLACEHOLDER.search(value):
                self.fail(where, f"env.{var}: unknown placeholder in '{value}'")
            self.one_list_item(value, f"{where}: env.{var}")

    def accuracy(self, block, where, steps):
        """A strategy's accuracy block: its seeds, at least one expectation, and the shorter run
        CI checks it with (Note [Accuracy at two lengths])."""
        self.keys(block, where, ("seeds", "ci"),
                  ("why", "baseline", "vs_baseline", "check", "labels"))
        for key in ("baseline", "why"):
            if key in block:
                self.get(block, key, "STRING", f"{where}.{key}")
        seeds = self.array(block, "seeds", "NUMBER", f"{where}.seeds")
        if not seeds:
            self.fail(where, "seeds: empty")
        for i, seed in enumerate(seeds):
            self.whole(seed, 0, f"{where}.seeds[{i}]")
        if "labels" in block:
            for i, label in enumerate(self.array(block, "labels", "STRING", f"{where}.labels")):
                self.one_list_item(label, f"{where}.labels[{i}]")
        self.expectations(block, where)
        ci = block["ci"]
        self.keys(ci, f"{where}.ci", ("why",), ("env", "vs_baseline", "check"))
        self.get(ci, "why", "STRING", f"{where}.ci.why")
        if "env" in ci:
            self.env(self.get(ci, "env", "OBJECT", f"{where}.ci.env"), f"{where}.ci", steps)
        self.expectations(ci, f"{where}.ci")

    def expectations(self, block, where):
        """block's vs_baseline and check, at least one flag in all."""
        asserted = 0
        for part, kinds in (("vs_baseline", VS_BASELINE), ("check", CHECK)):
            if part not in block:
                continue
            self.keys(block[part], f"{where}.{part}", (), kinds)
            for kind in kinds:
                if kind in block[part]:
                    asserted += len(self.flags(block[part], kind, f"{where}.{part}.{kind}"))
        if not asserted:
            self.fail(where, "neither vs_baseline nor check: nothing to assert")

    def flags(self, obj, kind, where):
        """An object of JSON pointer (or pointer:pointer, a ratio) -> number."""
        members = self.get(obj, kind, "OBJECT", where)
        for ptr in sorted(members):
            if not ptr.startswith("/"):
                self.fail(where, f"'{ptr}' is not a JSON pointer (/a/b, or /a:/b for a ratio)")
            self.one_list_item(ptr, where)
            self.get(members, ptr, "NUMBER", f"{where}.{ptr}")
        return members

    def against(self, spec, entry, names):
        """What a strategy's expectations compare with exists, with a run for each seed."""
        name, block = entry["name"], entry.get("accuracy") or {}
        base = base_name(spec, entry)
        if block.get("baseline") and (base not in names or base == name):
            self.fail(f"strategy '{name}'",
                      f"accuracy.baseline: '{base}' is not another strategy in the file")
        base_entry = next((s for s in spec["strategies"] if s["name"] == base), {})
        if any(block.get("ci", {}).get("vs_baseline", {}).values()) and \
                not base_entry.get("accuracy"):
            self.fail(f"strategy '{name}'",
                      f"accuracy.ci.vs_baseline: '{base}' has no accuracy block, so no CI run")
        if not any(block.get("vs_baseline", {}).values()):
            return
        base_seeds = seeds_of(next(s for s in spec["strategies"] if s["name"] == base))
        for seed in seeds_of(entry):
            if seed not in base_seeds:
                self.fail(f"strategy '{name}'",
                          f"accuracy.seeds: seed {seed} has no '{base}' run to compare with "
                          "(its accuracy.seeds)")


def parse(text, path=PATH):
    """The checked file, as json.load gives it (members in the file's order)."""
    try:
        spec = json.loads(text)
    except ValueError as e:
        raise StrategiesError(f"{path}: file: not valid JSON: {e}") from None
    _Checker(path).check(spec)
    return spec


def load(path=PATH):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise StrategiesError(f"{path}: file: cannot read it ({e.strerror})") from None
    return parse(text, path)


def base_name(spec, entry):
    """What a strategy's accuracy expectations compare with: accuracy.baseline where given (a
    flat twin, say), else the file's baseline."""
    return (entry.get("accuracy") or {}).get("baseline") or spec["baseline"]


def seeds_of(entry):
    """A strategy's accuracy seeds as text (none without an accuracy block)."""
    return [number(x) for x in (entry.get("accuracy") or {}).get("seeds", [])]


def environment(env, steps_per_epoch):
    """A strategy's settings for a run with steps_per_epoch steps in an epoch."""
    return {var: value.replace(STEPS_PER_EPOCH, str(steps_per_epoch))
            for var, value in env.items()}


def expectation_flags(block, part, kinds):
    """The flags of one part (vs_baseline or check): --kind pointer=number, kinds in order,
    pointers in key order."""
    flags = []
    for kind in kinds:
        members = block.get(part, {}).get(kind, {})
        for ptr in sorted(members):
            flags += ["--" + kind.replace("_", "-"), f"{ptr}={number(members[ptr])}"]
    return flags


def strategy_variables(spec, entry):
    """GW_STRATEGY_<name>_<field> for one strategy: field -> list of values."""
    block = entry.get("accuracy") or {}
    steps = number(spec["accuracy_run"]["steps_per_epoch"])
    env = entry["env"]
    return {
        "ID": [entry["name"].replace("+", "_plus_")],
        "ENV": [f"{var}={env[var].replace(STEPS_PER_EPOCH, steps)}" for var in sorted(env)],
        "SEEDS": seeds_of(entry),
        "LABELS": list(block.get("labels", [])),
        "VS_BASELINE": expectation_flags(block, "vs_baseline", VS_BASELINE),
        "BASE": [base_name(spec, entry)],
        "CHECK": expectation_flags(block, "check", CHECK),
        "CI_ENV": [f"{var}={value}" for var, value in sorted(
            environment({**env, **block["ci"].get("env", {})},
                        number(spec["ci_accuracy_run"]["steps_per_epoch"])).items())]
        if block else [],
        "CI_VS_BASELINE": expectation_flags(block.get("ci", {}), "vs_baseline", VS_BASELINE),
        "CI_CHECK": expectation_flags(block.get("ci", {}), "check", CHECK),
    }


def ci_args(spec):
    """accuracy_run.args with ci_accuracy_run's epochs, on its train_subset."""
    ci = spec["ci_accuracy_run"]
    args = list(spec["accuracy_run"]["args"])
    args[args.index("--epochs") + 1] = number(ci["epochs"])
    return args + ["--train-subset", number(ci["train_subset"])]


def cmake_variables(spec, path=PATH):
    """(variable, list of values) for CMake, in the order they are set:
      GW_STRATEGIES_FILE       the file read
      GW_STRATEGIES            every strategy's name, in the file's order
      GW_STRATEGY_BASELINE     the name the accuracy comparisons are against
      GW_ACCURACY_RANKS        the accuracy runs' world size
      GW_ACCURACY_ARGS         their gradwire_train arguments (each run adds --seed and --report)
      GW_CI_ACCURACY_ARGS      the same with ci_accuracy_run's epochs and train subset
                               (Note [Accuracy at two lengths])
      GW_CI_ACCURACY_SEED      the seed of every CI run
    and, for each strategy, with <name> as given (+ and all):
      GW_STRATEGY_<name>_ID          the name for test and file names, + written _plus_
      GW_STRATEGY_<name>_ENV         its settings, VAR=VALUE each, {steps_per_epoch} filled in
      GW_STRATEGY_<name>_SEEDS       its accuracy runs' seeds (empty: no accuracy test)
      GW_STRATEGY_<name>_LABELS      labels its accuracy tests carry besides integration;accuracy
      GW_STRATEGY_<name>_VS_BASELINE gradwire_compare_reports' flags against the baseline
      GW_STRATEGY_<name>_BASE        the strategy those flags compare with (base_name)
      GW_STRATEGY_<name>_CHECK       gradwire_check_report's flags on its first seed's report
      GW_STRATEGY_<name>_CI_ENV, _CI_VS_BASELINE, _CI_CHECK   the same for its CI run (ENV with
                                     the ci block's env over the strategy's, {steps_per_epoch}
                                     ci_accuracy_run's)"""
    run = spec["accuracy_run"]
    out = [("GW_STRATEGIES_FILE", [path]),
           ("GW_STRATEGIES", [s["name"] for s in spec["strategies"]]),
           ("GW_STRATEGY_BASELINE", [spec["baseline"]]),
           ("GW_ACCURACY_RANKS", [number(run["ranks"])]),
           ("GW_ACCURACY_ARGS", list(run["args"])),
           ("GW_CI_ACCURACY_ARGS", ci_args(spec)),
           ("GW_CI_ACCURACY_SEED", [number(spec["ci_accuracy_run"]["seed"])])]
    for entry in spec["strategies"]:
        fields = strategy_variables(spec, entry)
        out += [(f"GW_STRATEGY_{entry['name']}_{field}", fields[field]) for field in FIELDS]
    return out


def cmake_quote(text):
    """text as a CMake quoted argument."""
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("$", "\\$"), ("\n", "\\n")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def cmake_text(spec, path=PATH):
    lines = [f"# Generated by tools/strategies_file.py from {path}; do not edit",
             "# (cmake/GradwireStrategies.cmake runs it at every configure)."]
    lines += [f"set({var} {cmake_quote(';'.join(values))})"
              for var, values in cmake_variables(spec, path)]
    return "\n".join(lines) + "\n"


def write_if_changed(path, text):
    """Leaves the file (and its time) alone when it already holds text."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", default=PATH, help="the strategies file (default: %(default)s)")
    ap.add_argument("--cmake", metavar="OUT", help="write the CMake variables to OUT")
    args = ap.parse_args(argv)
    try:
        spec = load(args.file)
    except StrategiesError as e:
        print(e, file=sys.stderr)
        return 1
    if args.cmake:
        write_if_changed(args.cmake, cmake_text(spec, args.file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
