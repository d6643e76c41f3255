"""interpolate and pad, forward + y.backward(ones), numdiff against torch in one process: float32, one
thread, thread CPU time, min of 2x10 alternating blocks. `python3 benchmarks/bench_resample.py [ROOT]`
imports numdiff from ROOT (a checkout to compare against; default: this one) and prints one table row each."""

from __future__ import annotations

import sys
import time

import numpy as np

if len(sys.argv) > 1:
    sys.path.insert(0, sys.argv[1])

import torch  # noqa: E402
import torch.nn.functional as torch_functional  # noqa: E402

import numdiff  # noqa: E402
import numdiff.nn.functional as numdiff_functional  # noqa: E402

ROWS = [
    ("interpolate", "bilinear", (32, 64, 16, 16), dict(scale_factor=2, align_corners=False)),
    ("interpolate", "bilinear", (8, 32, 40, 40), dict(size=(27, 33), align_corners=True)),
    ("interpolate", "linear", (32, 64, 256), dict(scale_factor=2)),
    ("interpolate", "trilinear", (4, 16, 8, 16, 16), dict(scale_factor=2)),
    ("interpolate", "nearest", (32, 64, 16, 16), dict(scale_factor=1.5)),
    ("interpolate", "nearest-exact", (32, 64, 16, 16), dict(size=(24, 20))),
    ("interpolate", "bicubic", (32, 64, 16, 16), dict(scale_factor=2)),
    ("pad", "constant", (32, 64, 16, 16), dict(pad=(1, 1, 1, 1))),
    ("pad", "reflect", (32, 64, 16, 16), dict(pad=(1, 1, 1, 1))),
    ("pad", "replicate", (8, 16, 8, 24, 24), dict(pad=(2, 2, 1, 1, 1, 1))),
    ("pad", "circular", (16, 32, 100), dict(pad=(3, 2))),
]


def cpu_ms(step, n: int = 10) -> float:
    """Least thread CPU time of n calls, in ms."""
    best = float("inf")
    for _ in range(n):
        start = time.thread_time()
        step()
        best = min(best, time.thread_time() - start)
    return best * 1e3


def row(op: str, mode: str, shape: tuple, kwargs: dict) -> str:
    x0 = np.random.default_rng(0).random(shape, dtype=np.float32)

    def run(lib, functional, make):
        x = make(x0)
        x.requires_grad_(True)
        y = getattr(functional, op)(x, mode=mode, **kwargs)
        y.backward(lib.ones(*y.shape))

    def ours():
        run(numdiff, numdiff_functional, numdiff.tensor)

    def theirs():
        run(torch, torch_functional, torch.tensor)

    try:
        ours()
    except ValueError as error:
        return f"| {op} {mode} {shape} {kwargs} | unsupported: {error} |"
    theirs()
    a = b = float("inf")
    for _ in range(2):
        a, b = min(a, cpu_ms(ours)), min(b, cpu_ms(theirs))
    return f"| {op} {mode} {shape} {kwargs} | {a:.2f} | {b:.2f} | {a / b:.2f} |"


if __name__ == "__main__":
    torch.set_num_threads(1)
    for spec in ROWS:
        print(row(*spec), flush=True)
