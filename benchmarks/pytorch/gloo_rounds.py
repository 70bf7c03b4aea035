#!/usr/bin/env python3
"""What one collective round costs where several ranks share few cores: a step of optional
compute (`--work` 512x512 matmuls) and `--rounds` Gloo all_gathers of 16 floats, timed over 100
steps, for each round count given. It is the latency that decided GRADWIRE_SPARSE_ALGO=padded
(Note [Sparse allgather in one round]): on 4 ranks sharing 2 cores each round costs milliseconds,
more than the link time of the bytes the split saves at 100 Mbit/s.

    python3 benchmarks/pytorch/gloo_rounds.py --ranks 4 --rounds 1,2,4,8 --work 0

It starts its own ranks (one process each, Gloo over loopback) and prints one line per round count.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, world, port, rounds, work, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    a = torch.randn(512, 512)
    t = torch.zeros(16)
    outs = [torch.zeros(16) for _ in range(world)]
    for n in rounds:
        def step():
            for _ in range(work):
                a @ a
            for _ in range(n):
                dist.all_gather(outs, t)
        for _ in range(20):
            step()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(100):
            step()
        dist.barrier()
        if rank == 0:
            out.put((n, (time.perf_counter() - start) * 10.0))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--rounds", default="1,2,4,8", help="comma-separated round counts per step")
    p.add_argument("--work", type=int, default=0, help="512x512 matmuls per step before the rounds")
    p.add_argument("--port", type=int, default=29655)
    a = p.parse_args()
    try:
        rounds = [int(r) for r in a.rounds.split(",")]
    except ValueError:
        sys.exit("--rounds %r: give comma-separated integers, like 1,2,4,8" % a.rounds)
    if a.ranks < 2 or any(r < 1 for r in rounds):
        sys.exit("--ranks must be at least 2 and every round count at least 1")
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.start_processes(rank_main, args=(a.ranks, a.port, rounds, a.work, out), nprocs=a.ranks,
                       join=True, start_method="spawn")
    print("# %d ranks on %d cores, %d matmuls of compute per step" % (a.ranks, os.cpu_count(), a.work))
    while not out.empty():
        n, ms = out.get()
        print("rounds %d: %.2f ms per step (%.2f ms per round)" % (n, ms, ms / n))


if __name__ == "__main__":
    main()
