"""How long a new user's commands take: the demo's phases and CI's stages, from the timing
reports in results/timings/ (tools/phase_times.py writes them; ./gradwire.sh demo and .ci/run
with STAGE_REPORT make them)."""

from . import inputs
from .fmt import table
from .inputs import TIMINGS


# A report's phases: name, seconds, exit (the phase's status); "stopped": true marks a phase cut off
# before it ended (the run was stopped from outside), its seconds those until then.


def timing_reports():
    """Every timing report, oldest first: (path, report). The files are named
    <date>T<hh-mm>_<kind>_<commit>.json by the time their run started, so by name is by time."""
    return inputs.json_files(TIMINGS)


def minutes(seconds):
    return f"{seconds / 60:.1f} min"


def seconds_of(report, prefix):
    """The seconds of the phases whose names start with prefix."""
    return sum(p["seconds"] for p in report["phases"] if p["name"].startswith(prefix))


def run_label(r):
    return f"{r['date']}, `{r['commit'][:7]}`"


def render_kind(kind, reports):
    """One table: a row per phase, a column per run of this kind."""
    runs = [(rel, r) for rel, r in reports if r["kind"] == kind]
    if not runs:
        return [f"No {kind} timing yet."]
    # A row per phase name and occurrence: a command that runs a phase twice (CI's `install
    # torch`: once in the setup of every package, once before its suite) has two rows.
    names = []
    for _, r in runs:
        seen = {}
        for p in r["phases"]:
            seen[p["name"]] = seen.get(p["name"], 0) + 1
            if (p["name"], seen[p["name"]]) not in names:
                names.append((p["name"], seen[p["name"]]))
    rows = []
    for name, k in names + [("total", 1)]:
        label = f"`{name}`" + ("" if k == 1 else f" ({k}.)")
        row = [name if name == "total" else label]
        for _, r in runs:
            found = [p for p in r["phases"] if p["name"] == name][k - 1:k]
            secs = r["total_seconds"] if name == "total" else (found[0]["seconds"] if found
                                                                   else None)
            stopped = any(p.get("stopped") for p in r["phases"])
            if secs is None:
                row.append("-")
            elif name == "total":
                row.append(f"at least {secs} s" if stopped else f"{secs} s")
            elif found[0].get("stopped"):
                row.append(f"{secs} s (stopped)")
            else:
                row.append(f"{secs} s" + ("" if found[0]["exit"] == 0 else " (failed)"))
        rows.append(row)
    out = table(["phase (seconds)"] + [run_label(r) for rel, r in runs], rows)
    notes = [f"- {run_label(r)}: `{rel}`, {r['cores']} cores, "
             f"{'packages installed beforehand' if r['packages_installed_before'] else 'packages installed by the command'}; "
             f"`{r['command']}`" + (f"; {r['note']}" if r.get("note") else "") for rel, r in runs]
    return out + [""] + notes


def render_timings():
    reports = timing_reports()
    out = ["## Time to a first result, and CI", "",
           "Wall time of each phase of `./gradwire.sh demo` and of each stage of `.ci/run`, from "
           f"a clean clone, one column per timed run (`{TIMINGS}/`, made by "
           "`tools/phase_times.py` from the commands' own phase records).", "",
           "### `./gradwire.sh demo`", ""]
    out += render_kind("demo", reports) + ["", "### `.ci/run`", ""]
    out += render_kind("ci", reports)
    return out


def readme_lines():
    """The quick start's sentence on how long each command takes."""
    reports = timing_reports()
    demo = [r for _, r in reports if r["kind"] == "demo"]
    ci = [r for _, r in reports if r["kind"] == "ci"]
    if not demo or not ci:
        return ["How long each command takes: not measured yet."]
    d, c = demo[-1], ci[-1]
    build_run = d["total_seconds"] - seconds_of(d, "install")
    test = seconds_of(c, "install") + seconds_of(c, "build openmpi") + seconds_of(c, "test openmpi")
    at_least = "at least " if any(p.get("stopped") for p in c["phases"]) else ""
    beside = (" (in CI's run, beside its sanitizer builds)"
              if any(p.get("beside") for p in c["phases"]) else "")
    return [f"On a {d['cores']}-core machine from a clean clone, `demo` took "
            f"{minutes(d['total_seconds'])} ({minutes(build_run)} to build and train, "
            f"{'its packages already installed' if d['packages_installed_before'] else 'the rest installing packages'}; "
            f"commit `{d['commit'][:7]}`), `test` {minutes(test)}{beside}, and CI (`.ci/run`: `test`, "
            f"then MPICH and the sanitizers) {at_least}{minutes(c['total_seconds'])} (commit "
            f"`{c['commit'][:7]}`; every phase in "
            "[RESULTS.md](docs/RESULTS.md#time-to-a-first-result-and-ci))."]
