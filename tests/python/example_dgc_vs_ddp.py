#!/usr/bin/env python3
"""example_dgc_vs_ddp.py EXAMPLE: the PyTorch example (examples/pytorch) at 4 ranks on Gloo for one
epoch with gradwire's dgc and with DDP's own allreduce: dgc within 0.5 points of DDP's test
accuracy, at >= 300x fewer gradient bytes per step after warm-up. Exit 77 without gradwire.torch.

The ranks are forked from this process, with torch and the example already imported, and find
each other as torchrun's do (env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK): the
example's own main() runs unchanged, without five interpreters importing torch per run. (The
low-bandwidth harness's smoke test starts it as separate interpreters, one per host, by the same
variables: benchmarks/lowband/torch_runs.py.)
"""
import importlib.util
import json
import os
import signal
import socket
import sys
import tempfile

try:
    import gradwire.torch  # noqa: F401 (the bridge the example needs)
except ImportError as e:
    print("SKIPPED: no gradwire.torch (%s)" % e)
    sys.exit(77)
import torch.multiprocessing as mp

WORLD = 4
RANK_SECONDS = 300  # the limit of one run (one epoch at 4 ranks)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, example, argv, port):
    # A rank that hangs ends by SIGALRM; start_processes then ends its peers and raises.
    signal.alarm(RANK_SECONDS)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(WORLD))
    sys.argv = [example.__file__] + argv
    example.main()


def run(example, compressor, report):
    print("---- %s" % compressor, flush=True)
    argv = ["--compressor", compressor, "--epochs", "1", "--report", report]
    # fork: nothing in this process has started a thread yet (importing starts none).
    mp.start_processes(rank_main, args=(example, argv, free_port()), nprocs=WORLD, join=True,
                       start_method="fork")
    with open(report) as f:
        return json.load(f)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: example_dgc_vs_ddp.py EXAMPLE (examples/pytorch/train_fashion_mnist.py)")
    spec = importlib.util.spec_from_file_location("train_fashion_mnist", sys.argv[1])
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with tempfile.TemporaryDirectory() as work:
        dgc, ddp = (run(example, c, os.path.join(work, c + ".json")) for c in ("dgc", "ddp"))
    drop = 100 * (ddp["final_test_accuracy"] - dgc["final_test_accuracy"])
    after = "gradient_bytes_per_step_after_warmup"
    ratio = ddp[after] / dgc[after]
    print("dgc %.4f vs DDP %.4f (drop %.2f points); %.0f vs %.0f gradient B/step: %.0fx fewer"
          % (dgc["final_test_accuracy"], ddp["final_test_accuracy"], drop, dgc[after], ddp[after],
             ratio))
    if drop > 0.5 or ratio < 300:
        sys.exit("FAIL: dgc must stay within 0.5 points of DDP at >= 300x fewer bytes")


if __name__ == "__main__":
    main()
