"""PyTorch DDP on the lowband cluster: the example examples/pytorch/train_fashion_mnist.py, one
process per virtual host (RANK = host), started with `ip netns exec` on that host's shaped link
(or on loopback under --no-shaping), Gloo over eth0, with gradwire's hook (torch:dgc, ...) or
DDP's own allreduce and built-in hooks (torch:ddp, torch:ddp-powersgd-r1, ...), so that both
sit in one report beside gradwire_train's runs (docs/LOWBAND.md). The same torch compute on
every side: only the exchange differs."""

import os
import signal
import subprocess
import sys
import time

from . import report as rep
from .cluster import Cluster
from .common import ROOT, log

EXAMPLE = os.path.join(ROOT, "examples", "pytorch", "train_fashion_mnist.py")
PORT = "29517"

# Name -> the example's arguments. gradwire's hooks take every GRADWIRE_* of --env; the built-in
# ones' settings are fixed here: PowerSGD from step 2 (rank 1 and 4), post-local SGD averaging the
# parameters every 4 steps from step 2.
STRATEGIES = {
    "torch:ddp": ["--compressor", "ddp"],
    "torch:ddp-fp16": ["--compressor", "ddp-fp16"],
    "torch:ddp-powersgd-r1": ["--compressor", "ddp-powersgd", "--powersgd-rank", "1",
                              "--powersgd-start", "2"],
    "torch:ddp-powersgd-r4": ["--compressor", "ddp-powersgd", "--powersgd-rank", "4",
                              "--powersgd-start", "2"],
    "torch:ddp-post-local-sgd": ["--compressor", "ddp-post-local-sgd", "--local-sgd-period", "4",
                                 "--local-sgd-start", "2"],
}
for _name in ("none", "fp16", "topk", "dgc", "powersgd"):
    STRATEGIES["torch:" + _name] = ["--compressor", _name]


def unavailable(bin_dir):
    """Why the example cannot run here (no torch, or gradwire.torch not built), or None."""
    env = dict(os.environ, PYTHONPATH=python_path(bin_dir))
    p = subprocess.run([sys.executable, "-c", "import gradwire.torch"], env=env,
                       capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr.strip().splitlines() or ["?"])[-1]


def python_path(bin_dir):
    """The build's staged package (<build>/python), beside --bin (<build>/bin)."""
    return os.path.join(os.path.dirname(os.path.abspath(bin_dir)), "python")


def command(args, strategy, rank, report):
    cmd = [sys.executable, EXAMPLE] + STRATEGIES[strategy] + [
        "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--lr", str(args.lr),
        "--momentum", str(args.momentum), "--seed", str(args.seed),
        "--eval-every", str(args.eval_every), "--time-budget", str(args.time_budget)]
    if args.train_subset:
        cmd += ["--train-subset", str(args.train_subset)]
    if args.test_subset:
        cmd += ["--test-subset", str(args.test_subset)]
    return cmd + (["--report", report] if rank == 0 else [])


def launch(args, cluster, strategy, env, report, logf):
    """One process per host; their Popen objects."""
    procs = []
    for rank in range(args.hosts):
        e = dict(os.environ, **env)
        e.update(RANK=str(rank), LOCAL_RANK="0", WORLD_SIZE=str(args.hosts), MASTER_PORT=PORT,
                 MASTER_ADDR=Cluster.address(0) if cluster else "127.0.0.1",
                 PYTHONPATH=python_path(args.bin), OMP_NUM_THREADS="1")
        cmd = command(args, strategy, rank, report)
        if cluster:
            e["GLOO_SOCKET_IFNAME"] = "eth0"
            cmd = ["ip", "netns", "exec", Cluster.host_ns(rank)] + cmd
        procs.append(subprocess.Popen(cmd, env=e, stdout=logf, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    return procs


def wait_all(procs, timeout):
    """Every process's exit code, or None for all once the first fails or time runs out (the
    rest are ended then)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        codes = [p.poll() for p in procs]
        if all(c == 0 for c in codes):
            return 0
        failed = [c for c in codes if c not in (None, 0)]
        if failed:
            end(procs)
            return failed[0]
        time.sleep(0.5)
    end(procs)
    return None


def end(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()


def train(args, cluster, strategy, rate, rundir, outdir):
    """The example under `strategy` at one rate: its run's entry in the report, or its failed-run
    entry."""
    tag = f"{rate if rate else 'loopback'}_{strategy.replace(':', '_')}"
    rpath, lpath = os.path.join(rundir, f"{tag}.json"), os.path.join(rundir, f"{tag}.log")
    if os.path.exists(rpath):
        os.remove(rpath)
    env = dict(args.extra_env) if strategy.split(":")[1] in ("none", "fp16", "topk", "dgc",
                                                             "powersgd") else {}
    log(f"{strategy} at {rate if rate else 'loopback'}{' Mbit/s' if rate else ''}: running "
        f"(log {lpath})")
    start = time.monotonic()
    before = cluster.qdisc_stats() if cluster else None
    with open(lpath, "w") as logf:
        logf.write(" ".join(command(args, strategy, 0, rpath)) + "\n")
        logf.flush()
        rc = wait_all(launch(args, cluster, strategy, env, rpath, logf),
                      args.time_budget * 2 + 600)
    after = cluster.qdisc_stats() if cluster else None

    def make_entry(r):
        run = entry(strategy, rate, env, r, args)
        run["trainer_report"] = os.path.relpath(rpath, os.path.dirname(args.report))
        run["log"] = os.path.relpath(lpath, outdir)
        return run
    return rep.collect_run(
        strategy, rate, env, rc, rpath, lpath, outdir, make_entry,
        lambda steps: rep.host_link_bytes(before, after, args.hosts, steps) if cluster else {},
        time.monotonic() - start)


def entry(strategy, rate, env, r, args):
    """The report's entry for one run of the example (its report r), in gradwire_train's keys."""
    t, step = rep.time_to_target(r["history"], args.target_accuracy)
    grad, param = r["gradient_bytes_per_step"], r["parameter_bytes_per_step"]
    return {
        "strategy": strategy, "framework": "torch", "rate_mbit": rate, "env": env,
        "final_test_accuracy": r["final_test_accuracy"], "time_to_target_seconds": t,
        "step_at_target": step, "epochs_done": r["steps"] / max(1, args.steps_per_epoch),
        "steps": r["steps"], "stopped_by_time_budget": r["stopped_by_time_budget"],
        "train_seconds": r["train_seconds"], "wall_seconds": r["wall_seconds"],
        "samples_per_second": r["samples_per_second"], "gradient_bytes_per_step": grad,
        "gradient_bytes_per_step_after_warmup": r.get("gradient_bytes_per_step_after_warmup",
                                                      grad), "parameter_bytes_per_step": param, "exchange_bytes_per_step": grad + param,
        "gradient_bytes_per_rank": r["gradient_bytes_sent"],
        "parameter_bytes_per_rank": r["parameter_bytes_sent"], "gradient_bytes_is":
        r["gradient_bytes_is"], "amp_skipped_steps": 0, "inter_node_bytes_per_step": None,
        "topology": None, "auto": None,
        "history": [{"step": h["step"], "train_seconds": h["train_seconds"],
                     "test_accuracy": h["test_accuracy"],
                     "exchange_bytes": h["gradient_bytes_sent"] + h["parameter_bytes_sent"]}
                    for h in r["history"]],
    }
