"""The command line: write the generated files, --check them, or --self-test the check."""
import argparse
import difflib
import io
import json
import os
import shutil
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout

import gwresults

from . import inputs
from .documents import broken_links, outputs
from .inputs import (AUTO_ACCURACY, GPU_REPORTS, LOWBAND, LOWBAND_RUNS, README, REPORTS,
                     RESULTS, STRATEGIES, STRATEGIES_DOC, TIMINGS, InputError)

INPUTS_AND_OUTPUTS = [STRATEGIES, REPORTS, LOWBAND, LOWBAND_RUNS, GPU_REPORTS, TIMINGS, RESULTS,
                      README, STRATEGIES_DOC, AUTO_ACCURACY]


# The folders libgradwire and the trainer are built from: nothing rendered from reports goes there,
# so that re-rendering the docs cannot change what the library decides.
LIBRARY = ("amp", "common", "compressors", "fusion", "kernels", "plugin", "reference_trainer",
           "sync_policies")


def quiet_check():
    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        return run(check_only=True)


def expect(label, want):
    got = quiet_check()
    print(f"self-test {'ok' if got == want else 'FAIL'}: {label}: exit {got}, expected {want}")
    return got == want


def with_edit(path, change, label, want):
    """expect(label, want) with path's text changed by change, restored afterwards."""
    with open(path) as f:
        original = f.read()
    with open(path, "w") as f:
        f.write(change(original))
    try:
        return expect(label, want)
    finally:
        with open(path, "w") as f:
            f.write(original)


def lower_accuracy(text):
    r = json.loads(text)
    r["final_test_accuracy"] = round(r["final_test_accuracy"] - 0.0123, 4)
    return json.dumps(r)


def no_library_output():
    written = [rel for rel in outputs() if rel.split("/")[0] in LIBRARY]
    print(f"self-test {'FAIL' if written else 'ok'}: no generated file in the library's folders"
          + (": " + ", ".join(written) if written else ""))
    return not written


def self_test_cases(tmp):
    yield expect("the copy as committed", 0)
    yield with_edit(os.path.join(tmp, REPORTS, "accuracy_mlp_dense_seed42.json"), lower_accuracy,
                    "a report's accuracy changed", 1)
    yield with_edit(os.path.join(tmp, RESULTS),
                    lambda t: t.replace("| `dense` |", "| `dense` | 0.9999 |", 1),
                    "a row of RESULTS.md edited by hand", 1)
    yield with_edit(os.path.join(tmp, AUTO_ACCURACY),
                    lambda t: t.replace('"drop_points": 2.8,', '"drop_points": 0.4,', 1),
                    "an accuracy cost in auto_accuracy.json edited by hand", 1)
    yield with_edit(os.path.join(tmp, STRATEGIES_DOC),
                    lambda t: t + "\nSee [the sweep](RESULTS.md#no-such-section).\n",
                    "a link to a section RESULTS.md does not have", 1)
    yield no_library_output()


def self_test():
    """In a scratch copy of the inputs and outputs: --check passes as committed and fails on
    each edit."""
    real_root = inputs.ROOT
    with tempfile.TemporaryDirectory() as tmp:
        for rel in INPUTS_AND_OUTPUTS:
            src, dst = os.path.join(real_root, rel), os.path.join(tmp, rel)
            if not os.path.exists(src):
                continue  # results/lowband/runs is optional
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)
        inputs.ROOT = tmp
        try:
            results = list(self_test_cases(tmp))
        finally:
            inputs.ROOT = real_root
    return 0 if all(results) else 1


def main():
    ap = argparse.ArgumentParser(description=gwresults.__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="change nothing; exit 1 with a diff if a generated file is out of date")
    ap.add_argument("--self-test", action="store_true",
                    help="show, in a scratch copy, that --check fails on a changed figure")
    args = ap.parse_args()
    return self_test() if args.self_test else run(args.check)


def run(check_only):
    try:
        files = outputs()
    except (InputError, KeyError, ValueError, StopIteration) as e:
        print(f"results: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    bad = broken_links(files[RESULTS])
    for line in bad:
        print(f"results: {line}", file=sys.stderr)
    stale = []
    for rel, text in files.items():
        path = os.path.join(inputs.ROOT, rel)
        old = open(path).read() if os.path.exists(path) else ""
        if old == text:
            continue
        if check_only:
            stale.append(rel)
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), f"{rel} (committed)",
                f"{rel} (generated)"))
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"results: {rel} written")
    if stale:
        print(f"results: out of date: {', '.join(stale)}; regenerate with ./gradwire.sh results",
              file=sys.stderr)
    if stale or bad:
        return 1
    if check_only:
        print(f"results: {', '.join(files)} match the committed reports")
    return 0
