"""Per-op forward + backward of the indexing and scan ops (roll, cumsum, cumprod, gather, flip)
against PyTorch, in one process, thread CPU time, min over --repeat calls; ratio numdiff/torch.

    python benchmarks/bench_index_scan.py [--repeat 20] [--threads 1] [--only roll1,cumsum]
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

import numdiff  # noqa: E402 - the checkout's numdiff, after the path above

_IDX = np.random.default_rng(0).integers(0, 512, (1024, 1))
ROWS: dict[str, tuple[str, tuple[int, ...], Callable]] = {
    "roll1": ("roll(1, 3) (32, 64, 16, 16)", (32, 64, 16, 16), lambda x, m: x.roll(1, 3)),
    "roll2": ("roll((-2, 3), (1, 2)) (8, 32, 24, 20)", (8, 32, 24, 20), lambda x, m: x.roll((-2, 3), (1, 2))),
    "cumsum": ("cumsum(-1) (16, 64, 256)", (16, 64, 256), lambda x, m: x.cumsum(-1)),
    "cumsum0": ("cumsum(0) (100, 40, 30)", (100, 40, 30), lambda x, m: x.cumsum(0)),
    "cumprod": ("cumprod(1) (16, 64, 100)", (16, 64, 100), lambda x, m: x.cumprod(1)),
    "gather": ("gather(1, idx (1024, 1)) (1024, 512)", (1024, 512), lambda x, m: x.gather(1, m.tensor(_IDX))),
    "flip": ("flip(3) (32, 64, 16, 16)", (32, 64, 16, 16), lambda x, m: x.flip(3)),
}


def _min_cpu_time(step: Callable[[], None], repeat: int) -> float:
    step()
    best = float("inf")
    for _ in range(repeat):
        start = time.thread_time()
        step()
        best = min(best, time.thread_time() - start)
    return best


def _step(lib: object, fn: Callable, data: np.ndarray) -> Callable[[], None]:
    x = lib.tensor(data, requires_grad=True)

    def step() -> None:
        y = fn(x, lib)
        y.backward(lib.ones(tuple(y.shape)))
        x.grad = None

    return step


def main() -> None:
    """Print one row per op: numdiff and torch milliseconds and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated row keys: " + ",".join(ROWS))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    numdiff.set_num_threads(args.threads)
    keys = args.only.split(",") if args.only else list(ROWS)
    for key in keys:
        name, shape, fn = ROWS[key]
        data = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        ours = _min_cpu_time(_step(numdiff, fn, data), args.repeat)
        theirs = _min_cpu_time(_step(torch, fn, data), args.repeat)
        print(f"{name:42s} numdiff {ours * 1e3:8.3f} ms  torch {theirs * 1e3:8.3f} ms  ratio {ours / theirs:5.2f}")


if __name__ == "__main__":
    main()
