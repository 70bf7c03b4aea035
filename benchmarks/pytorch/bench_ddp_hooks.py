#!/usr/bin/env python3
"""The time each DDP communication hook adds to a training step, side by side in one run.

    bench_ddp_hooks.py --device cuda|cpu [--batch 256] [--steps 200] [--warmup 20]
                       [--rounds 3] [--report PATH]

One rank (NCCL on cuda, Gloo on cpu), the reference MLP of examples/pytorch (784-1024-512-10),
a fixed random batch, plain SGD. Every variant is the same DDP step; only the hook differs:
`no_exchange` returns the bucket untouched (the step without any exchange), DDP's own allreduce,
fp16 and PowerSGD rank-1 hooks, and gradwire's hook under none, fp16, topk, dgc and powersgd.
A variant's time is the median over rounds of (device time of `steps` steps) / steps, measured
with CUDA events (wall clock on the CPU), the variants interleaved round by round; `added_ms` is
its time less no_exchange's. `floor_ms` is the physical floor of a hook's own work: reading and
writing the gradients once (2 x 4 bytes per parameter) at the device-to-device copy bandwidth
measured in the same run. Target (issue 45): gradwire's dgc and powersgd each add less than
DDP's PowerSGD rank-1 hook; printed as verdicts, not an exit status.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="", help="comma-separated variant names (default: all)")
    p.add_argument("--profile", default="",
                   help="comma-separated variants to run 20 more steps each under torch.profiler: "
                        "the CUDA runtime calls per step (launches, synchronisations, copies) in "
                        "the report, the profiler's table beside it (REPORT.profile.txt)")
    p.add_argument("--report", default="")
    return p.parse_args()


ARGS = parse_args()  # before torch: --help answers without it

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import gradwire.torch as gwt  # noqa: E402

GRADWIRE = {
    "gradwire_none": {"compressor": "none"},
    "gradwire_fp16": {"compressor": "fp16"},
    "gradwire_topk": {"compressor": "topk", "dgc_sparsity": 0.999},
    "gradwire_dgc": {"compressor": "dgc", "dgc_sparsity": 0.999, "momentum": 0.9},
    "gradwire_powersgd": {"compressor": "powersgd", "powersgd_rank": 1,
                          "powersgd_start_step": 2},
}
VARIANTS = ["no_exchange", "ddp_allreduce", "ddp_fp16", "ddp_powersgd_rank1"] + list(GRADWIRE)


def untouched(_state, bucket):
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def model_on(device):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 10)).to(device)


class Variant:
    def __init__(self, name, device):
        self.name = name
        self.model = model_on(device)
        self.ddp = DDP(self.model, device_ids=[device.index] if device.type == "cuda" else None)
        self.state = None
        if name == "no_exchange":
            self.ddp.register_comm_hook(None, untouched)
        elif name == "ddp_fp16":
            self.ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        elif name == "ddp_powersgd_rank1":
            ps = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1,
                                             start_powerSGD_iter=2)
            self.ddp.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
        elif name in GRADWIRE:
            settings = dict(GRADWIRE[name])
            self.state, hook = gwt.hook(self.model, **settings)
            self.ddp.register_comm_hook(self.state, hook)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.loss = torch.nn.CrossEntropyLoss()

    def steps(self, n, x, y):
        for _ in range(n):
            self.optimizer.zero_grad(set_to_none=False)
            self.loss(self.ddp(x), y).backward()
            self.optimizer.step()


def timed(device, fn):
    """Seconds fn takes: CUDA events on the device, the wall clock on the CPU."""
    if device.type != "cuda":
        begin = time.perf_counter()
        fn()
        return time.perf_counter() - begin
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def copy_bandwidth(device):
    """Bytes read and written per second by a device-to-device copy of 256 MiB (the median of 5)."""
    n = 64 << 20
    a, b = torch.ones(n, device=device), torch.empty(n, device=device)
    b.copy_(a)
    times = [timed(device, lambda: b.copy_(a)) for _ in range(5)]
    return 2 * 4 * n / statistics.median(times)


def main():
    device = torch.device(ARGS.device, 0) if ARGS.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("bench_ddp_hooks: --device cuda, but torch sees no CUDA device", file=sys.stderr)
            return 2
        torch.cuda.set_device(device)
    names = [v for v in ARGS.only.split(",") if v] or VARIANTS
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        print("bench_ddp_hooks: unknown variant(s) %s; accepted: %s"
              % (", ".join(unknown), ", ".join(VARIANTS)), file=sys.stderr)
        return 2
    if "no_exchange" not in names:
        names.insert(0, "no_exchange")
    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(os.path.join(tmp, "store"), 1)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", store=store, rank=0,
                                world_size=1)
        try:
            report = run(device, names)
        finally:
            dist.destroy_process_group()
    text = json.dumps(report, indent=2)
    if ARGS.report and report.get("profile_tables"):
        with open(ARGS.report + ".profile.txt", "w") as f:
            f.write(report.pop("profile_tables"))
        text = json.dumps(report, indent=2)
    if ARGS.report:
        with open(ARGS.report, "w") as f:
            f.write(text + "\n")
    return 0


def run(device, names):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(ARGS.batch, 784, generator=g).to(device)
    y = torch.randint(0, 10, (ARGS.batch,), generator=g).to(device)
    variants = [Variant(n, device) for n in names]
    for v in variants:  # DDP's bucket rebuild, PowerSGD's start, warm caches
        v.steps(ARGS.warmup, x, y)
    seconds = {v.name: [] for v in variants}
    for _ in range(ARGS.rounds):
        for v in variants:
            seconds[v.name].append(timed(device, lambda: v.steps(ARGS.steps, x, y)) / ARGS.steps)
    bandwidth = copy_bandwidth(device)
    numel = sum(p.numel() for p in variants[0].model.parameters())
    floor_ms = 2 * 4 * numel / bandwidth * 1e3
    base = statistics.median(seconds["no_exchange"]) * 1e3
    rows = {}
    print("%-20s %10s %10s %10s" % ("variant", "ms/step", "added ms", "floor ms"))
    for v in variants:
        ms = statistics.median(seconds[v.name]) * 1e3
        rows[v.name] = {"ms_per_step": ms, "added_ms": ms - base, "floor_ms": floor_ms,
                        "rounds_ms": [s * 1e3 for s in seconds[v.name]]}
        if v.state is not None:
            rows[v.name]["compressor"] = v.state.compressor
        print("%-20s %10.4f %10.4f %10.4f" % (v.name, ms, ms - base, floor_ms))
    report = {"benchmark": "bench_ddp_hooks", "device": str(device),
              "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "torch": torch.__version__, "batch": ARGS.batch, "steps": ARGS.steps,
              "warmup": ARGS.warmup, "rounds": ARGS.rounds, "parameters": numel,
              "copy_bandwidth_gbps": bandwidth / 1e9, "variants": rows, "verdicts": {}}
    profile(device, variants, x, y, report)
    reference = rows.get("ddp_powersgd_rank1")
    if reference:
        report["ddp_powersgd_rank1_added_seconds"] = reference["added_ms"] / 1e3
    for name in ("gradwire_dgc", "gradwire_powersgd"):
        if reference and name in rows:
            met = rows[name]["added_ms"] < reference["added_ms"]
            report["verdicts"][name + "_adds_less_than_ddp_powersgd_rank1"] = met
            report[name + "_added_seconds"] = rows[name]["added_ms"] / 1e3
            report[name + "_added_vs_ddp_powersgd_rank1"] = (
                rows[name]["added_ms"] / reference["added_ms"] if reference["added_ms"] > 0
                else float("inf"))
            print("%s adds %.4f ms, DDP's PowerSGD rank 1 %.4f ms: target %s"
                  % (name, rows[name]["added_ms"], reference["added_ms"],
                     "met" if met else "MISSED"))
    return report


RUNTIME_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaStreamSynchronize",
                 "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpyAsync", "cudaMemcpy",
                 "cudaStreamWaitEvent", "cudaEventRecord", "cudaMalloc", "cudaFree")


def profile(device, variants, x, y, report):
    """The CUDA runtime calls per step of each --profile variant, from torch.profiler."""
    wanted = [v for v in ARGS.profile.split(",") if v]
    if not wanted:
        return
    from torch.profiler import ProfilerActivity
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    steps, tables = 20, []
    report["profile"] = {}
    for v in variants:
        if v.name not in wanted:
            continue
        with torch.profiler.profile(activities=activities) as prof:
            v.steps(steps, x, y)
            if device.type == "cuda":
                torch.cuda.synchronize()
        averages = prof.key_averages()
        calls = {e.key: e.count / steps for e in averages if e.key in RUNTIME_CALLS}
        report["profile"][v.name] = {"steps": steps, "runtime_calls_per_step": calls}
        tables.append("# %s, %d steps\n%s\n" % (v.name, steps, averages.table(
            sort_by="self_cpu_time_total", row_limit=30)))
        print("%s: CUDA runtime calls per step: %s" % (v.name, calls))
    report["profile_tables"] = "\n".join(tables)


if __name__ == "__main__":
    sys.exit(main())
