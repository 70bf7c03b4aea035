#!/usr/bin/env python3
"""Do two trainer reports hold the same figures? For a change that must not change behaviour.

    tools/same_figures.py OLD.json NEW.json     # or: --git REV results/reports/*.json

Compares every value of the two JSON reports except what depends on the clock or the machine
(keys naming seconds, times, rates, dates, hosts, versions and paths): accuracy, losses, every
byte counter, the sync and compression records, the loss-scale history. Exits 1 and lists the
differences when there are any.
"""

import argparse
import json
import re
import subprocess
import sys

# Keys whose values come from the clock, the machine or the run's paths, not from the training.
VOLATILE = re.compile(r"seconds|samples_per_second|date|host|version|path|command|^pid$|"
                      r"elapsed|load_average|mpi_library|machine|started|finished")


def walk(a, b, where, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if VOLATILE.search(k):
                continue
            if k not in a or k not in b:
                out.append(f"{where}/{k}: only in {'new' if k in b else 'old'}")
            else:
                walk(a[k], b[k], f"{where}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} entries, now {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{where}/{i}", out)
    elif a != b:
        out.append(f"{where}: {a!r} -> {b!r}")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--git", metavar="REV", help="compare each file with its version at REV")
    p.add_argument("files", nargs="+")
    args = p.parse_args(argv)
    if args.git:
        pairs = []
        for f in args.files:
            old = subprocess.run(["git", "show", f"{args.git}:{f}"], capture_output=True)
            if old.returncode != 0:
                print(f"{f}: not at {args.git}, nothing to compare")
                continue
            pairs.append((json.loads(old.stdout), json.load(open(f)), f))
    elif len(args.files) == 2:
        pairs = [(json.load(open(args.files[0])), json.load(open(args.files[1])), args.files[1])]
    else:
        p.error("give OLD.json NEW.json, or --git REV and the files")
    failed = 0
    for old, new, name in pairs:
        diffs = []
        walk(old, new, "", diffs)
        print(f"{name}: {'same figures' if not diffs else f'{len(diffs)} differences'}")
        for d in diffs[:20]:
            print(f"  {d}")
        failed += bool(diffs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
