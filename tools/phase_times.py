#!/usr/bin/env python3
"""Writes a run's phase times (a tab-separated file of name, seconds, exit status and, for a phase
that ran beside the others, "beside", one a line, as gradwire.sh's phase() appends them) as a
timing report for results/timings/ (docs/RESULTS.md,
"Time to a first result, and CI", renders them; tools/gwresults/timings.py).

  tools/phase_times.py KIND TSV [OUT] [--command TEXT] [--note TEXT]

prints the phases as a table (the demo's, and CI's at its end) and, given OUT, writes the report
there. KIND is demo or ci. The report names the commit the checkout holds, the date, the cores, and
whether the packages were already installed (an install phase of under 5 s). A phase beside the
others is named "NAME (beside)" and left out of the total, which is then the run's wall time
(gradwire.sh, Note "Sanitizer builds beside the suites"). Python 3 standard library only.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys


def commit(root):
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True).stdout
        return out + ("+uncommitted changes" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("demo", "ci"))
    ap.add_argument("tsv")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--command", default="")
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    phases = []
    with open(args.tsv) as f:
        for number, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            beside = len(fields) == 4 and fields[3] == "beside"
            if len(fields) != 3 + beside or not fields[0] or not all(
                    x.lstrip("-").isdigit() for x in fields[1:3]):
                sys.exit(f"phase_times: {args.tsv}:{number}: expected NAME<tab>SECONDS<tab>STATUS "
                         f"(whole numbers), then optionally <tab>beside, got "
                         f"{line.rstrip(chr(10))!r}")
            phase = {"name": fields[0], "seconds": int(fields[1]), "exit": int(fields[2])}
            if beside:
                phase.update(name=f"{fields[0]} (beside)", beside=True)
            phases.append(phase)
    installs = [p["seconds"] for p in phases if p["name"].startswith("install")]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    report = {"kind": args.kind, "commit": commit(root),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
              "cores": os.cpu_count(), "command": args.command, "note": args.note,
              "packages_installed_before": bool(installs) and max(installs) < 5,
              "phases": phases, "total_seconds": total(phases)}
    print(table(phases))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return 0


def total(phases):
    """The phases' seconds, but those beside the others, which their time already holds."""
    return sum(p["seconds"] for p in phases if not p.get("beside"))


def table(phases):
    """The phases as the commands print them: name, seconds, a failed one's status, the total."""
    rows = [f"{'phase':<34} {'seconds':>8}"]
    rows += [f"{p['name']:<34} {p['seconds']:>8}" + (f"  (exit {p['exit']})" if p["exit"] else "")
             for p in phases]
    rows.append(f"{'total (phases beside left out)':<34} {total(phases):>8}"
                if any(p.get("beside") for p in phases) else f"{'total':<34} {total(phases):>8}")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
