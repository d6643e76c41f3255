"""softmax, log_softmax and nll_loss(log_softmax) forward and backward, numdiff against PyTorch in
one process (issue 26's per-op sweep, widened to other dims, class counts, dtypes and layouts).

    python benchmarks/bench_softmax.py [--threads 1] [--repeat 20] [--only softmax]

Each row builds y = op(x) and runs y.backward(ones) (nll_loss: loss.backward()); the two libraries
alternate rep by rep and the calling thread's CPU time is taken (time.thread_time, so other
processes on a loaded machine do not inflate it; at 2 threads it counts the caller only, so read
those rows as the caller's share). Prints the minimum per library in microseconds and their ratio
numdiff/PyTorch. Not run by the tests.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numdiff  # noqa: E402
from numdiff.nn import functional  # noqa: E402

# (name, op, shape, dim, dtype, layout): layout "t" softmaxes a transposed view of the last two dims.
ROWS = [
    ("softmax", (16, 64, 256), -1, "float32", "c"),
    ("log_softmax", (16, 64, 256), -1, "float32", "c"),
    ("softmax", (16, 64, 256), 1, "float32", "c"),
    ("log_softmax", (16, 64, 256), 0, "float32", "c"),
    ("softmax", (16, 64, 256), -1, "float64", "c"),
    ("softmax", (16, 4, 64, 64), -1, "float32", "c"),
    ("softmax", (16, 256, 64), -1, "float32", "t"),
    ("log_softmax", (256, 10), 1, "float32", "c"),
    ("log_softmax", (128, 1000), 1, "float32", "c"),
    ("log_softmax", (8, 30000), 1, "float32", "c"),
    ("log_softmax", (64, 1000), 1, "float64", "c"),
    ("nll_loss", (64, 10), 1, "float32", "c"),
    ("nll_loss", (128, 1000), 1, "float32", "c"),
]


def build(lib, name: str, shape: tuple, dim: int, dtype: str, layout: str) -> Callable[[], None]:
    """A closure running one forward and backward of the row in library `lib` (numdiff or torch)."""
    rng = np.random.default_rng(0)
    values = rng.standard_normal(shape).astype(dtype)
    x = lib.tensor(values, requires_grad=True)
    functional_of = {numdiff: functional, torch: torch.nn.functional}
    functions = functional_of[lib]
    target = lib.tensor(rng.integers(0, shape[1], shape[0]))
    ones = None

    def step() -> None:
        nonlocal ones
        x.grad = None
        source = x.transpose(-1, -2) if layout == "t" else x
        if name == "nll_loss":
            functions.nll_loss(functions.log_softmax(source, dim=dim), target).backward()
            return
        y = getattr(functions, name)(source, dim=dim)
        if ones is None:
            ones = lib.ones(tuple(y.shape), dtype=y.dtype)
        y.backward(ones)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    numdiff.set_num_threads(args.threads)
    print(f"threads {args.threads}, min of {args.repeat} thread-CPU times, microseconds")
    for row in ROWS:
        if args.only and args.only not in row[0]:
            continue
        steps = {"numdiff": build(numdiff, *row), "torch": build(torch, *row)}
        best = dict.fromkeys(steps, float("inf"))
        for step in steps.values():
            step(), step()  # warm: compile, first allocations
        for _ in range(args.repeat):
            for lib, step in steps.items():
                start = time.thread_time()
                step()
                best[lib] = min(best[lib], time.thread_time() - start)
        name, shape, dim, dtype, layout = row
        label = f"{name} {shape} dim {dim} {dtype}{' transposed' if layout == 't' else ''}"
        print(f"{label:<52} numdiff {best['numdiff'] * 1e6:9.1f}  torch {best['torch'] * 1e6:9.1f}  "
              f"ratio {best['numdiff'] / best['torch']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
