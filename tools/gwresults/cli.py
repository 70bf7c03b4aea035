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
                     RESULTS, STRATEGIES, STRATEGIES_DOC, InputError)

INPUTS_AND_OUTPUTS = [STRATEGIES, REPORTS, LOWBAND, LOWBAND_RUNS, GPU_REPORTS, RESULTS, README,
                      STRATEGIES_DOC, AUTO_ACCURACY]


def self_test():
    real_root, failed = inputs.ROOT, 0
    with tempfile.TemporaryDirectory() as tmp:
        for rel in INPUTS_AND_OUTPUTS:
            src, dst = os.path.join(real_root, rel), os.path.join(tmp, rel)
            if not os.path.exists(src):
                continue  # results/lowband/runs is optional
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)

        def check():
            sink = io.StringIO()
            with redirect_stdout(sink), redirect_stderr(sink):
                return run(check_only=True)

        def expect(label, want):
            nonlocal failed
            got = check()
            failed += got != want
            print(f"self-test {'ok' if got == want else 'FAIL'}: {label}: exit {got}, "
                  f"expected {want}")

        inputs.ROOT = tmp
        try:
            expect("the copy as committed", 0)
            dense = os.path.join(tmp, REPORTS, "accuracy_mlp_dense_seed42.json")
            original = open(dense).read()
            r = json.loads(original)
            r["final_test_accuracy"] = round(r["final_test_accuracy"] - 0.0123, 4)
            with open(dense, "w") as f:
                json.dump(r, f)
            expect("a report's accuracy changed", 1)
            with open(dense, "w") as f:
                f.write(original)
            results = os.path.join(tmp, RESULTS)
            text = open(results).read()
            with open(results, "w") as f:
                f.write(text.replace("| `dense` |", "| `dense` | 0.9999 |", 1))
            expect("a row of RESULTS.md edited by hand", 1)
            with open(results, "w") as f:
                f.write(text)
            strategies = os.path.join(tmp, STRATEGIES_DOC)
            with open(strategies, "a") as f:
                f.write("\nSee [the sweep](RESULTS.md#no-such-section).\n")
            expect("a link to a section RESULTS.md does not have", 1)
        finally:
            inputs.ROOT = real_root
    return 1 if failed else 0


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
