"""The generated files: RESULTS.md whole, the marked tables of README.md and docs/STRATEGIES.md,
and the accuracy costs GRADWIRE_COMPRESSOR=auto reads; and the check of links into RESULTS.md."""
import json
import os
import re

import strategies_file

from . import inputs
from .accuracy import Accuracy
from .benches import render_benches
from .gpu import render_gpu
from .inputs import (AUTO_ACCURACY, FROM_REPORTS, GENERATED, LOWBAND, LOWBAND_RUNS, README,
                     REPORTS, RESULTS, STRATEGIES, STRATEGIES_DOC, TIMINGS, InputError, load)
from .lowband import render_lowband
from .timings import readme_lines, render_timings


def render_results(acc_, manifest):
    out = ["# Results", "", GENERATED.format(FROM_REPORTS), "",
           f"Every figure here is read from a committed report: `{REPORTS}/` (made by "
           "`./gradwire.sh results --run`, which records each one's command, commit and date in "
           f"`{REPORTS}/manifest.json`), `{LOWBAND}` and "
           f"`{LOWBAND_RUNS}/`. `./gradwire.sh results` "
           "renders this file; the `results_current` test fails when it is out of date.", "",
           "- [Accuracy against traffic](#accuracy-against-traffic)",
           "- [Benchmarks](#benchmarks): [allreduce](#allreduce), [compression](#compression), "
           "[fusion](#fusion), [overlap](#overlap)",
           "- [Low-bandwidth runs](#low-bandwidth-runs)", "- [GPU](#gpu)",
           "- [Time to a first result, and CI](#time-to-a-first-result-and-ci)", ""]
    out += acc_.render(manifest) + [""]
    out += render_benches(manifest) + [""]
    out += render_lowband(manifest) + [""]
    out += render_gpu() + [""]
    out += render_timings()
    return "\n".join(out) + "\n"


def splice(text, name, lines, rel, source):
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise InputError(f"{rel} needs exactly one {begin} ... {end} pair")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    body = [GENERATED.format(source)] + lines
    return head + begin + "\n" + "\n".join(body) + "\n" + end + tail


def slug(heading):
    """The anchor GitHub gives a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def broken_links(results_text):
    """Links into RESULTS.md from README.md and docs/*.md whose #anchor is no heading of it."""
    anchors = {slug(line.lstrip("#")) for line in results_text.splitlines()
               if line.startswith("#")}
    bad = []
    paths = [README] + sorted(f"docs/{n}" for n in os.listdir(os.path.join(inputs.ROOT, "docs"))
                              if n.endswith(".md"))
    for rel in paths:
        with open(os.path.join(inputs.ROOT, rel)) as f:
            for n, line in enumerate(f, 1):
                for anchor in re.findall(r"RESULTS\.md#([\w-]+)", line):
                    if anchor not in anchors:
                        bad.append(f"{rel}:{n}: RESULTS.md#{anchor} is no heading of RESULTS.md")
    return bad


def outputs():
    spec = strategies_file.load(os.path.join(inputs.ROOT, STRATEGIES))
    manifest = load(f"{REPORTS}/manifest.json")
    a = Accuracy(spec)
    files = {RESULTS: render_results(a, manifest)}
    with open(os.path.join(inputs.ROOT, README)) as f:
        text = splice(f.read(), "strategies-table", a.readme_table(), README, FROM_REPORTS)
        files[README] = splice(text, "quickstart-times", readme_lines(), README, TIMINGS)
    with open(os.path.join(inputs.ROOT, STRATEGIES_DOC)) as f:
        files[STRATEGIES_DOC] = splice(f.read(), "strategy-settings", a.settings_block(),
                                       STRATEGIES_DOC, STRATEGIES)
    files[AUTO_ACCURACY] = auto_accuracy(a)
    return files


def auto_candidate(s):
    """(candidate, parameter) of a strategy that is one of GRADWIRE_COMPRESSOR=auto's
    candidates at its defaults: it sets only GRADWIRE_COMPRESSOR (and powersgd's rank, the
    parameter), or only local SGD and its period (the parameter); else None."""
    keys = set(s.env)
    if keys - {"GRADWIRE_POWERSGD_RANK"} == {"GRADWIRE_COMPRESSOR"}:
        candidate = s.env["GRADWIRE_COMPRESSOR"]
        if candidate == "auto":
            return None  # it chooses among the others
        return candidate, (int(s.env.get("GRADWIRE_POWERSGD_RANK", "1"))
                           if candidate == "powersgd" else 0)
    if keys == {"GRADWIRE_SYNC", "GRADWIRE_LOCAL_SGD_K"} and \
            s.env["GRADWIRE_SYNC"] == "local_sgd":
        return "local_sgd", int(s.env["GRADWIRE_LOCAL_SGD_K"])
    return None


def auto_accuracy(a):
    """results/auto_accuracy.json: the accuracy cost of each candidate at its defaults, for
    GRADWIRE_COMPRESSOR=auto (Note [The auto cost model]): every strategy auto_candidate names
    that has reports, its mean final accuracy against the baseline's over its seeds, in points
    rounded to two decimals. Data the library may read, not code compiled into it."""
    run = a.spec["accuracy_run"]
    args = dict(zip(run["args"], run["args"][1:]))
    about = (f"generated by tools/results.py (./gradwire.sh results) from {STRATEGIES} and the "
             f"committed accuracy reports; the mean final test accuracy {a.base.name}'s runs "
             "reached minus the strategy's, in points, over the same seeds "
             f"({run['ranks']} ranks, the {args.get('--model', '?').upper()}, "
             f"{args.get('--epochs', '?')} epochs); parameter: powersgd's rank, local_sgd's "
             "period, else 0")
    entries = []
    for s in a.strategies:
        found = None if s.reports is None or s is a.base else auto_candidate(s)
        if found:
            entries.append({"candidate": found[0], "parameter": found[1],
                            "drop_points": float(f"{100 * a.drop(s):.2f}"),
                            "seeds": len(s.reports), "strategy": s.name})
    # One entry a line, so that a change of one figure is a one-line diff.
    lines = ["{", f'  "about": {json.dumps(about)},', '  "entries": [']
    lines += [f"    {json.dumps(e)}," for e in entries]
    if entries:
        lines[-1] = lines[-1].rstrip(",")
    return "\n".join(lines + ["  ]", "}"]) + "\n"
