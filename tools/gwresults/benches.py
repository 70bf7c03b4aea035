"""The four benchmarks' reports (./gradwire.sh bench), a section each."""
from .fmt import nbytes, secs, table, verdict
from .inputs import REPORTS, load, provenance


def bench_allreduce(r):
    # The target is the one gradwire_bench_allreduce prints (its report does not carry it).
    target = 1.05
    out = ["### Allreduce", "",
           f"`gradwire_bench_allreduce`, {r['world_size']} ranks: gradwire's dense step against a "
           "bare `MPI_Allreduce` of the same buffer (`gw`), and with a separate divide pass "
           "(`gw+div`). Times are medians of the slowest rank.", ""]
    rows = [[nbytes(x["bytes"]), secs(x["mpi_seconds"]), secs(x["gradwire_seconds"]),
             f"{x['ratio']:.3f}", secs(x["gradwire_separate_divide_seconds"]),
             f"{x['ratio_separate_divide']:.3f}", f"{x['mpi_busbw_gbps']:.2f}", x["wrong"]]
            for x in r["rows"]]
    out += table(["bytes", "MPI_Allreduce", "gw", "gw / mpi", "gw+div", "gw+div / mpi",
                  "mpi busbw (GB/s)", "wrong"], rows)
    m = r["max_ratio_at_or_above_1MB"]
    out += ["", f"- gw / mpi, largest at 1 MB and above: **{m:.3f}** (target at most {target}): "
            f"{verdict(m <= target)}; with a separate divide pass: "
            f"{r['max_ratio_separate_divide_at_or_above_1MB']:.3f}.",
            f"- wrong elements: {sum(x['wrong'] for x in r['rows'])}."]
    return out


def bench_compress(r):
    t = r["targets"]
    out = ["### Compression", "",
           f"`gradwire_bench_compress`, one thread: the DGC top-k encode of {r['numel']:,} "
           f"N(0,1) floats at sparsity {r['sparsity']:g} (k = {r['k']:,}) against "
           "`std::nth_element` exact top-k and one read pass of the buffer.", ""]
    out += table(["path", "median time"], [
        ["encode (sampled threshold, select, pack)", secs(r["encode_seconds"])],
        ["nth_element (copy included)", secs(r["nth_element_seconds"])],
        ["one read pass", secs(r["read_pass_seconds"])]])
    out += ["",
            f"- speedup over nth_element: **{r['speedup_vs_nth_element']:.1f}x** (target at least "
            f"{t['speedup_vs_nth_element_min']:g}x): {verdict(t['speedup_met'])}.",
            f"- time / one read pass: **{r['time_vs_read_pass']:.2f}** (target at most "
            f"{t['time_vs_read_pass_max']:g}): {verdict(t['time_vs_read_pass_met'])}.",
            f"- precision (selected values in the exact top k): {r['precision']:.3f}; "
            f"selected {r['selected']:,} to {r['selected_max']:,} of k; exact fallbacks "
            f"{r['exact_fallbacks']}."]
    return out


def bench_fusion(r):
    t = r["targets"]
    out = ["### Fusion", "",
           f"`gradwire_bench_fusion`, {r['world_size']} ranks: gradwire's fused exchange "
           f"({r['default_threshold_mb']:g} MiB buckets) against one `MPI_Allreduce` per tensor "
           "and one `MPI_Allreduce` of all the bytes.", ""]
    rows = []
    for name, w in r["workloads"].items():
        t = w["seconds"]
        rows.append([name, w["tensors"], f"{w['total_bytes'] / 1e6:.1f} MB",
                     secs(t["per_tensor"]), secs(t["fused"]), secs(t["gradwire_per_tensor"]),
                     secs(t["single"]), f"{r['fused_vs_single_allreduce'][name]:.3f}",
                     f"{r['per_tensor_vs_fused'][name]:.2f}",
                     f"{r['gradwire_per_tensor_vs_fused'][name]:.2f}"])
    out += table(["workload", "tensors", "bytes", "per-tensor MPI", "fused",
                  "gradwire, a bucket per tensor", "one allreduce of all", "fused / one",
                  "per-tensor MPI / fused", "bucket per tensor / fused"], rows)
    t = r["targets"]
    out += ["",
            f"- fused / single, worst workload: **"
            f"{max(r['fused_vs_single_allreduce'].values()):.3f}** (target at most "
            f"{t['fused_vs_single_allreduce_max']:g}): {verdict(t['fused_vs_single_met'])}.",
            f"- per-tensor / fused on the small tensors: **{r['per_tensor_vs_fused']['small']:.2f}"
            f"** (target at least {t['per_tensor_vs_fused_small_min']:g}): "
            f"{verdict(t['per_tensor_vs_fused_met'])}.",
            f"- wrong elements: {r['wrong']} ({verdict(t['wrong_met'])})."]
    sweep = r.get("threshold_sweep")
    if sweep:
        best = r.get("threshold_sweep_best_mb") or {}
        out += ["", "Threshold sweep, fused / one allreduce of all the bytes (the default "
                "threshold in bold; lowest: " + ", ".join(f"{k} at {v:g} MiB"
                                                         for k, v in best.items()) + "):", ""]
        thresholds = sorted({row["threshold_mb"] for rows in sweep.values() for row in rows})
        rows = []
        for name, srows in sweep.items():
            by = {row["threshold_mb"]: row for row in srows}
            cells = []
            for th in thresholds:
                x = by.get(th)
                text = "-" if x is None else f"{x['ratio_to_single']:.2f}"
                cells.append(f"**{text}**" if th == r["default_threshold_mb"] else text)
            rows.append([name] + cells)
        out += table(["workload"] + [f"{th:g} MiB" for th in thresholds], rows)
    return out


def bench_overlap(r):
    t = r["targets"]
    s = r["seconds"]
    out = ["### Overlap", "",
           f"`gradwire_bench_overlap`, {r['world_size']} ranks, compute `{r['compute_mode']}`: "
           f"one step on ResNet-50's {r['tensors']} tensors ({r['planned_buckets']} buckets at "
           f"{r['threshold_mb']:g} MiB), a backward stand-in scaled so compute and exchange take "
           "about the same time.", ""]
    out += table(["compute only", "exchange only", "compute then exchange", "overlapped"],
                 [[secs(s["compute_only"]), secs(s["exchange_only"]), secs(s["no_overlap"]),
                   secs(s["overlapped"])]])
    out += ["",
            f"- overlapped / max(compute, exchange): **"
            f"{r['overlapped_vs_max_compute_exchange']:.3f}** (target at most "
            f"{t['overlapped_vs_max_compute_exchange_max']:g}): {verdict(t['overlapped_met'])}; "
            f"{100 * r['hidden_fraction']:.0f}% of the shorter one hidden.",
            f"- wrong elements: {r['wrong']} ({verdict(t['wrong_met'])})."]
    return out


BENCHES = [("allreduce", bench_allreduce), ("compress", bench_compress),
           ("fusion", bench_fusion), ("overlap", bench_overlap)]


def render_benches(manifest):
    out = ["## Benchmarks", "",
           f"`./gradwire.sh bench` runs these four; their reports are `{REPORTS}/bench/`. "
           "Absolute times drift between runs on a shared machine; the ratios are of paths timed "
           "side by side, in rotation, in one run.", ""]
    files = []
    for name, fn in BENCHES:
        rel = f"bench/{name}.json"
        out += fn(load(f"{REPORTS}/{rel}")) + [""]
        files.append(rel)
    out += provenance(manifest, files)
    return out
