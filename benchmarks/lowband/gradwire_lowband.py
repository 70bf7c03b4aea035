#!/usr/bin/env python3
"""gradwire lowband: the reference trainer on a virtual cluster of shaped links.

Builds N hosts as network namespaces joined by a bridge in a switch namespace, shapes every
host's link in both directions with `tc qdisc ... tbf`, and runs gradwire_train across them with
the build's MPI launcher (Open MPI or MPICH) for each strategy (benchmarks/strategies.json) x
rate. Writes a JSON and a Markdown report and a PNG plot (gnuplot).

    sudo benchmarks/lowband/gradwire_lowband.py --hosts 4 --rates 100,1000 \\
        --strategies dense,dgc --epochs 3 --target-accuracy 0.85 --report build/lowband/report.json

See docs/LOWBAND.md for the cluster's layout, what is measured and how to read the report; the
package beside this file (benchmarks/lowband/__init__.py) for the parts.
"""

import argparse
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lowband import report as rep  # noqa: E402
from lowband import strategies  # noqa: E402
from lowband import torch_runs  # noqa: E402
from lowband.cluster import (LATENCY, Cluster, cleanup_leftovers,  # noqa: E402
                             namespaces_unavailable)
from lowband.common import (EXIT_ERROR, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_SKIP,  # noqa: E402
                            PREFIX, ROOT, HarnessError, Interrupted, log, tail)
from lowband.launch import Launcher, load_mpi  # noqa: E402


# --exchange: the GRADWIRE_HIERARCHICAL value of each variant.
EXCHANGES = {"flat": "0", "hier": "1"}


def make_parser(names):
    p = argparse.ArgumentParser(
        description="gradwire_train over a virtual cluster of shaped links (network namespaces, "
        "a bridge and tbf), every strategy x rate; JSON + Markdown report and a PNG plot.")
    p.add_argument("--hosts", type=int, default=4, help="virtual hosts (2-16)")
    p.add_argument("--ranks-per-host", type=int, default=1, metavar="R",
                   help="ranks on each virtual host (1-8): consecutive ranks share a host, "
                   "reach each other over its loopback and the other hosts over its shaped link; "
                   "every run gets GRADWIRE_HIERARCHY_LOCAL_SIZE=R")
    p.add_argument("--exchange", default="",
                   help="comma list of flat, hier: run every strategy once per exchange, "
                   "GRADWIRE_HIERARCHICAL=0 or 1, named strategy@flat, strategy@hier (default: "
                   "once, as the strategy and GRADWIRE_HIERARCHICAL's default say)")
    p.add_argument("--rates", default="100,1000",
                   help="comma list of link rates in Mbit/s, each direction (1-100000)")
    p.add_argument("--strategies", default=",".join(names),
                   help="comma list of: " + ", ".join(names) + " (benchmarks/strategies.json)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--target-accuracy", type=float, default=0.85)
    p.add_argument("--time-budget", type=float, default=1200,
                   help="training seconds per run before it stops at its next evaluation")
    p.add_argument("--eval-every", type=int, default=0,
                   help="steps between evaluations (0: a twelfth of an epoch)")
    p.add_argument("--report", default=os.path.join(ROOT, "build", "lowband", "report.json"))
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="gradwire_train --device: where each rank trains")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"],
                   help="gradwire_train --optimizer: the inner optimizer (--momentum is SGD's)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--train-subset", type=int, default=0)
    p.add_argument("--test-subset", type=int, default=0)
    p.add_argument("--probe-bytes", type=int, default=0,
                   help="size of the allreduce that checks each rate (0: half a second's worth)")
    p.add_argument("--check-probe", type=float, default=0,
                   help="fail unless each probe is within this fraction of the prediction")
    p.add_argument("--mca", action="append", default=[], metavar="NAME=VALUE",
                   help="an OpenMPI MCA parameter for every launch, replacing the harness's "
                   "value of the same name (docs/LOWBAND.md lists them); repeatable; Open MPI "
                   "builds only")
    p.add_argument("--env", action="append", default=[], metavar="GRADWIRE_NAME=VALUE",
                   help="a gradwire setting for every run, over the strategy's own (a timeline, "
                   "a fusion threshold); repeatable; recorded in each run's env")
    p.add_argument("--congestion-control", default="cubic", metavar="NAME",
                   help="TCP congestion control between the virtual hosts, set on their routes "
                   "(default cubic, Linux's default; bbr, reno, ...; empty: the machine's)")
    p.add_argument("--probe-only", action="store_true",
                   help="shape each rate and time the probe allreduce; no training")
    p.add_argument("--no-shaping", action="store_true",
                   help="no namespaces: all ranks on loopback TCP, unshaped (labelled so)")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                   help="folder with gradwire_train and gradwire_bench_allreduce")
    p.add_argument("--cleanup", action="store_true",
                   help="remove namespaces a killed run left behind, then exit")
    p.add_argument("--rerender", metavar="REPORT",
                   help="no runs: rebuild REPORT's run entries from the trainer reports it "
                   "names, by this harness's rules, and rewrite its JSON, Markdown and plot")
    return p


def list_errors(a, names):
    """--exchange, --rates and --strategies: sets their lists on `a`; returns what is wrong."""
    errors = []
    a.exchange_list = [x for x in a.exchange.split(",") if x] if a.exchange else []
    if any(x not in EXCHANGES for x in a.exchange_list) or \
            len(set(a.exchange_list)) != len(a.exchange_list):
        errors.append(f"--exchange '{a.exchange}': accepted a comma list of "
                      f"{', '.join(EXCHANGES)}, each once")
    try:
        a.rate_list = [int(x) for x in a.rates.split(",")]
        if any(not 1 <= r <= 100000 for r in a.rate_list) or len(set(a.rate_list)) != len(a.rate_list):
            raise ValueError
    except ValueError:
        errors.append(f"--rates '{a.rates}': accepted a comma list of distinct whole Mbit/s "
                      "values from 1 to 100000, e.g. 10,100,1000")
    a.strategy_list = [s for s in a.strategies.split(",")]
    bad = [s for s in a.strategy_list if s not in names]
    if bad or not a.strategy_list or len(set(a.strategy_list)) != len(a.strategy_list):
        errors.append(f"--strategies '{a.strategies}': unknown or repeated {bad or 'entries'}; "
                      f"accepted: {', '.join(names)}")
    return errors


def number_errors(a):
    """The numeric options after the lists, each against its range."""
    errors = []
    if a.epochs < 1:
        errors.append(f"--epochs {a.epochs}: accepted 1 or more")
    if not 0 < a.target_accuracy <= 1:
        errors.append(f"--target-accuracy {a.target_accuracy}: accepted (0, 1]")
    if a.time_budget <= 0:
        errors.append(f"--time-budget {a.time_budget}: accepted a positive number of seconds")
    for name in ("eval_every", "train_subset", "test_subset", "probe_bytes"):
        if getattr(a, name) < 0:
            errors.append(f"--{name.replace('_', '-')}: accepted 0 or more")
    if a.batch_size < 1:
        errors.append(f"--batch-size {a.batch_size}: accepted 1 or more")
    if not 0 <= a.check_probe < 10:
        errors.append(f"--check-probe {a.check_probe}: accepted a fraction in [0, 10)")
    return errors


def assignment_errors(a):
    """--mca and --env: sets a.mca_overrides and a.extra_env; returns what is wrong."""
    errors = []
    a.mca_overrides = {}
    for item in a.mca:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[a-z][a-z0-9_]*", name) or not value:
            errors.append(f"--mca '{item}': accepted NAME=VALUE, NAME an MCA parameter such as "
                          "btl_tcp_flags")
        else:
            a.mca_overrides[name] = value
    a.extra_env = {}
    for item in a.env:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"GRADWIRE_[A-Z0-9_]+", name):
            errors.append(f"--env '{item}': accepted GRADWIRE_NAME=VALUE, e.g. "
                          "GRADWIRE_TIMELINE=/tmp/trace.json")
        else:
            a.extra_env[name] = value
    return errors


def parse_args(argv, names):
    p = make_parser(names)
    a = p.parse_args(argv)
    errors = []
    if not 2 <= a.hosts <= 16:
        errors.append(f"--hosts {a.hosts}: accepted 2 to 16")
    if not 1 <= a.ranks_per_host <= 8:
        errors.append(f"--ranks-per-host {a.ranks_per_host}: accepted 1 to 8")
    errors += list_errors(a, names) + number_errors(a) + assignment_errors(a)
    torch = [s for s in getattr(a, "strategy_list", []) if s.startswith("torch:")]
    if a.optimizer != "sgd" and torch:
        errors.append(f"--optimizer {a.optimizer}: the torch:* strategies ({', '.join(torch)}) "
                      "run examples/pytorch with SGD; accepted with them: sgd")
    if errors:
        p.error("; ".join(errors))
    a.report = os.path.abspath(a.report)
    train_size = a.train_subset or 60000
    a.ranks = a.hosts * a.ranks_per_host
    a.steps_per_epoch = train_size // (a.ranks * a.batch_size)
    if a.steps_per_epoch < 1:
        p.error(f"--train-subset {train_size} is smaller than one global batch "
                f"({a.ranks} x {a.batch_size})")
    if a.eval_every == 0:
        a.eval_every = max(1, a.steps_per_epoch // 12)
    return a


def probe(args, launcher, rate_mbit, rundir):
    """Times a fixed-size allreduce (bare MPI_Allreduce and gradwire's dense exchange, medians)
    against what the rate predicts for a bandwidth-optimal allreduce."""
    if args.probe_bytes:
        size = args.probe_bytes
    elif rate_mbit is None:  # unshaped: no rate to size it by; about the MLP's gradient bytes
        size = 8 * 1024 * 1024
    else:
        size = max(256 * 1024, int(rate_mbit * 1e6 / 8 * 0.5) // 4096 * 4096)
    report = os.path.join(rundir, f"probe_{rate_mbit if rate_mbit else 'loopback'}.json")
    log_path = report.replace(".json", ".log")
    rc = launcher.run([os.path.join(args.bin, "gradwire_bench_allreduce"), "--min-bytes",
                       str(size), "--max-bytes", str(size), "--seconds-per-size", "3",
                       "--report", report], launcher.topology_env(flat=True), log_path,
                      timeout=600, report=report)
    if rc != 0:
        raise HarnessError(f"the allreduce probe failed (exit {rc}); its log {log_path}:\n"
                           + tail(log_path))
    with open(report) as f:
        row = json.load(f)["rows"][0]
    return rep.probe_entry(row, size, rate_mbit, args.ranks)


def train(args, launcher, strategy, env, rate, rundir, outdir, cluster=None):
    """One strategy at one rate: its run's entry in the report, or its failed-run entry."""
    tag = f"{rate if rate else 'loopback'}_{strategy.replace('+', '_').replace('@', '_')}"
    rpath = os.path.join(rundir, f"{tag}.json")
    lpath = os.path.join(rundir, f"{tag}.log")
    program = [os.path.join(args.bin, "gradwire_train"), "--model", args.model,
               "--device", args.device,
               "--epochs", str(args.epochs), "--batch-size", str(args.batch_size),
               "--optimizer", args.optimizer, "--lr", str(args.lr),
               "--seed", str(args.seed), "--eval-every", str(args.eval_every),
               "--time-budget", str(args.time_budget), "--no-progress", "--report", rpath]
    if args.optimizer == "sgd":
        program += ["--momentum", str(args.momentum)]
    if args.train_subset:
        program += ["--train-subset", str(args.train_subset)]
    if args.test_subset:
        program += ["--test-subset", str(args.test_subset)]
    log(f"{strategy} at {rate if rate else 'loopback'}"
        f"{' Mbit/s' if rate else ''}: running (log {lpath})")
    start = time.monotonic()
    before = cluster.qdisc_stats() if cluster else None
    rc = launcher.run(program, env, lpath, timeout=args.time_budget * 2 + 600, report=rpath)
    after = cluster.qdisc_stats() if cluster else None
    return rep.collect_run(
        strategy, rate, env, rc, rpath, lpath, outdir,
        lambda r: rep.run_entry(strategy, rate, env, r,
                                os.path.relpath(rpath, os.path.dirname(args.report)),
                                os.path.relpath(lpath, outdir), args),
        lambda steps: rep.host_link_bytes(before, after, args.hosts, steps) if cluster else {},
        time.monotonic() - start)


def write_outputs(report, args, rundir):
    rep.add_comparisons(report["runs"])
    report["plot"] = rep.plot(report, os.path.splitext(args.report)[0] + ".png", rundir)
    md_path = os.path.splitext(args.report)[0] + ".md"
    report["markdown"] = md_path
    with open(args.report, "w") as f:
        json.dump(report, f, indent=2)
    text = rep.markdown(report)
    with open(md_path, "w") as f:
        f.write(text + "\n")
    print(text, flush=True)
    log(f"report {args.report}, {md_path}" + (f", plot {report['plot']}" if report["plot"] else ""))


def rerender(path):
    """--rerender: every run entry of the report at `path` made again from its trainer report."""
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise HarnessError(f"--rerender {path}: cannot read the report ({e})")
    outdir = os.path.dirname(path)
    st = report["settings"]
    args = argparse.Namespace(target_accuracy=st["target_accuracy"],
                              steps_per_epoch=st["steps_per_epoch"], report=path)
    for i, run in enumerate(report["runs"]):
        if "error" in run:
            continue
        with open(os.path.join(outdir, run["trainer_report"])) as f:
            trainer = json.load(f)
        report["runs"][i] = rep.run_entry(run["strategy"], run["rate_mbit"], run["env"], trainer,
                                          run["trainer_report"], run["log"], args)
    write_outputs(report, args,
                  os.path.join(outdir, os.path.splitext(os.path.basename(path))[0] + "_runs"))
    return 0


def cleanup():
    """--cleanup: removes the namespaces a killed run left behind."""
    if os.geteuid() != 0:
        raise HarnessError("--cleanup needs root")
    left = cleanup_leftovers()
    log(f"removed {', '.join(left)}" if left else "nothing to remove")
    return 0


def check_programs(args):
    """The programs the runs launch, and their MPI (load_mpi), which --mca must suit."""
    for prog in ("gradwire_train", "gradwire_bench_allreduce"):
        if not os.access(os.path.join(args.bin, prog), os.X_OK):
            raise HarnessError(f"{prog} not found in {args.bin} (build first: ./gradwire.sh build,"
                               " or give --bin)")
    mpi = load_mpi(args.bin)
    if args.mca_overrides and mpi["flavor"] != "openmpi":
        raise HarnessError(f"--mca sets Open MPI parameters, but the programs in {args.bin} are "
                           f"built against {mpi['flavor']} ({mpi['mpiexec']})")
    return mpi


def run_strategy(args, launcher, cluster, spec, strategy, exchange, rate, rundir, outdir):
    """One strategy (`spec`, its entry in strategies.json) under one exchange at one rate: its
    run's entry, with the exchange."""
    env = strategies.environment(spec, args.steps_per_epoch)
    env.update(launcher.topology_env())
    name = strategy
    if exchange:
        env["GRADWIRE_HIERARCHICAL"] = EXCHANGES[exchange]
        name = f"{strategy}@{exchange}"
    env.update(args.extra_env)
    run = train(args, launcher, name, env, rate, rundir, outdir, cluster)
    run["exchange"] = exchange
    return run


def run_rate(args, launcher, cluster, table, report, rate, rundir, outdir):
    """One rate (None: unshaped): the links shaped, the probe, then every strategy x exchange,
    each into `report`."""
    if cluster:
        report["links"][str(rate)] = rep.link_entry(rate, cluster.shape(rate), LATENCY)
        log(f"links shaped to {rate} Mbit/s each way")
    p = report["probes"][str(rate)] = probe(args, launcher, rate, rundir)
    if p.get("predicted_seconds"):
        log(f"probe: {p['bytes'] / 1e6:.2f} MB allreduce {p['mpi_allreduce_seconds']:.3f}"
            f" s, predicted {p['predicted_seconds']:.3f} s "
            f"({p['measured_over_predicted']:.2f}x)")
    else:
        log(f"probe (unshaped): {p['bytes'] / 1e6:.2f} MB allreduce "
            f"{p['mpi_allreduce_seconds']:.4f} s")
    for strategy in [] if args.probe_only else args.strategy_list:
        if strategy in torch_runs.STRATEGIES:  # the PyTorch example: no exchange variants
            report["runs"].append(torch_runs.train(args, cluster, strategy, rate, rundir, outdir))
            continue
        for exchange in args.exchange_list or [None]:
            report["runs"].append(run_strategy(args, launcher, cluster, table[strategy], strategy,
                                               exchange, rate, rundir, outdir))
    if cluster:
        report["links"][str(rate)]["qdisc_stats_after"] = cluster.qdisc_stats()


def exit_code(report, args):
    """EXIT_FAILED when a probe misses --check-probe or a run failed, else 0."""
    problem = rep.probe_problem(report, args.check_probe) if args.check_probe > 0 else None
    if problem:
        log(f"FAIL: {problem}")
        return EXIT_FAILED
    return EXIT_FAILED if any("error" in r for r in report["runs"]) else 0


def main(argv):
    table = strategies.load()
    args = parse_args(argv, list(table) + list(torch_runs.STRATEGIES))
    if args.rerender:
        return rerender(args.rerender)
    if args.cleanup:
        return cleanup()
    mpi = check_programs(args)
    why = any(s in torch_runs.STRATEGIES for s in args.strategy_list) and \
        torch_runs.unavailable(args.bin)
    if why:
        raise HarnessError(f"the torch:* strategies run examples/pytorch with gradwire.torch, "
                           f"which cannot be imported here ({why}): ./gradwire.sh setup --torch, "
                           f"then build")
    if not args.no_shaping:
        why = namespaces_unavailable()
        if why:
            print(f"[lowband] SKIP: network namespaces cannot be made here: {why}. "
                  "Run as root on Linux with iproute2, or use --no-shaping (unshaped loopback).",
                  flush=True)
            return EXIT_SKIP
    outdir = os.path.dirname(args.report)
    rundir = os.path.join(outdir, os.path.splitext(os.path.basename(args.report))[0] + "_runs")
    os.makedirs(rundir, exist_ok=True)
    cluster = None if args.no_shaping else Cluster(args.hosts, args.congestion_control)
    if args.no_shaping:
        log("--no-shaping: UNSHAPED loopback TCP on this machine; --rates is not used")
    launcher = None

    def on_signal(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    command = " ".join([os.path.relpath(sys.argv[0], ROOT) if sys.argv[0] else "lowband"] + argv)
    report = rep.new_report(command, args, shaped=cluster is not None)
    try:
        if cluster:
            log(f"creating {args.hosts} hosts and a switch ({PREFIX}-h0..h{args.hosts - 1}, "
                f"{PREFIX}-sw)")
            cluster.create()
        launcher = Launcher(args, cluster, rundir, mpi)
        rep.add_machine(report, cluster, mpi, launcher.settings())
        report["rates"] = args.rate_list if cluster else [None]
        for rate in report["rates"]:
            run_rate(args, launcher, cluster, table, report, rate, rundir, outdir)
    except Interrupted as e:
        log(f"interrupted ({e}): stopping the job and removing the namespaces")
        return EXIT_INTERRUPTED
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        if launcher:
            launcher.kill()
        if cluster:
            cluster.destroy()
            log("namespaces removed")
    write_outputs(report, args, rundir)
    return exit_code(report, args)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except HarnessError as e:
        print(f"gradwire_lowband: error: {e}", file=sys.stderr)
        sys.exit(EXIT_ERROR)
