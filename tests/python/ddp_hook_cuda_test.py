#!/usr/bin/env python3
"""gradwire's DDP hook on CUDA buckets against the same hook on CPU buckets, at 1 rank.

    ddp_hook_cuda_test.py

One process holds two groups: NCCL for the CUDA hook, Gloo for the CPU one. For every strategy
(none, fp16, topk, dgc, powersgd) both hooks get the same gradients, bucket by bucket, for several
steps, through the hook function DDP calls (python/gradwire/torch.py: the stream ordering
included). The averaged buckets must be equal bit for bit at every step, and so must what each
keeps per parameter (the residual, DGC's accumulated velocity: the same indices were selected),
as Note [The DDP hook on a GPU] promises; a CUDA hook saved and loaded into a new one continues
exactly. Exits 77 (CTest: skipped) without torch, the extension, or a CUDA device.
"""
import faulthandler
import os
import sys
import tempfile

faulthandler.enable()  # a crash in the extension prints the Python stack that reached it

try:
    import torch
    import torch.distributed as dist
    import gradwire.torch as gwt
except ImportError as e:  # not an error: no torch here, or the package is not built
    print("SKIPPED: %s" % e)
    sys.exit(77)

# The reference MLP's parameters (examples/pytorch), in DDP's two buckets after its rebuild
# (the last layers first, as backward produces them).
SHAPES = [(1024, 784), (1024,), (512, 1024), (512,), (10, 512), (10,)]
BUCKETS = [[4, 5, 2, 3], [0, 1]]
STEPS = 8
SPARSE = {"dgc_sparsity": 0.99, "dgc_min_numel": 1000}
STRATEGIES = [
    ("none", {}),
    ("fp16", {}),
    ("topk", SPARSE),
    ("dgc", SPARSE),
    ("powersgd", {"powersgd_rank": 2, "powersgd_start_step": 2}),
]


class Bucket:
    """What the hook reads of a torch.distributed.GradBucket."""

    def __init__(self, index, params, buffer, last):
        self._index, self._params, self._buffer, self._last = index, params, buffer, last

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def parameters(self):
        return self._params

    def gradients(self):
        out, offset = [], 0
        for p in self._params:
            out.append(self._buffer[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        return out

    def is_last(self):
        return self._last


def gradients(step):
    g = torch.Generator().manual_seed(7 + step)
    return [torch.randn(s, generator=g) * (1 + i) for i, s in enumerate(SHAPES)]


def run_step(state, hook, params, grads, device):
    """Every bucket of one step through `hook`; the averaged buckets, on the host."""
    out = []
    for b, members in enumerate(BUCKETS):
        flat = torch.cat([grads[i].reshape(-1) for i in members])
        # Made by a kernel on the current stream right before the hook: the hook must order
        # gradwire's stream after it.
        buffer = flat.to(device) * 1.0
        future = hook(state, Bucket(b, [params[i] for i in members], buffer,
                                    b == len(BUCKETS) - 1))
        out.append(future.value().cpu())
    return out


def same_bits(a, b):
    return a.shape == b.shape and torch.equal(a.view(torch.int32), b.view(torch.int32))


def check(name, settings, gloo, device):
    cpu_params = [torch.zeros(s, requires_grad=True) for s in SHAPES]
    gpu_params = [torch.zeros(s, device=device, requires_grad=True) for s in SHAPES]
    cpu_state, hook = gwt.hook(cpu_params, gloo, compressor=name, momentum=0.9, **settings)
    gpu_state, _ = gwt.hook(gpu_params, compressor=name, momentum=0.9, **settings)
    assert gpu_state._hook.device.startswith("cuda"), gpu_state._hook.device
    assert gpu_state._hook.stream_handle != 0
    for step in range(STEPS):
        grads = gradients(step)
        want = run_step(cpu_state, hook, cpu_params, grads, "cpu")
        got = run_step(gpu_state, hook, gpu_params, grads, device)
        for b, (w, g) in enumerate(zip(want, got)):
            if not same_bits(w, g):
                diff = (w - g).abs()
                raise AssertionError("%s step %d bucket %d: CUDA differs from CPU in %d of %d "
                                     "elements (largest %g)" % (name, step, b,
                                                                int((diff != 0).sum()), w.numel(),
                                                                float(diff.max())))
    for i in range(len(SHAPES)):
        if not same_bits(cpu_state.kept(i), gpu_state.kept(i)):
            raise AssertionError("%s: what the hook keeps of parameter %d differs" % (name, i))
    assert cpu_state.gradient_bytes_sent == gpu_state.gradient_bytes_sent, name

    # A CUDA hook's state, saved and loaded into a new one, continues exactly.
    resumed, _ = gwt.hook(gpu_params, compressor=name, momentum=0.9, **settings)
    resumed.load_state_dict(gpu_state.state_dict())
    grads = gradients(STEPS)
    want = run_step(gpu_state, hook, gpu_params, grads, device)
    got = run_step(resumed, hook, gpu_params, grads, device)
    assert all(same_bits(w, g) for w, g in zip(want, got)), name + ": resumed run differs"
    print("%-8s CUDA == CPU bit for bit over %d steps, and after a save and load; %d bytes sent"
          % (name, STEPS, gpu_state.gradient_bytes_sent))


def main():
    if not torch.cuda.is_available():
        print("SKIPPED: torch sees no CUDA device")
        return 77
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(os.path.join(tmp, "store"), 1)
        dist.init_process_group("nccl", store=store, rank=0, world_size=1, device_id=device)
        gloo = dist.new_group(backend="gloo")
        try:
            # A CUDA bucket given to a CPU hook is refused, naming both devices.
            state, hook = gwt.hook([torch.zeros(4, requires_grad=True)], gloo)
            try:
                state._hook.exchange(torch.zeros(4, device=device), [0], True)
                raise AssertionError("a CUDA bucket was taken by a CPU hook")
            except ValueError as e:
                assert "cuda" in str(e) and "cpu" in str(e), e
            for name, settings in STRATEGIES:
                check(name, settings, gloo, device)
        finally:
            dist.destroy_process_group()
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
