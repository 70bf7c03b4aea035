"""The low-bandwidth harness's reports: one section per report, a table per rate."""
import os

from .auto_runs import render_auto, render_series
from .fmt import acc, nbytes, ratio, table
from .inputs import LOWBAND, REPORTS, RESULTS, InputError, load, lowband_runs, lowband_series


def render_hierarchy(runs):
    """One rate's flat-against-two-level table (runs of the harness's --exchange), if any."""
    runs = [x for x in runs if x.get("exchange") and "error" not in x]
    if not runs:
        return []
    rows = []
    for x in runs:
        v = x.get("vs_flat") or {}
        step_s = x["train_seconds"] / x["steps"] if x["steps"] else None
        rows.append([x["strategy"], f"{step_s:.3f}" if step_s else "-",
                     nbytes(x.get("inter_node_bytes_per_step")),
                     nbytes(x.get("host_link_bytes_per_step_max")),
                     f"{v['inter_node_bytes']:.3f}" if v.get("inter_node_bytes") else "-",
                     f"{v['host_link_bytes']:.3f}" if v.get("host_link_bytes") else "-",
                     f"{v['step_seconds']:.3f}" if v.get("step_seconds") else "-"])
    return ["", "Flat against two levels (`--exchange flat,hier`): inter-node B/step per host from "
            "gradwire's counters (the busiest host's ranks together), host link B/step from tc's "
            "counters on each host's shaped egress (the busiest host; headers, evaluation and "
            "start-up included), and the two-level run over the flat one.", ""] + table(
        ["run", "s/step", "inter-node B/step per host", "host link B/step", "inter-node vs flat",
         "host link vs flat", "step time vs flat"], rows)


def render_lowband_report(r, ext, rel, png, level):
    """One harness report's section: its settings, then a table per rate."""
    st = r["settings"]
    m = r["machine"]
    shaping = "shaped: " + r["shaping"] if r["shaped"] else "UNSHAPED: loopback TCP, no tbf"
    out = [f"`gradwire_lowband.py` ({shaping}): "
           f"{st['hosts']} hosts x {st.get('ranks_per_host', 1)} rank(s), model {st['model']}, "
           f"batch {st['batch_size']} per "
           f"rank, lr {st['lr']:g}, momentum {st['momentum']:g}, seed {st['seed']}, "
           f"{st['epochs']} epochs, target accuracy {st['target_accuracy']:g}, evaluation every "
           f"{st['eval_every']} steps. Time to target is training seconds (evaluation excluded) at "
           "the first evaluation at or above the target; bytes are the busiest rank's per step. "
           "The harness and the report's fields: `docs/LOWBAND.md`.", ""]
    rates = sorted({run["rate_mbit"] for run in r["runs"]}, key=lambda x: (x is None, x or 0))
    for rate in rates:
        out += render_rate(r, rate, "#" * level)
    if any(rates):
        out += ["Step / link time: the mean training step against the time the link needs for "
                "the step's gradient bytes, grad B/step (run) x 8 / the rate; for a ring "
                "allreduce that is 2(n-1)/n x the gradient's bytes / the rate. tbf counts whole "
                "frames, so TCP over these links cannot come below 1514/1448 = 1.046x of it.", ""]
    if png:
        out += [f"![accuracy against bytes sent and against training time, per rate]({png})", ""]
    made = (f"committed in {ext['committed_in'][:10]}" if "committed_in" in ext
            else f"its binaries built from {ext['built_from'][:10]}")
    out += [f"Report: `{rel}` (and its `report.md`, `report.png`), {made}, on {ext['date']}; "
            f"{ext['provenance']}. Command: `{r['command']}`. Machine: {m['cores']} cores, "
            f"{m['mpi']}, kernel {m['kernel']}."]
    return out


def render_probe(r, rate):
    """The harness's shaping check at one rate: its MPI_Allreduce against the rate's time."""
    p = r.get("probes", {}).get(str(rate))
    if p and "predicted_seconds" in p:
        return [f"Shaping check: one {p['bytes'] / 1e6:.2f} MB `MPI_Allreduce` took "
                f"{p['mpi_allreduce_seconds']:.3f} s (median), "
                f"{p['measured_over_predicted']:.2f}x the {p['predicted_seconds']:.3f} s the "
                "rate predicts.", ""]
    if p:
        return [f"Unshaped: one {p['bytes'] / 1e6:.2f} MB `MPI_Allreduce` took "
                f"{p['mpi_allreduce_seconds']:.4f} s (median).", ""]
    return []


def rate_row(x, rate, dense):
    """One run's row of a rate's table."""
    dense_ttt = dense["time_to_target_seconds"] if dense else None
    ttt = x["time_to_target_seconds"]
    speed = f"{dense_ttt / ttt:.1f}x" if ttt and dense_ttt else "-"
    g = x["gradient_bytes_per_step_after_warmup"]
    dense_g = dense["gradient_bytes_per_step_after_warmup"] if dense else None
    step_s = x["train_seconds"] / x["steps"] if x["steps"] else None
    # The time the link needs for the step's gradient bytes: what this rank sends, at
    # the rate (for a ring allreduce, 2(n-1)/n x the gradient's bytes / rate).
    link_s = x["gradient_bytes_per_step"] * 8 / (rate * 1e6) if rate else None
    return [x["strategy"], acc(x["final_test_accuracy"]),
            "never" if ttt is None else f"{ttt:.1f}", speed, nbytes(g),
            ratio(dense_g / g) if g and dense_g else "-",
            nbytes(x["gradient_bytes_per_step"]),
            nbytes(x["exchange_bytes_per_step"]),
            f"{x['samples_per_second']:,.0f}",
            f"{step_s:.3f}" if step_s else "-",
            f"{step_s / link_s:.2f}x" if step_s and link_s else "-",
            f"{x['epochs_done']:.2f}"]


def render_torch(runs, st):
    """The PyTorch example's runs (torch:*): gradwire's hook that reached the target soonest
    against the soonest of DDP's own allreduce and built-in hooks (torch:ddp*)."""
    done = [x for x in runs if x["strategy"].startswith("torch:") and x["time_to_target_seconds"]]
    ours = [x for x in done if not x["strategy"].startswith("torch:ddp")]
    theirs = [x for x in done if x["strategy"].startswith("torch:ddp")]
    if not ours or not theirs:
        return []
    a = min(ours, key=lambda x: x["time_to_target_seconds"])
    b = min(theirs, key=lambda x: x["time_to_target_seconds"])
    ta, tb = a["time_to_target_seconds"], b["time_to_target_seconds"]
    ga, gb = a["gradient_bytes_per_step"], b["gradient_bytes_per_step"]
    return ["", f"PyTorch DDP, the same torch compute on both sides: `{a['strategy']}` (gradwire's "
            f"hook) reached {st['target_accuracy']:g} in {ta:.1f} s, {tb / ta:.2f}x sooner than "
            f"the soonest of DDP's built-in hooks, `{b['strategy']}` ({tb:.1f} s), at "
            f"{nbytes(ga)} against {nbytes(gb)} gradient bytes per step over the run."]


def render_rate(r, rate, h):
    """A report's runs at one rate: the shaping check, the table, and what reached the target
    soonest or never."""
    st = r["settings"]
    base = "dense"
    runs = [x for x in r["runs"] if x["rate_mbit"] == rate]
    dense = next((x for x in runs if x["strategy"] == base), None)
    dense_ttt = dense["time_to_target_seconds"] if dense else None
    out = [f"{h} {rate} Mbit/s per host" if rate else f"{h} Unshaped", ""]
    out += render_probe(r, rate)
    out += table(["strategy", "final acc", "time to target (s)", "speedup vs dense",
                  "grad B/step after warm-up", "dense grad B / this", "grad B/step (run)",
                  "exchange B/step", "samples/s", "s/step", "step / link time",
                  "epochs"], [rate_row(x, rate, dense) for x in runs])
    out += render_hierarchy(runs)
    reached = [x for x in runs if x["time_to_target_seconds"]]
    best = min(reached, key=lambda x: x["time_to_target_seconds"]) if reached else None
    if dense_ttt and best and best["strategy"] != base:
        out += ["", f"Soonest to {st['target_accuracy']:g}: `{best['strategy']}`, "
                f"{dense_ttt / best['time_to_target_seconds']:.1f}x "
                f"sooner than `{base}` ({best['time_to_target_seconds']:.1f} vs "
                f"{dense_ttt:.1f} s)."]
    out += render_auto(runs)
    out += render_torch(runs, st)
    never = [x["strategy"] for x in runs if x["time_to_target_seconds"] is None]
    if never:
        out += ["", "Never reached the target"
                + (f" within the time budget of {st['time_budget']:g} s" if st.get(
                    "time_budget") else "") + ": "
                + ", ".join(f"`{n}`" for n in never) + "."]
    out.append("")
    return out


def render_lowband(manifest):
    externals = manifest.get("external", {})
    out = ["## Low-bandwidth runs", ""]
    for rel in [LOWBAND] + lowband_runs():
        ext = externals.get(rel)
        if not ext:
            raise InputError(f"{REPORTS}/manifest.json has no external entry for {rel}")
        r = load(rel)
        # The plot beside the report, linked from RESULTS.md's folder.
        png = os.path.relpath(os.path.join(os.path.dirname(rel), "report.png"),
                              os.path.dirname(RESULTS))
        if rel == LOWBAND:
            out += render_lowband_report(r, ext, rel, png, 3)
        else:
            out += ["", f"### {ext['title']}", ""]
            out += render_lowband_report(r, ext, rel, png, 4)
        out.append("")
    for rel, rounds in lowband_series():
        ext = externals.get(rel)
        if not ext:
            raise InputError(f"{REPORTS}/manifest.json has no external entry for {rel}")
        out += render_series(rel, rounds, ext) + [""]
    return out
