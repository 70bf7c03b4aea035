#!/usr/bin/env python3
"""Produce the reports that docs/RESULTS.md is generated from (./gradwire.sh results --run).

  accuracy  the trainer's --report JSON for every strategy of benchmarks/strategies.json, run as
            the accuracy tests run it (tests/integration/CMakeLists.txt): accuracy_run.ranks
            ranks through the build's launcher (bin/gw_mpiexec, Note "MPI launcher"),
            accuracy_run.args, --seed, the strategy's env with its placeholders filled in, and the
            test suite's environment (GRADWIRE_TEST_ENV: OPENBLAS_NUM_THREADS=1, and for Open MPI
            OMPI_MCA_btl_vader_single_copy_mechanism=none). A strategy with an accuracy block runs
            once per seed of that block; one without runs the baseline's first seed only.
            -> results/reports/accuracy_mlp_<name>_seed<seed>.json
  bench     the four benchmarks as ./gradwire.sh bench runs them -> results/reports/bench/<name>.json

Every report written is entered in results/reports/manifest.json with the command, its environment,
the commit the binaries were built from (and whether the tree had changes), the date and the
machine. Runs go one at a time. Python 3 standard library only.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

import strategies_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRATEGIES = os.path.join(ROOT, "benchmarks", "strategies.json")
REPORTS = os.path.join(ROOT, "results", "reports")
MANIFEST = os.path.join(REPORTS, "manifest.json")

# What ./gradwire.sh bench runs, in its order: (name, ranks or None for a single process, args).
BENCHES = [
    ("allreduce", 4, []),
    ("compress", None, []),
    ("fusion", 4, []),
    ("overlap", 4, []),
]


def git(*args):
    return subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True, text=True,
                          check=True).stdout.strip()


def tree_state():
    """The commit checked out, and whether the code (all but the docs and the run data)
    differs from it."""
    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs", ":!results",
                ":!tools", ":!README.md")
    return {"commit": commit, "code_changed_since_commit": bool(dirty)}


def stamp_path(build):
    return os.path.join(build, "gw_results_build.json")


def write_stamp(build):
    """Called right after a build (./gradwire.sh results --run): the binaries' commit."""
    with open(stamp_path(build), "w") as f:
        json.dump(tree_state(), f)
        f.write("\n")


def provenance(build):
    """The commit the binaries were built from, as the stamp written after the build records it;
    without a stamp, the commit checked out now."""
    if os.path.exists(stamp_path(build)):
        with open(stamp_path(build)) as f:
            return dict(json.load(f), commit_is="checked out when the binaries were built")
    return dict(tree_state(), commit_is="checked out when the report was made (no build stamp)")


def machine(build):
    # The load average as the run ends: on a shared machine, how much else was running.
    info = {"cores": os.cpu_count(), "system": platform.platform(),
            "load_average_1_5_15_min": [round(x, 2) for x in os.getloadavg()]}
    mpi_json = os.path.join(build, "bin", "gw_mpi.json")
    if os.path.exists(mpi_json):
        with open(mpi_json) as f:
            mpi = json.load(f)
        info["mpi"] = {"flavor": mpi.get("flavor"), "launcher_flags": mpi.get("flags")}
        try:
            version = subprocess.run([mpi["mpiexec"], "--version"], capture_output=True,
                                     text=True, timeout=30).stdout.strip().splitlines()
            info["mpi"]["version"] = version[0] if version else None
        except (OSError, KeyError, subprocess.SubprocessError):
            pass
    return info


def test_env(build):
    """The environment the test suite gives every test (cmake/GradwireTesting.cmake)."""
    env = {"OPENBLAS_NUM_THREADS": "1"}
    mpi_json = os.path.join(build, "bin", "gw_mpi.json")
    flavor = None
    if os.path.exists(mpi_json):
        with open(mpi_json) as f:
            flavor = json.load(f).get("flavor")
    if flavor in (None, "openmpi"):
        env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
    return env


def load_manifest():
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            return json.load(f)
    return {"schema": "gradwire-reports-manifest/1",
            "about": "how each report under results/reports was made (tools/run_reports.py)",
            "reports": {}}


def save_manifest(manifest):
    manifest["reports"] = dict(sorted(manifest["reports"].items()))
    tmp = MANIFEST + ".tmp"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(tmp, MANIFEST)


def run_one(key, command, env_add, build, out_path):
    rel_cmd = [os.path.relpath(c, ROOT) if os.path.isabs(c) and c.startswith(ROOT) else c
               for c in command]
    print(f"[results] {key}: {' '.join(f'{k}={v}' for k, v in env_add.items())} "
          f"{' '.join(rel_cmd)}", flush=True)
    env = dict(os.environ)
    env.update(env_add)
    tmp = out_path + ".partial"
    cmd = [c if c != out_path else tmp for c in command]
    started = time.time()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    proc = subprocess.run(cmd, env=env, cwd=ROOT)
    if proc.returncode != 0 or not os.path.exists(tmp):
        if os.path.exists(tmp):
            os.remove(tmp)
        sys.exit(f"[results] {key}: exit {proc.returncode}; no report written")
    os.replace(tmp, out_path)
    entry = {"command": rel_cmd, "env": env_add, "date": date,
             "seconds": round(time.time() - started, 1), "machine": machine(build)}
    entry.update(provenance(build))
    manifest = load_manifest()  # as it is now: entries may have been added since the start
    manifest["reports"][os.path.relpath(out_path, REPORTS)] = entry
    save_manifest(manifest)


def accuracy_runs(spec, build):
    run = spec["accuracy_run"]
    baseline = next(s for s in spec["strategies"] if s["name"] == spec["baseline"])
    default_seeds = baseline["accuracy"]["seeds"][:1]
    for s in spec["strategies"]:
        seeds = s["accuracy"]["seeds"] if "accuracy" in s else default_seeds
        env = strategies_file.environment(s["env"], run["steps_per_epoch"])
        for seed in seeds:
            name = f"accuracy_mlp_{s['name']}_seed{seed}.json"
            yield name, env, run["ranks"], run["args"] + ["--seed", str(seed)], "accuracy" in s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("what", nargs="*", default=["accuracy", "bench"],
                    help="accuracy, bench, or report file names (accuracy_mlp_dgc_seed42.json, "
                         "bench/fusion.json); default: all")
    ap.add_argument("--missing", action="store_true", help="only the reports not there yet")
    ap.add_argument("--list", action="store_true", help="print what would run, run nothing")
    ap.add_argument("--stamp", action="store_true",
                    help="record the checked-out commit as the build's; run nothing")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if args.stamp:
        write_stamp(build)
        return
    launcher = os.path.join(build, "bin", "gw_mpiexec")
    try:
        spec = strategies_file.load(STRATEGIES)
    except strategies_file.StrategiesError as e:
        sys.exit(f"[results] {e}")

    # Order: the strategies with accuracy expectations, the benchmarks, then the other strategies.
    checked, others, benches = [], [], []
    for name, env, ranks, targs, has_block in accuracy_runs(spec, build):
        out = os.path.join(REPORTS, name)
        cmd = [launcher, "-n", str(ranks), os.path.join(build, "bin", "gradwire_train")] + targs + [
            "--report", out]
        (checked if has_block else others).append(("accuracy", name, cmd, env, out))
    for bench, ranks, bargs in BENCHES:
        out = os.path.join(REPORTS, "bench", bench + ".json")
        exe = os.path.join(build, "bin", "gradwire_bench_" + bench)
        cmd = ([launcher, "-n", str(ranks)] if ranks else []) + [exe] + bargs + ["--report", out]
        benches.append(("bench", "bench/" + bench + ".json", cmd, {}, out))
    jobs = checked + benches + others

    chosen = [j for j in jobs if j[0] in args.what or j[1] in args.what]
    unknown = set(args.what) - {"accuracy", "bench"} - {j[1] for j in jobs}
    if unknown:
        sys.exit(f"[results] not a report this runner makes: {', '.join(sorted(unknown))}")
    if args.missing:
        chosen = [j for j in chosen if not os.path.exists(j[4])]
    if args.list:
        for j in chosen:
            print(j[1])
        return
    for exe in {launcher, os.path.join(build, "bin", "gradwire_train")}:
        if not os.path.exists(exe):
            sys.exit(f"[results] {exe} is missing: build first (./gradwire.sh build)")
    os.makedirs(os.path.join(REPORTS, "bench"), exist_ok=True)
    base_env = test_env(build)
    for kind, key, cmd, env, out in chosen:
        run_one(key, cmd, dict(base_env, **env) if kind == "accuracy" else
                {"OPENBLAS_NUM_THREADS": "1"}, build, out)
    print(f"[results] {len(chosen)} report(s) written; render with ./gradwire.sh results")


if __name__ == "__main__":
    main()
