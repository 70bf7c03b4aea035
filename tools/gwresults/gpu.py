"""./gradwire.sh gpu-check's reports: one section per run."""

from . import inputs
from .fmt import ratio, table, verdict
from .inputs import GPU_BENCHES, GPU_REPORTS


def gpu_reports():
    return inputs.json_files(GPU_REPORTS)


def render_gpu():
    out = ["## GPU", "",
           "From `./gradwire.sh gpu-check` (docs/GPU.md), one report per run in "
           f"`{GPU_REPORTS}/`; a "
           "run may be part of the check (its tests listed; no benchmarks).", ""]
    reports = gpu_reports()
    if not reports:
        return out + ["No GPU run yet."]
    for rel, r in reports:
        out += [f"### {r['date']}, {r['gpu']}, commit {r['commit'][:7]}", "",
                f"`{rel}`: verdict **{r['verdict']}**; driver {r['driver_version']}, CUDA "
                f"toolkit {r['cuda_toolkit']}; {len(r['tests'])} GPU tests: " +
                ", ".join(f"{k} {len(v)}" for k, v in sorted(r["tests_by_result"].items()) if v)
                + ".", ""]
        out += table(["GPU test", "result", "seconds"],
                     [[f"`{t['name']}`", t["result"], f"{t['seconds']:.1f}"] for t in r["tests"]])
        benches = {b["name"]: b["report"] for b in r["benchmarks"] if isinstance(b["report"], dict)}
        rows = []
        for name in ("train_cpu_vs_cuda", "train_cuda_np2"):
            t = benches.get(name)
            if not t:
                continue
            n = t["world_size"]
            for key, x in sorted(t.get("gpu_vs_cpu_samples_per_second", {}).items()):
                cpu = t["cpu_mode_every_core"][f"cpu/{key}"]
                rows.append([f"{key}: GPU vs CPU on {t['hardware_threads']} cores ({n} rank)",
                             ratio(x), f"CPU {cpu['samples_per_second']:.0f} samples/s "
                             f"({cpu['from']}); one rank with a BLAS thread per core "
                             f"{cpu['every_core_threads']:.0f}, which the GPU's "
                             f"{t['variants'][f'cuda/{key}']['samples_per_second']:.0f} is "
                             f"{t['variants'][f'cuda/{key}']['samples_per_second'] / cpu['every_core_threads']:.1f}x"
                             + (f"; target at least 50x: {verdict(t['targets']['cnn_b256_speedup_met'])}"
                                if key == "cnn/b256/fp32" else "")])
            for key, e in sorted(t.get("exchange", {}).items()):
                rows.append([f"{key} b256 step vs no exchange ({n} rank{'s' if n > 1 else ''})",
                             ratio(e["step_vs_no_exchange"]),
                             f"{e['share_waiting_on_exchange'] * 100:.0f}% of the step waits on "
                             "the exchange"])
        c = benches.get("compress_cuda")
        if c:
            rows.append(["DGC encode / read pass (25M floats)", ratio(c["time_vs_read_pass"]),
                         f"target at most 2: {verdict(c['targets']['time_vs_read_pass_met'])}"])
            rows.append(["DGC encode speed-up vs exact top-k by sort", ratio(c["speedup_vs_sort"]),
                         f"target at least 20: {verdict(c['targets']['speedup_vs_sort_met'])}"])
        for name in ("allreduce_cuda_np1", "allreduce_cuda_np2"):
            a = benches.get(name)
            if a:
                rows.append([f"gradwire / bare {a['bare']} at 16 MB and above "
                             f"({a['world_size']} rank{'s' if a['world_size'] > 1 else ''})",
                             ratio(a["max_ratio_at_or_above_16MB"]),
                             f"target at most 1.05: "
                             f"{verdict(a['targets']['ratio_at_or_above_16MB_met'])}"])
        if rows:
            out += [""] + table(["benchmark figure", "value", "detail"], rows)
        if benches.get("ddp_hooks_cuda"):
            out += [""] + ddp_hooks_table(benches["ddp_hooks_cuda"])
        out += [""]
    for rel, h in inputs.json_files(GPU_BENCHES):
        out += [f"### {h['device_name']}: DDP hooks at commit {h['commit'][:7]}", "",
                f"`{rel}` (`{h['command']}`), outside a gpu-check run; "
                f"{h['note']}", ""] + ddp_hooks_table(h) + [""]
    return out


def ddp_hooks_table(h):
    """benchmarks/pytorch/bench_ddp_hooks.py's report: the time each hook adds to a step."""
    rows = []
    for name, v in h["variants"].items():
        calls = h.get("profile", {}).get(name, {}).get("runtime_calls_per_step", {})
        syncs = sum(calls.get(k, 0) for k in ("cudaStreamSynchronize", "cudaDeviceSynchronize",
                                              "cudaEventSynchronize"))
        rows.append([f"`{name}`", f"{v['ms_per_step']:.3f}", f"{v['added_ms']:.3f}",
                     f"{v['floor_ms']:.4f}",
                     f"{syncs:.1f} syncs, {calls.get('cudaMalloc', 0):.0f} cudaMalloc, "
                     f"{calls.get('cudaLaunchKernel', 0):.0f} launches" if calls else ""])
    verdicts = ", ".join(f"{k}: {verdict(x)}" for k, x in sorted(h.get("verdicts", {}).items()))
    return ([f"DDP communication hooks, 1 rank, the reference MLP at batch {h['batch']} "
             f"(torch {h['torch']}; copy bandwidth {h['copy_bandwidth_gbps']:.0f} GB/s; "
             f"{verdicts}):", ""] +
            table(["hook", "ms per step", "added ms", "floor ms", "CUDA runtime calls per step"],
                  rows))
