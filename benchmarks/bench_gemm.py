"""GEMM rates on a population of shapes: numdiff's Numba product loops, one BLAS call, numdiff's gemm, torch.mm.

    NUMDIFF_GEMM=blas python benchmarks/bench_gemm.py [--dtype float32] [--only 1024x1024x1024] [--training | --few-rows | --few-cols | --weight-grad] [--threads 2]

Run with ``NUMDIFF_GEMM=blas`` so that numdiff.kernels._blas.gemm calls the BLAS library (in tiles where
the route says so: numdiff.kernels._gemm_tiles), while the loops (numdiff.kernels._gemm_loops.loop_gemm)
and one BLAS call per product (numdiff.kernels._gemm_body.gemm_by_blas) are called directly. One thread
(Numba's, BLAS's and torch's), thread CPU time, the four alternating rep by rep, best of --repeat. Prints
GFLOP/s and each one's time over torch's for each shape (M x K x N) and transpose pair. ``--training``
measures instead the three products of each Linear layer in TRAINING_LAYERS, with the transpose pair
that a training step runs: forward ``x @ W.T`` (nt), input gradient ``g @ W`` (nn), weight gradient
``g.T @ x`` (tn). ``--few-rows`` measures FEW_ROWS: an LSTM's step product ``h @ W_hh.T`` and its
gradients, and attention's per-head blocks. ``--few-cols`` measures FEW_COLUMNS: a GCN's products with a
dense adjacency and Linear layers with few output features. ``--weight-grad`` measures WEIGHT_GRADIENTS:
transformer and LSTM weight gradients ``g.T @ x`` with K 512-4096. ``--threads 2`` runs numdiff's gemm_parallel and torch on two
threads, timed by the wall clock (nothing else: compare commits by running it in each).
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

SHAPES = [
    (64, 64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
    (4096, 576, 64), (16, 128, 512), (64, 784, 128), (256, 2304, 128), (8, 512, 512), (2, 784, 128),
]
PAIRS = [(False, False), (False, True), (True, False), (True, True)]
TRAINING_LAYERS = [
    (16, 784, 128), (64, 784, 512), (128, 784, 512), (560, 1000, 128), (1024, 128, 384), (1024, 512, 128),
    (256, 1024, 1024), (1024, 128, 4096), (4096, 512, 512), (1024, 4096, 1024), (64, 4096, 4096),
]
"""Linear layers as (batch rows, in features, out features): the MNIST/digits MLPs, a 128-wide
LSTM's gates, transformer feed-forward blocks (d 128-1024, ff 4x) and wide classifier heads."""
FEW_ROWS = [
    (16, 128, 512, False, True), (32, 256, 1024, False, True), (64, 512, 2048, False, True),
    (16, 512, 128, False, False), (32, 1024, 256, False, False), (64, 2048, 512, False, False),
    (512, 16, 128, True, False), (1024, 32, 256, True, False), (2048, 64, 512, True, False),
    (16, 64, 16, False, True), (32, 64, 32, False, True), (64, 64, 64, False, True),
    (64, 64, 64, False, False), (64, 64, 64, True, False), (8, 784, 512, False, False), (48, 512, 784, False, False),
]
"""(M, K, N, trans_a, trans_b): an LSTM step's ``h @ W_hh.T`` for batch 16-64 and hidden 128-512 (nt),
its gradients for h (nn) and W_hh (tn, K the batch); attention's per-head blocks of 16-64 tokens by 64
features (scores nt, weights times values nn, gradient tn); a Linear's input gradient on 8 and 48 rows."""
FEW_COLUMNS = [
    (1024, 1024, 32, False, False), (1024, 1024, 32, True, False), (1024, 1024, 7, False, False),
    (1024, 1024, 7, True, False), (1024, 64, 32, False, True), (1024, 32, 7, False, True),
    (2708, 2708, 16, False, False), (2708, 2708, 16, True, False), (2048, 2048, 64, False, False),
    (4096, 512, 10, False, True), (1024, 784, 10, False, True), (256, 1024, 2, False, True),
    (2048, 256, 40, False, True), (1000, 2048, 48, True, False),
]
"""(M, K, N, trans_a, trans_b): c taller than wide. A GCN's ``A_hat @ (X W)`` and its gradient ``A_hat.T @ g``
(nn, tn) for 1024 nodes by 32 and 7 features, Cora's 2708 nodes by 16, 2048 by 64; Linear layers with few
output features (``x @ W.T``, nt): the GCN's own, classifier heads of 10 and 2 classes, a 40-wide
bottleneck; a weight gradient for 48 features (tn)."""
WEIGHT_GRADIENTS = [
    (128, 1024, 128), (384, 1024, 128), (512, 1024, 128), (128, 1024, 512), (256, 512, 256), (768, 512, 256),
    (256, 512, 1024), (1024, 512, 256), (512, 2048, 512), (2048, 2048, 512), (512, 2048, 2048), (128, 4096, 128),
    (512, 4096, 128), (128, 4096, 512), (1024, 4096, 256), (512, 4096, 512),
]
"""(M, K, N) of weight gradients ``g.T @ x`` (tn): M a layer's outputs, N its inputs, K batch x tokens (512-4096).
A transformer's Linear layers for d 128-512 (qkv d -> 3d, projection d -> d, feed-forward d -> 4d -> d) and an LSTM's
W_ih/W_hh gradients (4h x h for h 128-256) over 512-4096 steps of a batch."""


def training_products(layers):
    """The (M, K, N, trans_a, trans_b) of each layer's forward, input-gradient and weight-gradient GEMM."""
    for rows, fan_in, fan_out in layers:
        yield rows, fan_in, fan_out, False, True
        yield rows, fan_out, fan_in, False, False
        yield fan_out, rows, fan_in, True, False


def _best(calls, inner: int, repeat: int, clock=time.thread_time) -> list[float]:
    """Best time by `clock` of each (function, arguments) over `repeat` rounds of `inner` calls, a call each."""
    best = [float("inf")] * len(calls)
    for _ in range(repeat):
        for i, (function, arguments) in enumerate(calls):
            start = clock()
            for _ in range(inner):
                function(*arguments)
            best[i] = min(best[i], (clock() - start) / inner)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated MxKxN shapes")
    parser.add_argument(
        "--training", action="store_true", help="the GEMMs of Linear layers' training steps (--only then names layers: batch x in x out)",
    )
    parser.add_argument("--few-rows", action="store_true", help="LSTM step and attention block products (FEW_ROWS)")
    parser.add_argument("--few-cols", action="store_true", help="GCN and few-output Linear products (FEW_COLUMNS)")
    parser.add_argument("--weight-grad", action="store_true", help="transformer and LSTM weight gradients (WEIGHT_GRADIENTS)")
    parser.add_argument("--threads", type=int, default=1, choices=(1, 2))
    args = parser.parse_args()
    if os.environ.get("NUMDIFF_GEMM", "").lower() != "blas":
        parser.error("run with NUMDIFF_GEMM=blas, so that gemm measures the BLAS library")
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.only.split(",")] if args.only else SHAPES
    if args.few_rows:
        products = FEW_ROWS
    elif args.few_cols:
        products = FEW_COLUMNS
    elif args.weight_grad:
        products = [(m, k, n, True, False) for m, k, n in WEIGHT_GRADIENTS]
    elif args.training:
        products = list(training_products(TRAINING_LAYERS if not args.only else shapes))
    else:
        products = [(m, k, n, ta, tb) for m, k, n in shapes for ta, tb in PAIRS]
    import torch

    from numdiff.kernels._blas import gemm, gemm_parallel, prepare_blas
    from numdiff.kernels._gemm_body import gemm_by_blas
    from numdiff.kernels._gemm_loops import loop_gemm

    torch.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    dtype = np.dtype(args.dtype)
    prepare_blas(dtype)
    rng = np.random.default_rng(0)
    names = ["gemm_parallel"] if args.threads > 1 else ["loops", "one BLAS call", "gemm"]
    print(
        f"| M x K x N | op | {' GFLOP/s | '.join(names)} GFLOP/s | torch | "
        + " | ".join(f"{name} / torch time" for name in names)
        + " |\n|---|---|" + "---|" * (2 * len(names) + 1)
    )
    for m, k, n, trans_a, trans_b in products:
        a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
        b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
        c = np.empty((m, n), dtype)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        ta, tb = ta.T if trans_a else ta, tb.T if trans_b else tb
        inner = max(1, int(5e7 / (m * n * k)))
        flags = (trans_a, trans_b, 1.0, a, b, 0.0, c)
        if args.threads > 1:
            calls = [(gemm_parallel, (*flags, args.threads))]
        else:
            calls = [(loop_gemm, flags), (gemm_by_blas, flags), (gemm, flags)]
        calls.append((torch.mm, (ta, tb)))
        clock = time.perf_counter if args.threads > 1 else time.thread_time
        _best(calls, inner, 1, clock)
        seconds = _best(calls, inner, args.repeat, clock)
        rates = " | ".join(f"{2 * m * n * k / s / 1e9:.0f}" for s in seconds)
        op = f"{'t' if trans_a else 'n'}{'t' if trans_b else 'n'}"
        ratios = " | ".join(f"{s / seconds[-1]:.2f}" for s in seconds[:-1])
        print(f"| {m}x{k}x{n} | {op} | {rates} | {ratios} |", flush=True)


if __name__ == "__main__":
    main()
