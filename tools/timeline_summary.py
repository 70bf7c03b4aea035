#!/usr/bin/env python3
"""Where one rank's steps go, from its GRADWIRE_TIMELINE file (Note [Timeline format]).

  tools/timeline_summary.py trace.rank0.json

Prints the median over the steps that exchanged gradients (the first and last step left out:
start-up and the run's end) of:
the step's period (start to the next step's start), compute before the first gradient was ready,
the rest of backward (first to last gradient ready), each bucket's exchange, the time between
the first exchange's start and the last one's end, and what followed it until the step ended.
Seconds. Python 3 standard library only.
"""
import json
import statistics
import sys


def summary(path):
    events = [e for e in json.load(open(path)) if e.get("ph") == "X"]
    steps = {}
    for e in events:
        steps.setdefault(e["args"]["step"], []).append(e)
    order = sorted(steps)
    rows = []
    for i in range(1, len(order) - 1):
        ev = steps[order[i]]
        if not any(e["name"] == "exchange" for e in ev):
            continue  # a local SGD step: no gradient exchange
        step = next(e for e in ev if e["name"].startswith("step "))
        following = next(e for e in steps[order[i + 1]] if e["name"].startswith("step "))
        ready = [e["ts"] + e["dur"] for e in ev if e["name"] == "wait for gradients"]
        first_ready = min(e["ts"] for e in ev if e["name"] == "wait for gradients")
        exchanges = sorted((e for e in ev if e["name"] == "exchange"), key=lambda e: e["tid"])
        ex_begin = min(e["ts"] for e in exchanges)
        ex_end = max(e["ts"] + e["dur"] for e in exchanges)
        row = {"period": following["ts"] - step["ts"],
               "before first gradient": first_ready - step["ts"],
               "rest of backward": max(ready) - first_ready,
               "exchanges, first start to last end": ex_end - ex_begin,
               "after the exchanges": step["ts"] + step["dur"] - ex_end}
        for e in exchanges:
            row[f"bucket {e['tid'] - 1} exchange"] = e["dur"]
        rows.append(row)
    if not rows:
        raise SystemExit(f"{path}: no step with a gradient exchange between the first and the last")
    print(f"{path}: median of {len(rows)} steps, seconds")
    for key in rows[0]:
        print(f"  {key:36s} {statistics.median(r[key] for r in rows) / 1e6:.4f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    summary(sys.argv[1])
