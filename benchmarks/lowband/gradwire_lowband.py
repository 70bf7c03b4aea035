#!/usr/bin/env python3
"""gradwire lowband: the reference trainer on a virtual cluster of shaped links.

Builds N hosts as network namespaces joined by a bridge in a switch namespace, shapes every
host's link in both directions with `tc qdisc ... tbf`, and runs gradwire_train across them with
the build's MPI launcher (Open MPI or MPICH) for each strategy x rate. Writes a JSON and a Markdown report and a PNG plot (gnuplot).

    sudo benchmarks/lowband/gradwire_lowband.py --hosts 4 --rates 100,1000 \\
        --strategies dense,dgc --epochs 3 --target-accuracy 0.85 --report build/lowband/report.json

See docs/LOWBAND.md for the cluster's layout, what is measured and how to read the report.
"""

import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PREFIX = os.environ.get("GWLB_PREFIX", "gwlb")
SUBNET = "10.231.0"
EXIT_SKIP = 77  # CTest's SKIP_RETURN_CODE: namespaces cannot be made here
EXIT_INTERRUPTED = 130

# TCP payload per Ethernet frame with a 1500-byte MTU and TCP timestamps: tbf counts whole frames.
FRAME_BYTES, PAYLOAD_BYTES = 1514, 1448

DGC_WARMUP = "0.75,0.9375,0.984375,0.996,0.999"


def strategy_table(steps_per_epoch):
    """Strategy name -> GRADWIRE_* environment (the settings of the accuracy tests)."""
    dgc = {"GRADWIRE_COMPRESSOR": "dgc", "GRADWIRE_DGC_SPARSITY": DGC_WARMUP,
           "GRADWIRE_DGC_RAMPUP_STEPS": "100"}
    return {
        "dense": {},
        "fp16": {"GRADWIRE_COMPRESSOR": "fp16"},
        "topk": {"GRADWIRE_COMPRESSOR": "topk", "GRADWIRE_DGC_SPARSITY": DGC_WARMUP,
                 "GRADWIRE_DGC_RAMPUP_STEPS": "100"},
        "dgc": dgc,
        "local_sgd_k4": {"GRADWIRE_SYNC": "local_sgd", "GRADWIRE_LOCAL_SGD_K": "4"},
        "local_sgd_k16": {"GRADWIRE_SYNC": "local_sgd", "GRADWIRE_LOCAL_SGD_K": "16"},
        "post_local_sgd": {"GRADWIRE_SYNC": "post_local_sgd", "GRADWIRE_LOCAL_SGD_K": "8",
                           "GRADWIRE_LOCAL_SGD_BEGIN_STEP": str(max(1, steps_per_epoch))},
        "adaptive_local_sgd": {"GRADWIRE_SYNC": "adaptive_local_sgd",
                               "GRADWIRE_ADAPTIVE_INIT_K": "16"},
        "amp": {"GRADWIRE_AMP": "1"},
        "dgc+amp": dict(dgc, GRADWIRE_AMP="1"),
    }


STRATEGIES = list(strategy_table(1).keys())


class HarnessError(Exception):
    """A problem the user must fix; printed without a traceback."""


class Interrupted(Exception):
    pass


def log(msg):
    print(f"[lowband] {msg}", flush=True)


def sh(cmd, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise HarnessError(f"'{' '.join(cmd)}' failed ({p.returncode}): {p.stderr.strip()}")
    return p


# ---------------------------------------------------------------------------------------------
# The virtual cluster


def existing_namespaces():
    p = sh(["ip", "netns", "list"], check=False)
    if p.returncode != 0:
        return []
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(PREFIX + "-")]


def remove_namespace(name):
    """Kills whatever still runs inside namespace `name`, then deletes it (its veths go with it)."""
    for pid in sh(["ip", "netns", "pids", name], check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    sh(["ip", "netns", "del", name], check=False)


def namespaces_unavailable():
    """Why namespaces cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "not root (network namespaces and tc need root)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' not found (Debian package iproute2)"
    probe = f"{PREFIX}-probe{os.getpid()}"
    p = sh(["ip", "netns", "add", probe], check=False)
    if p.returncode != 0:
        return f"'ip netns add' failed: {p.stderr.strip()}"
    try:
        q = sh(["ip", "-n", probe, "link", "add", "gwlbp0", "type", "veth", "peer", "name",
                "gwlbp1"], check=False)
        if q.returncode != 0:
            return f"veth pairs cannot be made: {q.stderr.strip()}"
        q = sh(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "gwlbp0", "root",
                "tbf", "rate", "100mbit", "burst", "64kb", "latency", "50ms"], check=False)
        if q.returncode != 0:
            return f"the tbf qdisc is not available: {q.stderr.strip()}"
    finally:
        sh(["ip", "netns", "del", probe], check=False)
    return None


class Cluster:
    """N hosts <prefix>-h0.. and a switch <prefix>-sw with bridge br0; host i is 10.231.0.(i+1)
    on its eth0, whose peer p<i> sits on the bridge. Only these namespaces' links are shaped."""

    def __init__(self, hosts):
        self.hosts = hosts
        self.created = []

    @staticmethod
    def host_ns(i):
        return f"{PREFIX}-h{i}"

    @staticmethod
    def address(i):
        return f"{SUBNET}.{i + 1}"

    def create(self):
        left = existing_namespaces()
        if left:
            raise HarnessError(
                f"namespaces left by another lowband run exist: {', '.join(left)}. If no other "
                f"run is going on, remove them with: {sys.argv[0]} --cleanup")
        sw = f"{PREFIX}-sw"
        self._add_ns(sw)
        sh(["ip", "-n", sw, "link", "set", "lo", "up"])
        sh(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
        sh(["ip", "-n", sw, "link", "set", "br0", "up"])
        for i in range(self.hosts):
            ns = self.host_ns(i)
            self._add_ns(ns)
            sh(["ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"p{i}",
                "netns", sw])
            sh(["ip", "-n", sw, "link", "set", f"p{i}", "master", "br0"])
            sh(["ip", "-n", sw, "link", "set", f"p{i}", "up"])
            sh(["ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0"])
            sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
            sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        self.wait_reachable()

    def wait_reachable(self, seconds=20):
        """Waits until every host reaches host 0 (a refused connection to a closed port proves the
        path), so that mpirun's daemons can call back as soon as they start."""
        check = ("import socket,sys\ns=socket.socket(); s.settimeout(1)\ntry:\n"
                 f"  s.connect(('{self.address(0)}', 9))\nexcept ConnectionRefusedError:\n"
                 "  sys.exit(0)\nexcept OSError:\n  sys.exit(1)\n")
        deadline = time.monotonic() + seconds
        for i in range(1, self.hosts):
            while sh(["ip", "netns", "exec", self.host_ns(i), sys.executable, "-c", check],
                     check=False).returncode != 0:
                if time.monotonic() > deadline:
                    raise HarnessError(f"host {self.address(i)} cannot reach {self.address(0)} "
                                       f"over the bridge after {seconds} s")
                time.sleep(0.2)

    def _add_ns(self, name):
        sh(["ip", "netns", "add", name])
        self.created.append(name)

    def links(self):
        """(namespace, device) of every shaped queue: each host's egress, and the switch's egress
        towards each host, so both directions of every link are limited."""
        out = []
        for i in range(self.hosts):
            out.append((self.host_ns(i), "eth0"))
            out.append((f"{PREFIX}-sw", f"p{i}"))
        return out

    def shape(self, rate_mbit):
        rate_bytes = rate_mbit * 1e6 / 8
        # The bucket holds at least 64 KiB (a GSO segment) or 4 ms at the rate; the queue holds
        # 50 ms at the rate beyond it.
        burst = max(64 * 1024, int(rate_bytes * 0.004))
        for ns, dev in self.links():
            assert ns.startswith(PREFIX + "-")
            sh(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
                "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", "50ms"])
        return {"qdisc": "tbf", "rate": f"{rate_mbit}mbit", "burst_bytes": burst,
                "latency": "50ms", "where": "each host's eth0 egress and the switch port's egress "
                "towards it"}

    def qdisc_stats(self):
        stats = {}
        for ns, dev in self.links():
            p = sh(["ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev],
                   check=False)
            m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", p.stdout)
            if m:
                stats[f"{ns}/{dev}"] = {"sent_bytes": int(m.group(1)), "packets": int(m.group(2)),
                                        "dropped": int(m.group(3))}
        return stats

    def destroy(self):
        for ns in reversed(self.created):
            remove_namespace(ns)
        self.created = []


def cleanup_leftovers():
    left = existing_namespaces()
    for ns in left:
        remove_namespace(ns)
    return left


# ---------------------------------------------------------------------------------------------
# Running jobs


def load_mpi(bin_dir):
    """The MPI the programs in bin_dir were built against: bin/gw_mpi.json, which CMake writes
    (cmake/GradwireMpiLauncher.cmake): its flavor (openmpi or mpich), launcher and flags."""
    path = os.path.join(bin_dir, "gw_mpi.json")
    try:
        with open(path) as f:
            mpi = json.load(f)
    except (OSError, ValueError) as e:
        raise HarnessError(f"cannot read {path} ({e}); CMake writes it: rebuild with "
                           "./gradwire.sh build, or give --bin a build's bin folder")
    if mpi.get("flavor") not in ("openmpi", "mpich"):
        raise HarnessError(f"{path}: flavor {mpi.get('flavor')!r}; accepted: openmpi, mpich")
    if not os.access(mpi.get("mpiexec", ""), os.X_OK):
        raise HarnessError(f"{path}: the launcher {mpi.get('mpiexec')!r} is not executable")
    return mpi


class Launcher:
    """The build's MPI launcher across the cluster (shaped) or on loopback (--no-shaping): Open
    MPI's mpirun with MCA parameters, or MPICH's Hydra with environment settings."""

    def __init__(self, args, cluster, workdir, mpi):
        self.args = args
        self.cluster = cluster
        self.workdir = workdir
        self.mpi = mpi
        self.child = None
        if cluster:
            self.hostfile = os.path.join(workdir, "hostfile")
            with open(self.hostfile, "w") as f:
                for i in range(args.hosts):
                    slots = " slots=1" if mpi["flavor"] == "openmpi" else ":1"
                    f.write(f"{Cluster.address(i)}{slots}\n")

    def base_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRADWIRE_")}
        if os.geteuid() == 0 and self.mpi["flavor"] == "openmpi":
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env["GWLB_PREFIX"] = PREFIX
        env["GWLB_SUBNET"] = SUBNET
        if self.mpi["flavor"] == "mpich":
            env.update(self.mpich_env())
        return env

    def settings(self):
        """What the report records of the MPI's settings: {"mca": ...} or {"env": ...}."""
        if self.mpi["flavor"] == "openmpi":
            return {"mca": self.mca()}
        return {"env": self.mpich_env()}

    def mpich_env(self):
        """The MPICH (ch4 over UCX) settings of every launch."""
        env = {
            # TCP only, on the cluster's links (or loopback): UCX would otherwise see one machine
            # (the namespaces share its hostname) and move the bytes through shared memory,
            # around the shaped links.
            "UCX_TLS": "tcp,self",
            "UCX_NET_DEVICES": "eth0" if self.cluster else "lo",
            # The virtual hosts share this machine's cores, one rank each, so no node looks
            # oversubscribed to GRADWIRE_MPI_WAIT=auto; MPICH's waiting ranks would spin and take
            # the core from a rank that computes. gradwire's yielding wait gives it back.
            "GRADWIRE_MPI_WAIT": "yield",
        }
        if not self.cluster:
            env["MPIR_CVAR_NOLOCAL"] = "1"  # loopback TCP, not MPICH's shared memory
        return env

    def mca(self):
        """The MCA parameters of every launch: the defaults below, then --mca overrides."""
        if self.cluster:
            subnet = f"{SUBNET}.0/24"
            params = {"plm_rsh_agent": os.path.join(HERE, "netns_exec.sh"), "routed": "direct",
                      "btl_tcp_if_include": subnet, "oob_tcp_if_include": subnet}
        else:
            params = {"btl_tcp_if_include": "lo", "oob_tcp_if_include": "lo"}
        params.update({
            # OpenMPI's TCP transport, and no other.
            "pml": "ob1", "btl": "tcp,self",
            # No "put": with it, an exchange in both directions at once runs at half the link
            # rate (docs/LOWBAND.md).
            "btl_tcp_flags": "send,inplace",
            # Allreduce by ring: OpenMPI 4.1's fixed decision picks slower algorithms for these
            # sizes on a shaped link at 4 hosts (docs/LOWBAND.md).
            "coll_tuned_use_dynamic_rules": "1", "coll_tuned_allreduce_algorithm": "4",
            # The virtual hosts share this machine's cores, but each daemon sees one slot of its
            # own and lets its rank spin while it waits, taking the core from a rank that
            # computes. Yielding when idle gives the core back.
            "mpi_yield_when_idle": "1",
        })
        params.update(self.args.mca_overrides)
        return params

    def command(self, program, env_names):
        mpiexec, n = self.mpi["mpiexec"], str(self.args.hosts)
        agent = os.path.join(HERE, "netns_exec.sh")
        if self.mpi["flavor"] == "mpich":
            # Hydra: its rsh launcher calls the agent as `agent HOST COMMAND...`; the proxies
            # call back over eth0; every variable of mpiexec's environment reaches the ranks.
            if self.cluster:
                return ["ip", "netns", "exec", Cluster.host_ns(0), mpiexec, "-f", self.hostfile,
                        "-n", n, "-launcher", "rsh", "-launcher-exec", agent,
                        "-iface", "eth0"] + program
            return [mpiexec] + self.mpi["flags"] + ["-n", n] + program
        if self.cluster:
            cmd = ["ip", "netns", "exec", Cluster.host_ns(0), mpiexec, "-np", n,
                   "--hostfile", self.hostfile, "--map-by", "node", "--bind-to", "none"]
        else:
            cmd = [mpiexec] + self.mpi["flags"] + ["-np", n]
        for name, value in self.mca().items():
            cmd += ["--mca", name, value]
        for name in sorted(set(env_names) | {"OPENBLAS_NUM_THREADS"}):
            cmd += ["-x", name]
        return cmd + program

    def run(self, program, extra_env, log_path, timeout):
        env = self.base_env()
        env.update(extra_env)
        cmd = self.command(program, list(extra_env.keys()))
        with open(log_path, "w") as logf:
            logf.write(" ".join(f"{k}={v}" for k, v in extra_env.items()) + " " +
                       " ".join(cmd) + "\n")
            logf.flush()
            self.child = subprocess.Popen(cmd, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                          start_new_session=True)
            try:
                rc = self.child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                rc = None
            # An interruption leaves self.child set, for kill().
            self.child = None
        return rc

    def kill(self):
        if self.child and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGTERM)
                self.child.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def tail(path, lines=15):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def probe_rate(args, launcher, rate_mbit, outdir):
    """Times a fixed-size allreduce (bare MPI_Allreduce and gradwire's dense exchange, medians)
    against what the rate predicts for a bandwidth-optimal allreduce."""
    n = args.hosts
    size = args.probe_bytes or max(256 * 1024, int(rate_mbit * 1e6 / 8 * 0.5) // 4096 * 4096)
    report = os.path.join(outdir, f"probe_{rate_mbit if rate_mbit else 'loopback'}.json")
    log_path = report.replace(".json", ".log")
    rc = launcher.run([os.path.join(args.bin, "gradwire_bench_allreduce"), "--min-bytes",
                       str(size), "--max-bytes", str(size), "--seconds-per-size", "3",
                       "--report", report], {}, log_path, timeout=600)
    if rc != 0:
        raise HarnessError(f"the allreduce probe failed (exit {rc}); its log {log_path}:\n"
                           + tail(log_path))
    with open(report) as f:
        row = json.load(f)["rows"][0]
    out = {"bytes": size, "mpi_allreduce_seconds": row["mpi_seconds"],
           "gradwire_seconds": row["gradwire_seconds"], "iterations": row["iterations"],
           "wrong": row["wrong"]}
    if rate_mbit:
        wire = 2 * (n - 1) / n * size * FRAME_BYTES / PAYLOAD_BYTES
        predicted = wire * 8 / (rate_mbit * 1e6)
        out.update(predicted_seconds=predicted,
                   measured_over_predicted=row["mpi_seconds"] / predicted,
                   predicted_is="2(n-1)/n x bytes sent by each host (a bandwidth-optimal "
                   "allreduce), x 1514/1448 for Ethernet/IP/TCP framing, at the configured rate")
    return out


def time_to_target(history, target):
    for h in history:
        if h["test_accuracy"] >= target:
            return h["train_seconds"], h["step"]
    return None, None


def summarize_run(strategy, rate, env, report_path, args):
    with open(report_path) as f:
        r = json.load(f)
    t, step = time_to_target(r["history"], args.target_accuracy)
    traffic = r["traffic"]
    comp = r.get("compression", {})
    grad_step = r["gradient_bytes_per_step"]
    after = comp.get("gradient_bytes_per_step_after_warmup") or 0.0
    if comp.get("compressor") not in ("topk", "dgc") or not comp.get("steps_after_warmup"):
        after = grad_step
    return {
        "strategy": strategy,
        "rate_mbit": rate,
        "env": env,
        "final_test_accuracy": r["final_test_accuracy"],
        "time_to_target_seconds": t,
        "step_at_target": step,
        "epochs_done": r["steps"] / max(1, args.steps_per_epoch),
        "steps": r["steps"],
        "stopped_by_time_budget": r["stopped_by_time_budget"],
        "train_seconds": r["train_seconds"],
        "wall_seconds": r["wall_seconds"],
        "samples_per_second": r["samples_per_second"],
        "gradient_bytes_per_step": grad_step,
        "gradient_bytes_per_step_after_warmup": after,
        "parameter_bytes_per_step": traffic["parameter"]["sent_bytes_per_step_max_rank"],
        "exchange_bytes_per_step": r["exchange_bytes_per_step"],
        "gradient_bytes_per_rank": traffic["gradient"]["sent_bytes_max_rank"],
        "parameter_bytes_per_rank": traffic["parameter"]["sent_bytes_max_rank"],
        "amp_skipped_steps": r["amp"].get("skipped_steps", 0) if r["amp"].get("enabled") else 0,
        "history": [{"step": h["step"], "train_seconds": h["train_seconds"],
                     "test_accuracy": h["test_accuracy"],
                     "exchange_bytes": h["gradient_bytes_sent"] + h["parameter_bytes_sent"]}
                    for h in r["history"]],
        "trainer_report": os.path.relpath(report_path, os.path.dirname(args.report)),
    }


def add_comparisons(runs):
    """speedup_vs_dense: dense's time to target / this run's, at the same rate."""
    for run in runs:
        dense = next((d for d in runs if d["strategy"] == "dense" and
                      d["rate_mbit"] == run["rate_mbit"] and "error" not in d), None)
        run["speedup_vs_dense"] = None
        run["speedup_vs_dense_at_least"] = None
        run["gradient_bytes_vs_dense_after_warmup"] = None
        run["exchange_bytes_vs_dense"] = None
        if dense is None or "error" in run:
            continue
        if run["gradient_bytes_per_step_after_warmup"] > 0:
            run["gradient_bytes_vs_dense_after_warmup"] = (
                dense["gradient_bytes_per_step"] / run["gradient_bytes_per_step_after_warmup"])
        if run["exchange_bytes_per_step"] > 0:
            run["exchange_bytes_vs_dense"] = (dense["exchange_bytes_per_step"] /
                                              run["exchange_bytes_per_step"])
        t, td = run["time_to_target_seconds"], dense["time_to_target_seconds"]
        if t and td:
            run["speedup_vs_dense"] = td / t
        elif t and td is None:
            # Dense never got there: it trained train_seconds without reaching the target.
            run["speedup_vs_dense_at_least"] = dense["train_seconds"] / t


# ---------------------------------------------------------------------------------------------
# Reports


def fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def markdown(report):
    s = report["settings"]
    lines = [f"# gradwire lowband report", ""]
    if not report["shaped"]:
        lines += ["**UNSHAPED: `--no-shaping`, loopback TCP on one machine. These figures say "
                  "nothing about a slow network.**", ""]
    lines += [f"- Command: `{report['command']}`",
              f"- {s['hosts']} hosts x 1 rank, model {s['model']}, batch {s['batch_size']} per "
              f"rank, lr {s['lr']}, momentum {s['momentum']}, seed {s['seed']}, {s['epochs']} "
              f"epochs ({s['steps_per_epoch']} steps each), time budget {s['time_budget']} s, "
              f"target accuracy {s['target_accuracy']}, evaluation every {s['eval_every']} steps",
              f"- Machine: {report['machine']['cores']} cores, Linux {report['machine']['kernel']}, "
              f"{report['machine']['mpi']}, TCP congestion control "
              f"{report['machine']['tcp_congestion_control']}",
              ("- OpenMPI MCA: " + " ".join(f"`{k}={v}`" for k, v in report["mpi_mca"].items()
                                            if k not in ("plm_rsh_agent",)))
              if "mpi_mca" in report else
              ("- MPICH environment: " + " ".join(f"`{k}={v}`"
                                                  for k, v in report["mpi_env"].items())),
              "- Times are training seconds (evaluation excluded); bytes are the busiest rank's "
              "sent bytes from gradwire's counters.", ""]
    for rate in report["rates"]:
        title = f"{rate} Mbit/s per host (tbf)" if rate else "loopback, UNSHAPED"
        lines += [f"## {title}", ""]
        probe = report["probes"].get(str(rate))
        if probe and probe.get("predicted_seconds"):
            lines += [f"Shaping check: one {probe['bytes'] / 1e6:.2f} MB MPI_Allreduce took "
                      f"{probe['mpi_allreduce_seconds']:.3f} s (median), "
                      f"{probe['measured_over_predicted']:.2f}x the {probe['predicted_seconds']:.3f}"
                      f" s the rate predicts.", ""]
        if not any(r["rate_mbit"] == rate for r in report["runs"]):
            continue
        lines += ["| strategy | final acc | time to target (s) | speedup vs dense | "
                  "grad B/step after warm-up | dense grad B / this | param B/step | "
                  "exchange B/step | samples/s | epochs |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in report["runs"]:
            if r["rate_mbit"] != rate:
                continue
            if "error" in r:
                lines.append(f"| {r['strategy']} | failed: {r['error']} | | | | | | | | |")
                continue
            speed = fmt(r["speedup_vs_dense"], ".1f")
            if r["speedup_vs_dense_at_least"]:
                speed = f">= {r['speedup_vs_dense_at_least']:.1f}"
            ttt = fmt(r["time_to_target_seconds"], ".1f", "never")
            budget = " (budget)" if r["stopped_by_time_budget"] else ""
            lines.append(
                f"| {r['strategy']} | {r['final_test_accuracy']:.4f} | {ttt} | {speed} | "
                f"{r['gradient_bytes_per_step_after_warmup']:,.0f} | "
                f"{fmt(r['gradient_bytes_vs_dense_after_warmup'], '.1f')} | "
                f"{r['parameter_bytes_per_step']:,.0f} | {r['exchange_bytes_per_step']:,.0f} | "
                f"{r['samples_per_second']:,.0f} | {r['epochs_done']:.2f}{budget} |")
        lines.append("")
    if report.get("plot"):
        lines += [f"![accuracy against bytes and time]({os.path.basename(report['plot'])})", ""]
    return "\n".join(lines)


def plot(report, path, workdir):
    if shutil.which("gnuplot") is None:
        log("gnuplot not found (Debian package gnuplot-nox): no plot")
        return None
    rates = [rate for rate in report["rates"]
             if any(r["rate_mbit"] == rate and "error" not in r for r in report["runs"])]
    if not rates:
        return None
    datadir = os.path.join(workdir, "plotdata")
    os.makedirs(datadir, exist_ok=True)
    label = "" if report["shaped"] else " (UNSHAPED loopback)"
    script = [f"set terminal pngcairo size 1400,{420 * len(rates)} font ',10'",
              f"set output '{path}'",
              f"set multiplot layout {len(rates)},2 title 'gradwire lowband: "
              f"{report['settings']['hosts']} hosts, {report['settings']['model']}{label}'",
              "set termoption noenhanced", "set key bottom right font ',8'", "set grid",
              "set ylabel 'test accuracy'"]
    target = report["settings"]["target_accuracy"]
    for rate in rates:
        runs = [r for r in report["runs"] if r["rate_mbit"] == rate and "error" not in r]
        files = []
        for r in runs:
            fn = os.path.join(datadir, f"{rate}_{r['strategy'].replace('+', '_')}.dat")
            with open(fn, "w") as f:
                for h in r["history"]:
                    f.write(f"{h['train_seconds']} {h['test_accuracy']} "
                            f"{max(h['exchange_bytes'], 1)}\n")
            files.append((fn, r["strategy"]))
        name = f"{rate} Mbit/s" if rate else "loopback"
        for xcol, xlabel, fmt_x in ((3, "bytes sent per rank (gradients + parameters)", "%.0s%cB"),
                                    (1, "training time, evaluation excluded (s)", "%g")):
            script.append("set logscale x")
            script.append(f"set format x '{fmt_x}'")
            script.append(f"set xlabel '{xlabel}'")
            script.append(f"set title '{name}'")
            parts = [f"'{fn}' using {xcol}:2 with linespoints title '{s}'" for fn, s in files]
            parts.append(f"{target} with lines dashtype 2 lc rgb 'black' title 'target'")
            script.append("plot " + ", ".join(parts))
    script.append("unset multiplot")
    gp = os.path.join(workdir, "plot.gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    p = sh(["gnuplot", gp], check=False)
    if p.returncode != 0:
        log(f"gnuplot failed: {p.stderr.strip()}")
        return None
    return path


def launcher_version(mpi):
    """The launcher's name and version in one line: "mpirun (Open MPI) 4.1.4", "MPICH 4.0.2"."""
    p = sh([mpi["mpiexec"], "--version"], check=False)
    text = p.stdout if p.returncode == 0 else ""
    if mpi["flavor"] == "mpich":
        m = re.search(r"^\s*Version:\s*(\S+)", text, re.M)
        return f"MPICH {m.group(1)} (Hydra)" if m else "MPICH (version unknown)"
    return text.splitlines()[0] if text else "unknown"


def machine_facts(cluster, mpi):
    facts = {"cores": os.cpu_count(), "kernel": platform.release()}
    facts["mpi"] = launcher_version(mpi)
    cc = "unknown"
    try:
        if cluster:
            cc = sh(["ip", "netns", "exec", Cluster.host_ns(0), "cat",
                     "/proc/sys/net/ipv4/tcp_congestion_control"]).stdout.strip()
        else:
            with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
                cc = f.read().strip()
    except (HarnessError, OSError):
        pass
    facts["tcp_congestion_control"] = cc
    return facts


# ---------------------------------------------------------------------------------------------
# Main


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="gradwire_train over a virtual cluster of shaped links (network namespaces, "
        "a bridge and tbf), every strategy x rate; JSON + Markdown report and a PNG plot.")
    p.add_argument("--hosts", type=int, default=4, help="virtual hosts, one rank each (2-16)")
    p.add_argument("--rates", default="100,1000",
                   help="comma list of link rates in Mbit/s, each direction (1-100000)")
    p.add_argument("--strategies", default=",".join(STRATEGIES),
                   help="comma list of: " + ", ".join(STRATEGIES))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--target-accuracy", type=float, default=0.85)
    p.add_argument("--time-budget", type=float, default=1200,
                   help="training seconds per run before it stops at its next evaluation")
    p.add_argument("--eval-every", type=int, default=0,
                   help="steps between evaluations (0: a twelfth of an epoch)")
    p.add_argument("--report", default=os.path.join(ROOT, "build", "lowband", "report.json"))
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--batch-size", type=int, default=32)
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
    p.add_argument("--probe-only", action="store_true",
                   help="shape each rate and time the probe allreduce; no training")
    p.add_argument("--no-shaping", action="store_true",
                   help="no namespaces: all ranks on loopback TCP, unshaped (labelled so)")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                   help="folder with gradwire_train and gradwire_bench_allreduce")
    p.add_argument("--cleanup", action="store_true",
                   help="remove namespaces a killed run left behind, then exit")
    a = p.parse_args(argv)
    errors = []
    if not 2 <= a.hosts <= 16:
        errors.append(f"--hosts {a.hosts}: accepted 2 to 16")
    try:
        a.rate_list = [int(x) for x in a.rates.split(",")]
        if any(not 1 <= r <= 100000 for r in a.rate_list) or len(set(a.rate_list)) != len(a.rate_list):
            raise ValueError
    except ValueError:
        errors.append(f"--rates '{a.rates}': accepted a comma list of distinct whole Mbit/s "
                      "values from 1 to 100000, e.g. 10,100,1000")
    a.strategy_list = [s for s in a.strategies.split(",")]
    bad = [s for s in a.strategy_list if s not in STRATEGIES]
    if bad or not a.strategy_list or len(set(a.strategy_list)) != len(a.strategy_list):
        errors.append(f"--strategies '{a.strategies}': unknown or repeated {bad or 'entries'}; "
                      f"accepted: {', '.join(STRATEGIES)}")
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
    a.mca_overrides = {}
    for item in a.mca:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[a-z][a-z0-9_]*", name) or not value:
            errors.append(f"--mca '{item}': accepted NAME=VALUE, NAME an MCA parameter such as "
                          "btl_tcp_flags")
        else:
            a.mca_overrides[name] = value
    if errors:
        p.error("; ".join(errors))
    a.report = os.path.abspath(a.report)
    train_size = a.train_subset or 60000
    a.steps_per_epoch = train_size // (a.hosts * a.batch_size)
    if a.steps_per_epoch < 1:
        p.error(f"--train-subset {train_size} is smaller than one global batch "
                f"({a.hosts} x {a.batch_size})")
    if a.eval_every == 0:
        a.eval_every = max(1, a.steps_per_epoch // 12)
    return a


def main(argv):
    args = parse_args(argv)
    if args.cleanup:
        if os.geteuid() != 0:
            raise HarnessError("--cleanup needs root")
        left = cleanup_leftovers()
        log(f"removed {', '.join(left)}" if left else "nothing to remove")
        return 0
    for prog in ("gradwire_train", "gradwire_bench_allreduce"):
        if not os.access(os.path.join(args.bin, prog), os.X_OK):
            raise HarnessError(f"{prog} not found in {args.bin} (build first: ./gradwire.sh build,"
                               " or give --bin)")
    mpi = load_mpi(args.bin)
    if args.mca_overrides and mpi["flavor"] != "openmpi":
        raise HarnessError(f"--mca sets Open MPI parameters, but the programs in {args.bin} are "
                           f"built against {mpi['flavor']} ({mpi['mpiexec']})")
    if not args.no_shaping:
        why = namespaces_unavailable()
        if why:
            print(f"[lowband] SKIP: network namespaces cannot be made here: {why}. "
                  "Run as root on Linux with iproute2, or use --no-shaping (unshaped loopback).",
                  flush=True)
            return EXIT_SKIP
    outdir = os.path.dirname(args.report)
    os.makedirs(outdir, exist_ok=True)
    rundir = os.path.join(outdir, os.path.splitext(os.path.basename(args.report))[0] + "_runs")
    os.makedirs(rundir, exist_ok=True)

    cluster = None if args.no_shaping else Cluster(args.hosts)
    if args.no_shaping:
        log("--no-shaping: UNSHAPED loopback TCP on this machine; --rates is not used")
    launcher = None

    def on_signal(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    table = strategy_table(args.steps_per_epoch)
    report = {
        "harness": "gradwire_lowband",
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT) if sys.argv[0] else "lowband"]
                            + argv),
        "shaped": not args.no_shaping,
        "shaping": "tbf per link direction in network namespaces" if cluster else
        "NONE: --no-shaping, loopback TCP on one machine (unshaped)",
        "settings": {"hosts": args.hosts, "model": args.model, "epochs": args.epochs,
                     "batch_size": args.batch_size, "lr": args.lr, "momentum": args.momentum,
                     "seed": args.seed, "target_accuracy": args.target_accuracy,
                     "time_budget": args.time_budget, "eval_every": args.eval_every,
                     "steps_per_epoch": args.steps_per_epoch, "train_subset": args.train_subset,
                     "test_subset": args.test_subset},
        "rates": [],
        "probes": {},
        "links": {},
        "runs": [],
        "runs_is": "one per strategy x rate: final_test_accuracy after the epochs (or the time "
        "budget); time_to_target_seconds = training seconds (evaluation excluded) at the first "
        "evaluation at or above the target, null if never; bytes from the busiest rank's "
        "counters; speedup_vs_dense = dense's time to target / this one's at the same rate "
        "(speedup_vs_dense_at_least when dense never reached it: dense's training time / this "
        "one's time to target); gradient_bytes_vs_dense_after_warmup = dense gradient bytes per "
        "step / this run's after its warm-up",
    }
    failed = 0
    try:
        if cluster:
            log(f"creating {args.hosts} hosts and a switch ({PREFIX}-h0..h{args.hosts - 1}, "
                f"{PREFIX}-sw)")
            cluster.create()
        launcher = Launcher(args, cluster, rundir, mpi)
        report["machine"] = machine_facts(cluster, mpi)
        report["mpi_flavor"] = mpi["flavor"]
        report.update({f"mpi_{k}": v for k, v in launcher.settings().items()})
        rates = args.rate_list if cluster else [None]
        report["rates"] = rates
        for rate in rates:
            if cluster:
                report["links"][str(rate)] = cluster.shape(rate)
                log(f"links shaped to {rate} Mbit/s each way")
            probe = probe_rate(args, launcher, rate, rundir)
            report["probes"][str(rate)] = probe
            if probe.get("predicted_seconds"):
                log(f"probe: {probe['bytes'] / 1e6:.2f} MB allreduce {probe['mpi_allreduce_seconds']:.3f}"
                    f" s, predicted {probe['predicted_seconds']:.3f} s "
                    f"({probe['measured_over_predicted']:.2f}x)")
            else:
                log(f"probe (unshaped): {probe['bytes'] / 1e6:.2f} MB allreduce "
                    f"{probe['mpi_allreduce_seconds']:.4f} s")
            for strategy in [] if args.probe_only else args.strategy_list:
                tag = f"{rate if rate else 'loopback'}_{strategy.replace('+', '_')}"
                rpath = os.path.join(rundir, f"{tag}.json")
                lpath = os.path.join(rundir, f"{tag}.log")
                if os.path.exists(rpath):
                    os.remove(rpath)
                program = [os.path.join(args.bin, "gradwire_train"), "--model", args.model,
                           "--epochs", str(args.epochs), "--batch-size", str(args.batch_size),
                           "--lr", str(args.lr), "--momentum", str(args.momentum),
                           "--seed", str(args.seed), "--eval-every", str(args.eval_every),
                           "--time-budget", str(args.time_budget), "--no-progress",
                           "--report", rpath]
                if args.train_subset:
                    program += ["--train-subset", str(args.train_subset)]
                if args.test_subset:
                    program += ["--test-subset", str(args.test_subset)]
                log(f"{strategy} at {rate if rate else 'loopback'}"
                    f"{' Mbit/s' if rate else ''}: running (log {lpath})")
                start = time.monotonic()
                rc = launcher.run(program, table[strategy], lpath,
                                  timeout=args.time_budget * 2 + 600)
                if rc != 0 or not os.path.exists(rpath):
                    failed += 1
                    why = "timed out" if rc is None else f"exit {rc}"
                    log(f"{strategy}: FAILED ({why}); log tail:\n{tail(lpath)}")
                    report["runs"].append({"strategy": strategy, "rate_mbit": rate,
                                           "env": table[strategy], "error": why,
                                           "log": os.path.relpath(lpath, outdir)})
                    continue
                run = summarize_run(strategy, rate, table[strategy], rpath, args)
                run["log"] = os.path.relpath(lpath, outdir)
                report["runs"].append(run)
                log(f"{strategy}: acc {run['final_test_accuracy']:.4f}, target "
                    f"{fmt(run['time_to_target_seconds'], '.1f', 'never')} s, "
                    f"{run['gradient_bytes_per_step']:,.0f} grad B/step, "
                    f"{run['samples_per_second']:,.0f} samples/s "
                    f"({time.monotonic() - start:.0f} s)")
            if cluster:
                report["links"][str(rate)]["qdisc_stats_after"] = cluster.qdisc_stats()
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
    add_comparisons(report["runs"])
    plot_path = os.path.splitext(args.report)[0] + ".png"
    report["plot"] = plot(report, plot_path, rundir)
    md_path = os.path.splitext(args.report)[0] + ".md"
    report["markdown"] = md_path
    with open(args.report, "w") as f:
        json.dump(report, f, indent=2)
    with open(md_path, "w") as f:
        f.write(markdown(report) + "\n")
    print(markdown(report), flush=True)
    log(f"report {args.report}, {md_path}" + (f", plot {report['plot']}" if report["plot"] else ""))
    if args.check_probe > 0:
        for rate, probe in report["probes"].items():
            ratio = probe.get("measured_over_predicted")
            if ratio is not None and abs(ratio - 1) > args.check_probe:
                log(f"FAIL: at {rate} Mbit/s the allreduce took {ratio:.2f}x the predicted time "
                    f"(accepted within {args.check_probe:.0%})")
                return 1
            if probe.get("wrong"):
                log(f"FAIL: the probe's allreduce gave {probe['wrong']} wrong elements")
                return 1
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except HarnessError as e:
        print(f"gradwire_lowband: error: {e}", file=sys.stderr)
        sys.exit(2)
