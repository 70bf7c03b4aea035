#!/usr/bin/env python3
"""The reference MLP (784-1024-512-10) on Fashion-MNIST with PyTorch DDP and gradwire's hook.

    torchrun --nproc-per-node 4 examples/pytorch/train_fashion_mnist.py --compressor dgc \
        --report report.json

Gloo on CPUs, NCCL where --device cuda. --compressor names gradwire's (none, fp16, topk, dgc,
powersgd, through gradwire.torch.hook, with any GRADWIRE_* variable of the environment), or
ddp (DDP's own allreduce), ddp-fp16 or ddp-powersgd (DDP's built-in hooks), for comparison. The
report has gradwire_train's fields: accuracy, bytes per step, samples/s and the history.
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
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
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
                            "ddp-powersgd"])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: none)")
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
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    if args.compressor == "ddp-fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif args.compressor == "ddp-powersgd":
        ps = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1,
                                         start_powerSGD_iter=2)
        ddp.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
    elif args.compressor != "ddp":
        dgc = args.compressor == "dgc"
        state, hook = gwt.hook(model, compressor=args.compressor,
                               momentum=args.momentum if dgc else 0.0)
        ddp.register_comm_hook(state, hook)
        return ddp, state, 0.0 if dgc else args.momentum
    return ddp, None, args.momentum


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
    loss_fn = torch.nn.CrossEntropyLoss()

    def evaluate():
        model.eval()
        with torch.no_grad():
            logits = model(x_test.to(device))
            loss = loss_fn(logits, y_test.to(device)).item()
            accuracy = (logits.argmax(1).cpu() == y_test).float().mean().item()
        model.train()
        return accuracy, loss

    steps_per_epoch = len(x_train) // (args.batch_size * world)
    history, step, train_seconds, start = [], 0, 0.0, time.time()
    warm = None  # (bytes sent, step) once the compressor's warm-up is over
    for epoch in range(args.epochs):
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(args.seed + epoch))
        dist.barrier()
        t0 = time.time()
        for s in range(steps_per_epoch):
            if args.max_steps and step >= args.max_steps:
                break
            first = (s * world + rank) * args.batch_size
            index = order[first:first + args.batch_size]
            optimizer.zero_grad()
            loss_fn(ddp(x_train[index].to(device)), y_train[index].to(device)).backward()
            optimizer.step()
            step += 1
            if state is not None and warm is None and state.step >= state.warmup_end_step:
                warm = (state.gradient_bytes_sent, step)
        dist.barrier()
        train_seconds += time.time() - t0
        accuracy, loss = evaluate()
        history.append({"steps": step, "train_seconds": train_seconds,
                        "wall_seconds": time.time() - start, "test_accuracy": accuracy,
                        "test_loss": loss})
        if rank == 0:
            print("epoch %d: step %d, test accuracy %.4f, loss %.4f" % (epoch + 1, step, accuracy, loss),
                  flush=True)
        if args.max_steps and step >= args.max_steps:
            break
    if rank == 0 and args.report:
        with open(args.report, "w") as f:
            json.dump(report(args, model, state, warm, world, step, history, train_seconds), f,
                      indent=1)
    dist.destroy_process_group()


def report(args, model, state, warm, world, step, history, train_seconds):
    out = {
        "program": "examples/pytorch/train_fashion_mnist.py", "compressor": args.compressor,
        "world_size": world, "steps": step, "batch_size_per_rank": args.batch_size,
        "final_test_accuracy": history[-1]["test_accuracy"], "history": history,
        "train_seconds": train_seconds,
        "samples_per_second": step * args.batch_size * world / max(train_seconds, 1e-9),
    }
    if args.compressor == "ddp":  # DDP's allreduce of every fp32 gradient, as gradwire counts one
        numel = sum(p.numel() for p in model.parameters())
        out["gradient_bytes_per_step_after_warmup"] = gwt.allreduce_bytes(numel, 4, 0, world)
    if state is not None:
        out["gradient_bytes_sent"] = state.gradient_bytes_sent
        if warm is not None and step > warm[1]:
            out["gradient_bytes_per_step_after_warmup"] = (
                (state.gradient_bytes_sent - warm[0]) / (step - warm[1]))
        out["gradient_bytes_is"] = ("bytes rank 0 sent for gradients, gradwire's counters "
                                    "(Note [What the counters count])")
    return out


if __name__ == "__main__":
    main()
