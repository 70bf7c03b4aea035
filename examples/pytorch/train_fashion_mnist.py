#!/usr/bin/env python3
"""The reference MLP (784-1024-512-10) on Fashion-MNIST with PyTorch DDP and gradwire's hook.

    torchrun --nproc-per-node 4 examples/pytorch/train_fashion_mnist.py --compressor dgc \
        --report report.json

Gloo on CPUs, NCCL where --device cuda. --compressor names gradwire's (none, fp16, topk, dgc,
powersgd, through gradwire.torch.hook, with any GRADWIRE_* variable of the environment), or
ddp (DDP's own allreduce), ddp-fp16, ddp-powersgd (--powersgd-rank, --powersgd-start) or
ddp-post-local-sgd (--local-sgd-period, --local-sgd-start) (DDP's built-in hooks and PyTorch's
PostLocalSGDOptimizer), for comparison. The report has gradwire_train's fields: accuracy, bytes
per step, samples/s and the history (an evaluation every --eval-every steps). The built-in hooks'
bytes are computed from the parameters' shapes as those hooks send them, in gradwire's count of
an allreduce (Note [What the counters count]); gradwire's own come from its counters.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import (default_hooks, post_localSGD_hook,
                                                         powerSGD_hook)
from torch.distributed.algorithms.model_averaging import averagers
from torch.distributed.optim import PostLocalSGDOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

import gradwire.torch as gwt


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir, split, subset):
    def find(name):
        for candidate in (name + ".gz", name):
            if os.path.exists(os.path.join(data_dir, candidate)):
                return os.path.join(data_dir, candidate)
        raise SystemExit("Fashion-MNIST file %s(.gz) not found in %s (--data-dir)" % (name, data_dir))
    images = read_idx(find("%s-images-idx3-ubyte" % split))
    labels = read_idx(find("%s-labels-idx1-ubyte" % split))
    if subset:
        images, labels = images[:subset], labels[:subset]
    x = torch.from_numpy(images.reshape(len(images), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--compressor", default="dgc",
                   choices=["none", "fp16", "topk", "dgc", "powersgd", "ddp", "ddp-fp16",
                            "ddp-powersgd", "ddp-post-local-sgd"])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: none)")
    p.add_argument("--eval-every", type=int, default=0, help="steps between evaluations (0: at "
                   "each epoch's end)")
    p.add_argument("--time-budget", type=float, default=0, help="training seconds after which "
                   "the run stops at its next evaluation (0: none)")
    p.add_argument("--powersgd-rank", type=int, default=1, help="ddp-powersgd's rank")
    p.add_argument("--powersgd-start", type=int, default=2, help="ddp-powersgd's first step")
    p.add_argument("--local-sgd-period", type=int, default=4,
                   help="ddp-post-local-sgd: steps between parameter averages")
    p.add_argument("--local-sgd-start", type=int, default=2,
                   help="ddp-post-local-sgd: the first local step (synchronous before)")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--train-subset", type=int, default=0)
    p.add_argument("--test-subset", type=int, default=0)
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--report", default="")
    return p.parse_args()


def wrap(model, args, device):
    """DDP around the model, with the chosen hook; returns (ddp, gradwire's state or None, the
    optimizer's momentum: dgc applies the momentum itself, so the optimizer runs without)."""
    # DDP's PowerSGD hook on Gloo: with two buckets in flight their allreduces, issued from
    # future callbacks, can reach Gloo in another order on each rank (a collective mismatch that
    # aborts the job); one bucket (after DDP's rebuild at step 1) avoids it.
    one_bucket = args.compressor == "ddp-powersgd" and device.type == "cpu"
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None,
              bucket_cap_mb=64 if one_bucket else 25)
    if args.compressor == "ddp-fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif args.compressor == "ddp-powersgd":
        ps = powerSGD_hook.PowerSGDState(process_group=None,
                                         matrix_approximation_rank=args.powersgd_rank,
                                         start_powerSGD_iter=args.powersgd_start)
        ddp.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
    elif args.compressor == "ddp-post-local-sgd":
        # Each rank its own subgroup: after the start, gradients stay local; the optimizer
        # (PostLocalSGDOptimizer) averages the parameters every period.
        own = dist.new_subgroups(group_size=1)[0]
        ls = post_localSGD_hook.PostLocalSGDState(process_group=None, subgroup=own,
                                                  start_localSGD_iter=args.local_sgd_start)
        ddp.register_comm_hook(ls, post_localSGD_hook.post_localSGD_hook)
    elif args.compressor != "ddp":
        dgc = args.compressor == "dgc"
        state, hook = gwt.hook(model, compressor=args.compressor,
                               momentum=args.momentum if dgc else 0.0)
        ddp.register_comm_hook(state, hook)
        return ddp, state, 0.0 if dgc else args.momentum
    return ddp, None, args.momentum


def builtin_bytes(args, model, world):
    """Gradient and parameter bytes rank 0 sends at step `s` (0-based) under DDP's own
    allreduce or a built-in hook: fn(s) -> (gradient, parameter)."""
    params = [p for p in model.parameters() if p.requires_grad]
    numel = sum(p.numel() for p in params)

    def ar(count, size=4):
        return gwt.allreduce_bytes(count, size, 0, world) if count else 0
    dense = ar(numel)
    if args.compressor == "ddp-fp16":
        return lambda s: (ar(numel, 2), 0)
    if args.compressor == "ddp-powersgd":
        # powerSGD_hook: 1-D tensors and matrices it would not shrink by 2x go whole; the rest as
        # P (rows x rank), then Q (columns x rank), each an allreduce.
        r, whole, p_count, q_count = args.powersgd_rank, 0, 0, 0
        for t in params:
            rows = t.shape[0]
            cols = t.numel() // rows
            if t.dim() <= 1 or (rows + cols) * r * 2 >= rows * cols:
                whole += t.numel()
            else:
                p_count, q_count = p_count + rows * r, q_count + cols * r
        low = ar(whole) + ar(p_count) + ar(q_count)
        return lambda s: (dense if s < args.powersgd_start else low, 0)
    if args.compressor == "ddp-post-local-sgd":
        k = args.local_sgd_period
        return lambda s: ((dense, 0) if s < args.local_sgd_start
                          else (0, dense if (s + 1) % k == 0 else 0))
    return lambda s: (dense, 0)


def main():
    args = parse_args()
    cuda = args.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))

    x_train, y_train = load(args.data_dir, "train", args.train_subset)
    x_test, y_test = load(args.data_dir, "t10k", args.test_subset)
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).to(device)
    ddp, state, momentum = wrap(model, args, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=momentum)
    if args.compressor == "ddp-post-local-sgd":
        optimizer = PostLocalSGDOptimizer(optim=optimizer, averager=averagers.PeriodicModelAverager(
            period=args.local_sgd_period, warmup_steps=args.local_sgd_start))
    loss_fn = torch.nn.CrossEntropyLoss()

    def evaluate():
        model.eval()
        with torch.no_grad():
            logits = model(x_test.to(device))
            loss = loss_fn(logits, y_test.to(device)).item()
            accuracy = (logits.argmax(1).cpu() == y_test).float().mean().item()
        model.train()
        return accuracy, loss

    def step(index):
        optimizer.zero_grad()
        loss_fn(ddp(x_train[index].to(device)), y_train[index].to(device)).backward()
        optimizer.step()

    run = Run(args, state, None if state else builtin_bytes(args, model, world), world)
    run.train(step, evaluate, len(x_train))
    if rank == 0:
        print("step %d: test accuracy %.4f (%.1f s)" % (run.step, run.history[-1]["test_accuracy"],
                                                       run.train_seconds), flush=True)
    if rank == 0 and args.report:
        with open(args.report, "w") as f:
            json.dump(run.report(), f, indent=1)
    dist.destroy_process_group()


class Run:
    """The training loop's bookkeeping: steps, evaluations, bytes, the time budget."""

    def __init__(self, args, state, builtin, world):
        self.args, self.state, self.builtin, self.world = args, state, builtin, world
        self.step, self.train_seconds, self.history = 0, 0.0, []
        self.sent = [0, 0]  # gradient, parameter bytes (built-in hooks)
        self.warm = None  # (gradient bytes, step) once the warm-up is over
        self.stopped_by_time_budget = False
        self.start = time.time()

    def gradient_bytes(self):
        return self.state.gradient_bytes_sent if self.state is not None else self.sent[0]

    def train(self, step, evaluate, samples):
        args, world = self.args, self.world
        rank = dist.get_rank()
        per_epoch = samples // (args.batch_size * world)
        every = args.eval_every or per_epoch
        for epoch in range(args.epochs):
            order = torch.randperm(samples, generator=torch.Generator().manual_seed(args.seed + epoch))
            dist.barrier()
            t0 = time.time()
            for s in range(per_epoch):
                first = (s * world + rank) * args.batch_size
                step(order[first:first + args.batch_size])
                if self.builtin:
                    g, p = self.builtin(self.step)
                    self.sent[0] += g
                    self.sent[1] += p
                self.step += 1
                if self.warm is None and self.warmed_up():
                    self.warm = (self.gradient_bytes(), self.step)
                if self.step % every == 0 or s == per_epoch - 1 or self.step == args.max_steps:
                    dist.barrier()
                    self.train_seconds += time.time() - t0
                    self.evaluated(evaluate)
                    if self.finished():
                        return
                    t0 = time.time()

    def warmed_up(self):
        if self.state is not None:
            return self.state.step >= self.state.warmup_end_step
        a = self.args
        start = {"ddp-powersgd": a.powersgd_start, "ddp-post-local-sgd": a.local_sgd_start}
        return self.step >= start.get(a.compressor, 0)

    def evaluated(self, evaluate):
        accuracy, loss = evaluate()
        self.history.append({"step": self.step, "train_seconds": self.train_seconds,
                             "wall_seconds": time.time() - self.start, "test_accuracy": accuracy,
                             "test_loss": loss, "gradient_bytes_sent": self.gradient_bytes(),
                             "parameter_bytes_sent": self.sent[1]})

    def finished(self):
        a = self.args
        if a.time_budget and self.train_seconds >= a.time_budget:
            self.stopped_by_time_budget = True
        return self.stopped_by_time_budget or (a.max_steps and self.step >= a.max_steps)

    def report(self):
        a, step = self.args, self.step
        out = {
            "program": "examples/pytorch/train_fashion_mnist.py", "compressor": a.compressor,
            "world_size": self.world, "steps": step, "batch_size_per_rank": a.batch_size,
            "final_test_accuracy": self.history[-1]["test_accuracy"], "history": self.history,
            "train_seconds": self.train_seconds, "wall_seconds": time.time() - self.start,
            "stopped_by_time_budget": self.stopped_by_time_budget,
            "samples_per_second": step * a.batch_size * self.world / max(self.train_seconds, 1e-9),
            "gradient_bytes_sent": self.gradient_bytes(), "parameter_bytes_sent": self.sent[1],
            "gradient_bytes_per_step": self.gradient_bytes() / max(step, 1),
            "parameter_bytes_per_step": self.sent[1] / max(step, 1),
            "gradient_bytes_is": "bytes rank 0 sent for gradients, " + (
                "gradwire's counters" if self.state is not None else
                "computed from the shapes as the hook sends them") +
                " (Note [What the counters count])",
        }
        if self.warm is not None and step > self.warm[1]:
            out["gradient_bytes_per_step_after_warmup"] = (
                (self.gradient_bytes() - self.warm[0]) / (step - self.warm[1]))
        return out


if __name__ == "__main__":
    main()
