#!/usr/bin/env python3
"""gradwire's DDP hook (gradwire.torch) on Gloo, N processes on this machine.

    ddp_hook_test.py CASE|all RANKS

`all` runs every case in one set of processes (torch is imported once per rank). Exits 77 (CTest: skipped) where torch or gradwire's extension cannot be imported. Each case runs
in RANKS processes that share a FileStore; every rank checks and a failure on any rank fails the
test (torch.multiprocessing re-raises it).
"""
import datetime
import faulthandler
import os
import sys
import tempfile
import traceback

faulthandler.enable()  # a crash in the extension prints the Python stack that reached it

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP
    import gradwire.torch as gwt
except ImportError as e:  # not an error: this machine has no torch, or the package is not built
    print("SKIPPED: %s" % e)
    sys.exit(77)

STEPS = 6


def model_for(seed, wide=False):
    torch.manual_seed(seed)
    width = 48 if wide else 32
    return torch.nn.Sequential(torch.nn.Linear(20, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 5))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(8, 20, generator=g), torch.randint(0, 5, (8,), generator=g)


def train(ddp, optimizer, steps, first_step=0, observe=None):
    loss_fn = torch.nn.CrossEntropyLoss()
    for step in range(first_step, first_step + steps):
        x, y = batch(dist.get_rank(), step)
        optimizer.zero_grad()
        loss_fn(ddp(x), y).backward()
        if observe:
            observe(step)
        optimizer.step()


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def ddp(model, hook_state=None, hook=None, **kwargs):
    wrapped = DDP(model, bucket_cap_mb=kwargs.pop("bucket_cap_mb", 0.002), **kwargs)
    if hook is not None:
        wrapped.register_comm_hook(hook_state, hook)
    return wrapped


def expect(cond, what):
    if not cond:
        raise AssertionError("rank %d: %s" % (dist.get_rank(), what))


# --- cases: each runs on every rank -------------------------------------------------------------

def case_none_equals_ddp():
    """none's hook gives DDP's default allreduce, bit for bit."""
    reference = model_for(1)
    ref = ddp(reference)
    train(ref, torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9), STEPS)
    mine = model_for(1)
    state, hook = gwt.hook(mine, compressor="none")
    m = ddp(mine, state, hook)
    train(m, torch.optim.SGD(mine.parameters(), lr=0.1, momentum=0.9), STEPS)
    expect(torch.equal(flat_params(reference), flat_params(mine)), "none differs from DDP's allreduce")
    expect(state.step == STEPS, "the hook counted %d steps, not %d" % (state.step, STEPS))


def case_fp16_matches_ddp_fp16():
    """fp16's hook against DDP's fp16_compress_hook on the same gradients, bucket by bucket: the
    same half-precision allreduce, equal up to its roundings. Not bit for bit: DDP casts and then
    divides by the world size in half precision, gradwire divides in fp32 and casts once (as
    DDP's allreduce_hook divides before it sums). Over the run, as close to the exact fp32
    average as DDP's (within 5%)."""
    model = model_for(2)
    state, hook = gwt.hook(model, compressor="fp16")
    n = dist.get_world_size()
    errors = {"mine": 0.0, "ddp": 0.0}
    half_bytes = [0]  # what an allreduce of each bucket in fp16 sends (gradwire's counters)

    def comparing_hook(s, bucket):
        buf = bucket.buffer()
        bucket_input = buf.clone()
        exact = buf.clone()
        dist.all_reduce(exact)
        exact /= n
        theirs = buf.to(torch.float16).div_(n)  # fp16_compress_hook's arithmetic
        dist.all_reduce(theirs)
        theirs = theirs.float()
        half_bytes[0] += gwt.allreduce_bytes(buf.numel(), 2, dist.get_rank(), n)
        fut = hook(s, bucket)
        # Element by element, the same sum up to its roundings: n half-precision additions of
        # addends as large as the largest rank's, and the cast.
        scale = bucket_input.abs()
        dist.all_reduce(scale, op=dist.ReduceOp.MAX)
        ulp = torch.clamp(scale / n * 2.0 ** -10, min=2.0 ** -24)
        worst = ((buf - theirs).abs() / ulp).max().item()
        expect(worst <= n + 2, "bucket %d: %.1f half ulps (of the addends) from DDP's fp16 "
               "result" % (bucket.index(), worst))
        errors["mine"] += (buf - exact).abs().sum().item()
        errors["ddp"] += (theirs - exact).abs().sum().item()
        return fut

    train(ddp(model, state, comparing_hook), torch.optim.SGD(model.parameters(), lr=0.1), STEPS)
    expect(state.gradient_bytes_sent == half_bytes[0], "sent %d gradient bytes, not the %d of "
           "fp16 allreduces" % (state.gradient_bytes_sent, half_bytes[0]))
    expect(errors["mine"] <= errors["ddp"] * 1.05 + 1e-12,
           "gradwire's fp16 is farther from the fp32 average (%g) than DDP's (%g)"
           % (errors["mine"], errors["ddp"]))


def conservation(compressor, **settings):
    """Over the steps, what every rank produced equals what was sent (n x the average DDP got)
    plus what the ranks keep: nothing is lost or made up, across DDP's bucket rebuild after the
    first iteration too."""
    model = model_for(3)
    state, hook = gwt.hook(model, compressor=compressor, **settings)
    produced = [torch.zeros_like(p) for p in model.parameters()]
    received = [torch.zeros_like(p) for p in model.parameters()]

    def recording_hook(s, bucket):
        index = s._bucket_parameters(bucket)
        for i, g in zip(index, bucket.gradients()):
            produced[i] += g.detach().reshape(produced[i].shape)
        fut = hook(s, bucket)
        for i, g in zip(index, bucket.gradients()):
            received[i] += g.detach().reshape(received[i].shape)
        return fut

    m = ddp(model, state, recording_hook)
    train(m, torch.optim.SGD(model.parameters(), lr=0.05), STEPS)
    n = dist.get_world_size()
    for i, p in enumerate(model.parameters()):
        total = produced[i].clone()
        dist.all_reduce(total)
        kept = state.kept(i).reshape(p.shape)
        dist.all_reduce(kept)
        balance = n * received[i] + kept
        err = (balance - total).abs().max().item()
        scale = total.abs().max().item() + 1e-12
        expect(err <= 1e-5 * scale * STEPS, "%s: parameter %d: sent + kept differs from produced "
               "by %g (of %g)" % (compressor, i, err, scale))
    expect(state.gradient_bytes_sent > 0 or n == 1, "nothing was counted as sent")


def case_topk_conserves():
    conservation("topk", dgc_sparsity=0.9)


def case_dgc_conserves():
    conservation("dgc", dgc_sparsity=0.9)  # momentum 0: the velocity is the gradient


def case_powersgd_full_rank_is_dense():
    """At a rank at which every matrix goes whole, powersgd is dense (up to where it divides)."""
    a, b = model_for(4), model_for(4)
    sa, ha = gwt.hook(a, compressor="none")
    sb, hb = gwt.hook(b, compressor="powersgd", powersgd_rank=64, powersgd_start_step=0)
    train(ddp(a, sa, ha), torch.optim.SGD(a.parameters(), lr=0.1), STEPS)
    train(ddp(b, sb, hb), torch.optim.SGD(b.parameters(), lr=0.1), STEPS)
    expect(torch.allclose(flat_params(a), flat_params(b), rtol=1e-5, atol=1e-6),
           "powersgd at full rank differs from dense")


def case_resume_is_exact():
    """A run stopped and resumed from its state dicts (model, optimizer, hook) continues exactly."""
    settings = dict(compressor="dgc", dgc_sparsity=0.9)
    straight = model_for(5)
    s, h = gwt.hook(straight, momentum=0.9, **settings)
    opt = torch.optim.SGD(straight.parameters(), lr=0.05)
    train(ddp(straight, s, h), opt, STEPS)

    first = model_for(5)
    s1, h1 = gwt.hook(first, momentum=0.9, **settings)
    opt1 = torch.optim.SGD(first.parameters(), lr=0.05)
    train(ddp(first, s1, h1), opt1, STEPS // 2)
    saved = (first.state_dict(), opt1.state_dict(), s1.state_dict())

    second = model_for(99)  # other initial values: everything must come from the checkpoint
    second.load_state_dict(saved[0])
    s2, h2 = gwt.hook(second, momentum=0.9, **settings)
    s2.load_state_dict(saved[2])
    opt2 = torch.optim.SGD(second.parameters(), lr=0.05)
    opt2.load_state_dict(saved[1])
    train(ddp(second, s2, h2), opt2, STEPS - STEPS // 2, first_step=STEPS // 2)
    expect(torch.equal(flat_params(straight), flat_params(second)), "the resumed run differs")
    expect(s2.step == STEPS, "the resumed hook is at step %d, not %d" % (s2.step, STEPS))


def same_on_all_ranks(t):
    gathered = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, t)
    return all(torch.equal(g, gathered[0]) for g in gathered)


def case_local_sgd_averages_on_schedule():
    """LocalSGD (local_sgd, k = 3): each rank steps on its own gradients, and the parameters are
    the ranks' average after steps 2 and 5, the same on every rank, and only then."""
    model = model_for(8)
    local = gwt.LocalSGD(model, sync="local_sgd", local_sgd_k=3)
    m = ddp(model, *local.hook())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    averaged = []
    for step in range(7):
        x, y = batch(dist.get_rank(), step)
        opt.zero_grad()
        loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()
        before = flat_params(model).clone()
        total = before.clone()
        dist.all_reduce(total)
        if local.step(loss=loss.item(), lr=0.1):
            averaged.append(step)
            expect(torch.allclose(flat_params(model), total / dist.get_world_size(), atol=1e-6),
                   "step %d: the parameters are not the ranks' average" % step)
        same = same_on_all_ranks(flat_params(model))
        expect(same == (step in (2, 5) or dist.get_world_size() == 1),
               "step %d: parameters %s across ranks" % (step, "equal" if same else "differ"))
    expect(averaged == [2, 5], "averaged after steps %s, not [2, 5]" % averaged)
    expect(local.parameter_bytes_sent > 0 or dist.get_world_size() == 1, "nothing counted")


def expect_value_error(make, *needles):
    try:
        make()
    except ValueError as e:
        for needle in needles:
            expect(needle in str(e), "the error %r does not name %r" % (str(e), needle))
        return
    raise AssertionError("rank %d: no ValueError" % dist.get_rank())


def case_bad_configuration():
    """A bad value, a setting the hook cannot honour, and configurations that differ across ranks
    are one ValueError on every rank."""
    m = model_for(6)
    expect_value_error(lambda: gwt.hook(m, compressor="bogus"), "GRADWIRE_COMPRESSOR", "dgc")
    expect_value_error(lambda: gwt.hook(m, fusion_threshold_mb=16), "GRADWIRE_FUSION_THRESHOLD_MB",
                       "bucket_cap_mb")
    # DiLoCo's outer step is the C++ DistributedOptimizer's; LocalSGD says so rather than average.
    expect_value_error(lambda: gwt.LocalSGD(m, sync="diloco", local_sgd_k=4), "GRADWIRE_SYNC=diloco",
                       "local_sgd")
    if dist.get_world_size() > 1:
        sparsity = "0.99" if dist.get_rank() == 0 else "0.9"
        expect_value_error(lambda: gwt.hook(m, compressor="topk", dgc_sparsity=sparsity),
                           "GRADWIRE_DGC_SPARSITY")


def case_layout_mismatch():
    """A rank whose model differs fails on every rank, naming the layouts; no hang."""
    if dist.get_world_size() == 1:
        return
    m = model_for(7, wide=dist.get_rank() == dist.get_world_size() - 1)
    expect_value_error(lambda: gwt.hook(m, compressor="topk"), "parameter[0]")


class CorruptingBackend(torch._C._distributed_c10d.Backend):
    """Gloo, except that what arrives from rank 1 in a sparse exchange is damaged on every rank: in
    an allgather, the first word after its block's first (a count, then the pairs); in an
    alltoall, the same word of its part for this rank (the split's first step)."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self.inner = dist.ProcessGroupGloo(store, rank, size, timeout)

    def getBackendName(self):
        return "corrupting"

    def allreduce(self, *a):
        return self.inner.allreduce(*a)

    def broadcast(self, *a):
        return self.inner.broadcast(*a)

    def barrier(self, *a):
        return self.inner.barrier(*a)

    def allgather(self, outputs, inputs, *a):
        work = self.inner.allgather(outputs, inputs, *a)
        work.wait()
        if outputs[0][1].dtype == torch.int32 and outputs[0][1].numel() > 1:
            outputs[0][1][1] = 123456789
        return work

    def all_to_all_single(self, output, input, output_splits, input_splits, *a):
        inner = getattr(self.inner, "all_to_all_single", None) or self.inner.alltoall_base
        work = inner(output, input, output_splits, input_splits, *a)
        work.wait()
        if output.dtype == torch.int32 and len(output_splits) > 1 and output_splits[1] >= 3:
            output[output_splits[0] + 1] = 123456789
        return work


def case_malformed_payload():
    """A peer's damaged sparse message (through a process group whose backend damages what
    arrives from rank 1) is a RuntimeError naming rank 1 on every rank, under every sparse
    algorithm; no hang."""
    if dist.get_world_size() == 1:
        return
    try:
        dist.Backend.register_backend("corrupting", CorruptingBackend, devices=["cpu"])
    except (AttributeError, TypeError) as e:  # torch before Python-defined backends
        print("skipped on this torch: malformed_payload (%s)" % e)
        return
    group = dist.new_group(backend="corrupting")
    algos = ["allgather", "padded"] + (["split"] if dist.get_world_size() >= 4 else [])
    for algo in algos:
        model = model_for(9)
        state, hook = gwt.hook(model, process_group=group, compressor="topk", dgc_sparsity=0.9,
                               sparse_algo=algo)
        m = ddp(model, state, hook)
        x, y = batch(dist.get_rank(), 0)
        try:
            torch.nn.CrossEntropyLoss()(m(x), y).backward()
        except RuntimeError as e:
            expect("from rank 1" in str(e) and "malformed" in str(e),
                   "%s: the error %r does not name the malformed message from rank 1"
                   % (algo, str(e)[:300]))
            continue
        raise AssertionError("rank %d: %s: a malformed message was accepted" % (dist.get_rank(),
                                                                               algo))


CASES = {name[len("case_"):]: f for name, f in globals().items() if name.startswith("case_")}


def run(rank, world, case, store_path):
    torch.set_num_threads(1)
    store = dist.FileStore(store_path, world)
    # A rank that fails ends at once (below); its peers' collectives then time out instead of
    # waiting for it forever.
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        for name in sorted(CASES) if case == "all" else [case]:
            CASES[name]()
            dist.barrier()
            if rank == 0:
                print("ok: %s on %d ranks" % (name, world), flush=True)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)  # no destroy_process_group: it would wait for the peers
    dist.destroy_process_group()


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in list(CASES) + ["all"]:
        sys.exit("usage: ddp_hook_test.py {all,%s} RANKS" % ",".join(sorted(CASES)))
    case, world = sys.argv[1], int(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        # fork: each rank starts from this process, torch already imported, instead of importing
        # it again in a fresh interpreter (spawn); nothing here has started a thread yet.
        mp.start_processes(run, args=(world, case, os.path.join(tmp, "store")), nprocs=world,
                           join=True, start_method="fork")


if __name__ == "__main__":
    main()
