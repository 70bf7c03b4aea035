"""The lowband report: its JSON (every field made here, Note [Lowband report fields]), what one
run and one probe contribute to it, the comparisons with dense, the Markdown and the plot."""

import json
import os
import platform
import shutil

from .cluster import Cluster
from .common import HarnessError, log, sh, tail
from .launch import launcher_version

# TCP payload per Ethernet frame with a 1500-byte MTU and TCP timestamps: tbf counts whole frames.
FRAME_BYTES, PAYLOAD_BYTES = 1514, 1448

# Note [Lowband report fields]
# The JSON holds figures and settings only; what they mean is written here and in docs/LOWBAND.md.
#   harness, command        "gradwire_lowband" and the command line of the run
#   shaped, shaping         false and "none" under --no-shaping (loopback TCP on one machine),
#                           else true and "tbf": every link direction shaped in its namespace
#   settings                the training's settings, one per option, and steps_per_epoch
#   machine, mpi_flavor     cores, kernel, launcher version, TCP congestion control; openmpi or
#                           mpich, with mpi_mca (Open MPI's parameters) or mpi_env (MPICH's)
#   rates                   the rates run, Mbit/s per host and direction ([null] when unshaped)
#   links[rate]             the tbf settings of every queue (each host's eth0 egress and the
#                           switch port's egress towards it) and qdisc_stats_after, tc's counters
#   probes[rate]            a fixed-size allreduce's medians (bare MPI, gradwire); shaped, also
#                           predicted_seconds: 2(n-1)/n x the bytes each host sends in a
#                           bandwidth-optimal allreduce, x FRAME_BYTES/PAYLOAD_BYTES for
#                           Ethernet/IP/TCP framing, at the rate; and measured_over_predicted
#   runs                    one per strategy x rate (x exchange under --exchange: strategy@flat
#                           and strategy@hier, `exchange` flat or hier, else null) (run_entry,
#                           failed_run_entry); each with inter_node_bytes_per_step (gradwire's
#                           counters: the gradient bytes sent to other hosts by the busiest
#                           host's ranks together, per step), topology (the trainer's: two levels
#                           or flat, and why), and host_link_bytes_per_step_max/mean (tc's
#                           counters: the bytes each host's shaped egress queue sent during the
#                           run, headers, evaluation and start-up included, per step; the
#                           busiest host's and the mean), then
#                           add_comparisons: speedup_vs_dense = dense's time to target / this
#                           run's at the same rate, speedup_vs_dense_at_least when dense never got
#                           there (dense's training time / this run's time to target);
#                           gradient_bytes_vs_dense_after_warmup, exchange_bytes_vs_dense; for an
#                           @hier run, vs_flat: its inter-node bytes, host link bytes and step
#                           time over those of the same strategy's @flat run at the same rate
#   plot, markdown          the paths of the PNG (null without gnuplot) and of the Markdown


def new_report(command, args, shaped):
    return {
        "harness": "gradwire_lowband",
        "command": command,
        "shaped": shaped,
        "shaping": "tbf" if shaped else "none",
        "settings": {"hosts": args.hosts, "ranks_per_host": args.ranks_per_host,
                     "model": args.model, "device": args.device,
                     "epochs": args.epochs,
                     "batch_size": args.batch_size, "optimizer": args.optimizer,
                     "lr": args.lr, "momentum": args.momentum,
                     "seed": args.seed, "target_accuracy": args.target_accuracy,
                     "time_budget": args.time_budget, "eval_every": args.eval_every,
                     "steps_per_epoch": args.steps_per_epoch, "train_subset": args.train_subset,
                     "test_subset": args.test_subset},
        "rates": [],
        "probes": {},
        "links": {},
        "runs": [],
    }


def add_machine(report, cluster, mpi, mpi_settings):
    facts = {"cores": os.cpu_count(), "kernel": platform.release(),
             "mpi": launcher_version(mpi), "tcp_congestion_control": "unknown"}
    try:
        if cluster:
            facts["tcp_congestion_control"] = cluster.tcp_congestion_control()
        else:
            with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
                facts["tcp_congestion_control"] = f.read().strip()
    except (HarnessError, OSError):
        pass
    report["machine"] = facts
    report["mpi_flavor"] = mpi["flavor"]
    report.update({f"mpi_{k}": v for k, v in mpi_settings.items()})


def link_entry(rate_mbit, burst_bytes, latency):
    return {"qdisc": "tbf", "rate": f"{rate_mbit}mbit", "burst_bytes": burst_bytes,
            "latency": latency}


def probe_entry(row, size, rate_mbit, hosts):
    """A gradwire_bench_allreduce report's row, against the rate's prediction when shaped."""
    out = {"bytes": size, "mpi_allreduce_seconds": row["mpi_seconds"],
           "gradwire_seconds": row["gradwire_seconds"], "iterations": row["iterations"],
           "wrong": row["wrong"]}
    if rate_mbit:
        wire = 2 * (hosts - 1) / hosts * size * FRAME_BYTES / PAYLOAD_BYTES
        predicted = wire * 8 / (rate_mbit * 1e6)
        out.update(predicted_seconds=predicted,
                   measured_over_predicted=row["mpi_seconds"] / predicted)
    return out


def time_to_target(history, target):
    for h in history:
        if h["test_accuracy"] >= target:
            return h["train_seconds"], h["step"]
    return None, None


def run_entry(strategy, rate, env, r, trainer_report, log_path, args):
    """One run, from its gradwire_train report r."""
    t, step = time_to_target(r["history"], args.target_accuracy)
    traffic = r["traffic"]
    comp = r.get("compression", {})
    grad_step = r["gradient_bytes_per_step"]
    # Every compressor's report counts its bytes from its warm-up's end (step 0 for those without
    # one); a run that never got there (no gradient exchange after it) falls back to the whole run.
    after = comp.get("gradient_bytes_per_step_after_warmup") or 0.0
    if not comp.get("steps_after_warmup"):
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
        "inter_node_bytes_per_step":
            traffic["gradient"].get("inter_node_sent_bytes_per_step_max_node"),
        "topology": r.get("topology"),
        "history": [{"step": h["step"], "train_seconds": h["train_seconds"],
                     "test_accuracy": h["test_accuracy"],
                     "exchange_bytes": h["gradient_bytes_sent"] + h["parameter_bytes_sent"]}
                    for h in r["history"]],
        "auto": auto_entry(r),
        "trainer_report": trainer_report,
        "log": log_path,
    }


def auto_entry(r):
    """GRADWIRE_COMPRESSOR=auto's choice and its prediction against the run's steps, or None."""
    a = r.get("auto")
    if not a:
        return None
    chosen = next(c for c in a["candidates"] if c["name"] == a["chosen"])
    mean_step = r["train_seconds"] / r["steps"] if r["steps"] else None
    check = a.get("check")
    predicted = check["predicted_step_seconds"] if check else None
    return {
        "chosen": a["chosen"],
        "how": a["how"],
        "measure_seconds": a["measure_seconds"],
        "predicted_at_decision_seconds": chosen["predicted_step_seconds"],
        "predicted_step_seconds": predicted,
        "measured_median_step_seconds": check["measured_step_seconds"] if check else None,
        # The same prediction against the median of the steps it was re-measured over.
        "check_error": check["error"] if check else None,
        "mean_step_seconds": mean_step,
        # The report's prediction against the trainer's mean training step (evaluation excluded).
        "prediction_error": predicted / mean_step - 1 if predicted and mean_step else None,
        "candidates": {c["name"]: c["predicted_step_seconds"] for c in a["candidates"]},
        # local_sgd's period (GRADWIRE_LOCAL_SGD_K), where it was a candidate.
        "local_sgd_period": next((int(c["period"]) for c in a["candidates"]
                                  if c["name"] == "local_sgd" and "period" in c), None),
        # Whether each candidate's exchange was run and timed at the decision, or modelled from
        # its bytes (reports before the timed exchange have no such field: None).
        "exchange_timed": {c["name"]: (c["exchange_timed_seconds"] is not None
                                       if "exchange_timed_seconds" in c else None)
                           for c in a["candidates"]},
    }


def host_link_bytes(before, after, hosts, steps):
    """Each host's shaped egress bytes over one run (tc's counters after minus before), per
    step: the busiest host's and the mean."""
    sent = []
    for i in range(hosts):
        key = f"{Cluster.host_ns(i)}/eth0"  # as Cluster.qdisc_stats names a host's egress
        if key in before and key in after:
            sent.append(after[key]["sent_bytes"] - before[key]["sent_bytes"])
    if len(sent) != hosts or steps <= 0:
        return {"host_link_bytes_per_step_max": None, "host_link_bytes_per_step_mean": None}
    return {"host_link_bytes_per_step_max": max(sent) / steps,
            "host_link_bytes_per_step_mean": sum(sent) / hosts / steps}


def collect_run(strategy, rate, env, rc, rpath, lpath, outdir, make_entry, link_bytes, seconds):
    """A finished run's entry: its failed-run entry when it exited non-zero (rc None: timed out)
    or wrote no report `rpath`, else make_entry(the report) with link_bytes(steps) added; logged
    either way (`seconds`: the run's wall time)."""
    if rc != 0 or not os.path.exists(rpath):
        why = "timed out" if rc is None else f"exit {rc}"
        log(f"{strategy}: FAILED ({why}); log tail:\n{tail(lpath)}")
        return failed_run_entry(strategy, rate, env, why, os.path.relpath(lpath, outdir))
    with open(rpath) as f:
        run = make_entry(json.load(f))
    run.update(link_bytes(run["steps"]))
    log(f"{strategy}: acc {run['final_test_accuracy']:.4f}, target "
        f"{fmt(run['time_to_target_seconds'], '.1f', 'never')} s, "
        f"{run['gradient_bytes_per_step']:,.0f} grad B/step, "
        f"{run['samples_per_second']:,.0f} samples/s ({seconds:.0f} s)")
    return run


def failed_run_entry(strategy, rate, env, error, log_path):
    return {"strategy": strategy, "rate_mbit": rate, "env": env, "error": error, "log": log_path}


def base_strategy(run):
    return run["strategy"].split("@")[0]


def add_comparisons(runs):
    """speedup_vs_dense: dense's (torch:ddp's for torch:*) time to target / this run's, at the
    same rate (and exchange);
    vs_flat for @hier runs."""
    for run in runs:
        # The PyTorch example's runs (torch:*) against DDP's own allreduce.
        baseline = "torch:ddp" if run["strategy"].startswith("torch:") else "dense"
        dense = next((d for d in runs if base_strategy(d) == baseline and
                      d.get("exchange") == run.get("exchange") and
                      d["rate_mbit"] == run["rate_mbit"] and "error" not in d), None)
        run["vs_flat"] = None
        flat = next((d for d in runs if run.get("exchange") == "hier" and
                     d.get("exchange") == "flat" and base_strategy(d) == base_strategy(run) and
                     d["rate_mbit"] == run["rate_mbit"] and "error" not in d), None)
        if flat is not None and "error" not in run:
            def over(key):
                a, b = run.get(key), flat.get(key)
                return a / b if a is not None and b else None
            run["vs_flat"] = {
                "inter_node_bytes": over("inter_node_bytes_per_step"),
                "host_link_bytes": over("host_link_bytes_per_step_max"),
                "step_seconds": (run["train_seconds"] / run["steps"]) /
                                (flat["train_seconds"] / flat["steps"])
                                if run["steps"] and flat["steps"] and flat["train_seconds"]
                                else None}
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


def probe_problem(report, tolerance):
    """Why the probes fail --check-probe tolerance, or None."""
    for rate, probe in report["probes"].items():
        ratio = probe.get("measured_over_predicted")
        if ratio is not None and abs(ratio - 1) > tolerance:
            return (f"at {rate} Mbit/s the allreduce took {ratio:.2f}x the predicted time "
                    f"(accepted within {tolerance:.0%})")
        if probe.get("wrong"):
            return f"the probe's allreduce gave {probe['wrong']} wrong elements"
    return None


def fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def hierarchy_lines(runs):
    """The flat-against-two-level table of one rate's runs, when they have @flat/@hier runs."""
    runs = [r for r in runs if r.get("exchange") and "error" not in r]
    if not runs:
        return []
    out = ["| run | s/step | inter-node B/step per host (counters) | host link B/step (tc, max) | "
           "inter-node vs flat | host link vs flat | step time vs flat |",
           "|---|---|---|---|---|---|---|"]
    for r in runs:
        v = r.get("vs_flat") or {}
        step = r["train_seconds"] / r["steps"] if r["steps"] else None
        out.append(f"| {r['strategy']} | {fmt(step, '.3f')} | "
                   f"{fmt(r.get('inter_node_bytes_per_step'), ',.0f')} | "
                   f"{fmt(r.get('host_link_bytes_per_step_max'), ',.0f')} | "
                   f"{fmt(v.get('inter_node_bytes'), '.3f')} | "
                   f"{fmt(v.get('host_link_bytes'), '.3f')} | "
                   f"{fmt(v.get('step_seconds'), '.3f')} |")
    return out + [""]


def markdown(report):
    s = report["settings"]
    lines = [f"# gradwire lowband report", ""]
    if not report["shaped"]:
        lines += ["**UNSHAPED: `--no-shaping`, loopback TCP on one machine. These figures say "
                  "nothing about a slow network.**", ""]
    lines += [f"- Command: `{report['command']}`",
              f"- {s['hosts']} hosts x {s.get('ranks_per_host', 1)} rank(s), model {s['model']}, batch {s['batch_size']} per "
              f"rank, {s.get('optimizer', 'sgd')} lr {s['lr']}"
              f"{'' if s.get('optimizer', 'sgd') == 'adam' else ', momentum ' + str(s['momentum'])}"
              f", seed {s['seed']}, {s['epochs']} "
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
        lines += hierarchy_lines([r for r in report["runs"] if r["rate_mbit"] == rate])
    if report.get("plot"):
        lines += [f"![accuracy against bytes and time]({os.path.basename(report['plot'])})", ""]
    return "\n".join(lines)


def plot(report, path, workdir):
    """Accuracy against bytes and against time, one row per rate: the PNG's path, or None."""
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
