#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

Each seed is small and stands for one case the target must handle; the fuzzers mutate from them.
The regression-* seeds are the bugs the fuzzers found (docs/TESTING.md), written out plainly from
their reproducers. Run this after changing a seed here.
"""
import gzip
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# fuzz_config: environment blocks, NAME=value entries separated by NUL bytes.
def env(*entries):
    return b"\0".join(e.encode() for e in entries)


write("fuzz_config", "empty", b"")
write("fuzz_config", "dgc_warmup", env(
    "GRADWIRE_COMPRESSOR=dgc", "GRADWIRE_DGC_SPARSITY=0.75,0.9375,0.984375,0.996,0.999",
    "GRADWIRE_DGC_RAMPUP_STEPS=100", "GRADWIRE_DGC_SAMPLE_RATIO=0.001",
    "GRADWIRE_DGC_MOMENTUM_MASKING=off", "GRADWIRE_DGC_CLIP_NORM=1e-3"))
write("fuzz_config", "local_sgd", env(
    "GRADWIRE_SYNC=post_local_sgd", "GRADWIRE_LOCAL_SGD_K=8", "GRADWIRE_LOCAL_SGD_BEGIN_STEP=468",
    "GRADWIRE_LOCAL_SGD_AVERAGE_STATE=yes", "GRADWIRE_ADAPTIVE_MAX_K=32"))
write("fuzz_config", "amp", env(
    "GRADWIRE_AMP=1", "GRADWIRE_AMP_ALLOW=relu,max_pool2d", "GRADWIRE_AMP_DENY=linear",
    "GRADWIRE_AMP_INIT_SCALE=1e9", "GRADWIRE_AMP_BACKOFF_FACTOR=0.25",
    "GRADWIRE_AMP_GROWTH_INTERVAL=2000", "GRADWIRE_AMP_COMM_FP16=0"))
write("fuzz_config", "rank_local_and_foreign", env(
    "PATH=/usr/bin:/bin", "GRADWIRE_TIMELINE=/tmp/trace.{rank}.json", "GRADWIRE_LOG_LEVEL=debug",
    "HOME=/root", "GRADWIRE_MPI_WAIT=yield", "GRADWIRE_FUSION_THRESHOLD_MB=0.5",
    "GRADWIRE_GRADIENT_REDUCTION=sum", "GRADWIRE_BROADCAST_PARAMETERS=true"))
write("fuzz_config", "rejected_values", env(
    "GRADWIRE_FUSION_THRESHOLD_MB=64MB", "GRADWIRE_LOCAL_SGD_K= 1", "GRADWIRE_DGC_SPARSITY=0.9,,1"))
write("fuzz_config", "unknown_name", env("GRADWIRE_BROADCAST_PARAMETER=0"))
# Found: a newline in a string value read back from the canonical text as another variable's line.
write("fuzz_config", "regression-newline-in-string",
      env("GRADWIRE_AMP_ALLOW=relu\nGRADWIRE_GRADIENT_REDUCTION=sum", "GRADWIRE_AMP=1"))


# fuzz_sparse_message: little-endian words (the format is in fuzz_sparse_message.cc).
def words(*ws):
    return b"".join(struct.pack("<I", w & 0xFFFFFFFF) for w in ws)


def f(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


DENSE = 0xFFFF


def tensor(numel, k=None):
    return ((DENSE if k is None else k) << 16) | numel


# Two ranks; tensor 0 dense (3), tensor 1 sparse (10, k 2), tensor 2 sparse (6, k 3).
layout = [1, 2, tensor(3), tensor(10, 2), tensor(6, 3)]
rank0 = [2, 9, f(9.0), 0, f(0.5), 1, 5, f(-6.0)]
rank1 = [1, 9, f(9.0), 3, 0, f(-1.0), 5, f(-6.0), 2, f(-3.0)]
write("fuzz_sparse_message", "two_ranks_valid", words(*layout, len(rank0), len(rank1), *rank0, *rank1))
write("fuzz_sparse_message", "two_ranks_empty_counts", words(*layout, 2, 2, 0, 0, 0, 0))
# Four ranks, one sparse tensor of 16 (k 4): NaN and infinities are values, not errors.
layout4 = [3, 0, tensor(16, 4)]
msgs4 = [[1, 15, f(float("nan"))], [2, 0, f(float("inf")), 15, f(1.0)], [0],
         [4, 1, f(-0.0), 2, f(1e-45), 3, f(3.4e38), 4, f(float("-inf"))]]
write("fuzz_sparse_message", "four_ranks_special_values",
      words(*layout4, *[len(m) for m in msgs4], *[w for m in msgs4 for w in m]))
# One rank, malformed in different ways.
one = [0, 0, tensor(8, 2)]
write("fuzz_sparse_message", "index_out_of_range", words(*one, 3, 1, 8, f(1.0)))
write("fuzz_sparse_message", "count_above_k", words(*one, 7, 3, 1, 0, 2, 0, 3, 0))
write("fuzz_sparse_message", "pairs_missing", words(*one, 3, 2, 1, f(1.0)))
write("fuzz_sparse_message", "words_left_over", words(*one, 4, 1, 1, f(1.0), 99))
write("fuzz_sparse_message", "negative_length", words(*one, -1))
# Found: rank 1 sends index 0 twice for tensor 2 (pairs 0 and 2); it was accepted and summed twice.
dup1 = [1, 9, f(9.0), 3, 0, f(-1.0), 5, f(-6.0), 0, f(-3.0)]
write("fuzz_sparse_message", "regression-duplicate-index",
      words(*layout, len(rank0), len(dup1), *rank0, *dup1))


# fuzz_sparse_wire: numel, max pairs, then one compact segment (Note [Compact sparse wire]).
write("fuzz_sparse_wire", "three_pairs", words(11, 4, 3, 3, 3, 3 | 5 << 6, 0xC0003C00, 0x3800))
write("fuzz_sparse_wire", "no_pairs", words(5, 1, 0, 0))
write("fuzz_sparse_wire", "run_of_four", words(4, 4, 4, 2, 0, 0, 0x3C000000))
write("fuzz_sparse_wire", "gaps_of_32_bits", words(0xFFFFFFFF, 2, 2, 3, 32, 0, 0xFFFFFFFD, 0x3C003C00))
write("fuzz_sparse_wire", "gaps_past_2_to_32", words(0xFFFFFFFF, 2, 2, 3, 32, 0xFFFFFFF0, 0x20, 0x3C003C00))
write("fuzz_sparse_wire", "two_blocks", words(100, 40, 33, 21, 3 | 1 << 8, *([0x49249249] * 3),
                                               *([0x3C003C00] * 16), 0, 0x3C00))
write("fuzz_sparse_wire", "bad_width", words(11, 4, 1, 2, 40, 1, 0x3C00))
write("fuzz_sparse_wire", "infinity_and_nan", words(11, 4, 2, 2, 3, 3 | 1 << 3, 0x7E007C00))


# fuzz_idx_reader: IDX files (big-endian header), plain and gzip'd.
def be(*ws):
    return b"".join(struct.pack(">I", w) for w in ws)


images = be(0x803, 2, 3, 3) + bytes(range(0, 180, 10))
labels = be(0x801, 5) + bytes([0, 1, 2, 3, 9])
write("fuzz_idx_reader", "images_2x3x3", images)
write("fuzz_idx_reader", "images_2x3x3.gz", gzip.compress(images, mtime=0))
write("fuzz_idx_reader", "labels_5", labels)
write("fuzz_idx_reader", "labels_5.gz", gzip.compress(labels, mtime=0))
write("fuzz_idx_reader", "images_truncated", be(0x803, 3, 2, 2) + bytes(8))
write("fuzz_idx_reader", "labels_out_of_range", be(0x801, 2) + bytes([3, 10]))
write("fuzz_idx_reader", "labels_trailing_garbage", labels + b"xyz")
write("fuzz_idx_reader", "wrong_magic", be(0x801, 2, 3, 3) + bytes(18))
# Found: 24 bytes whose header announces 67,108,867 images of 2 x 2 made the reader allocate 268 MB.
write("fuzz_idx_reader", "regression-header-announces-268MB", be(0x803, 0x04000003, 2, 2) + bytes(8))
