"""The per-op table of bench_tape.py (``--op-table``): one small op of each family, numdiff vs PyTorch.

The chain in bench_tape.py measures elementwise ops; the per-op goal of issue 26 holds for every
family. Each row is one op on small float32 operands (the arithmetic is a few hundred flops, so the
time is the op's Python: dispatch, argument checks, node creation, saved tensors), timed forward
alone and forward plus a backward of a ones gradient, both libraries alternating in one process.
Written once against either module, as benchmarks/bench_cpu.py's builders are.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from numdiff.benchmark import compare


def cases(m) -> dict[str, Callable[[], object]]:
    """name -> a call of one op in module `m` (numdiff or torch) on leaves that require grad."""
    rng = np.random.default_rng(0)

    def leaf(*shape):
        return m.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)

    functional = m.nn.functional
    x, y, w, bias = leaf(4, 8), leaf(4, 8), leaf(8, 8), leaf(8)
    activation = leaf(32, 16, 8, 8)
    logits = leaf(8, 10)
    target = m.tensor(rng.integers(0, 10, 8))
    index = m.tensor(np.array([0, 2, 3]))
    linear = m.nn.Linear(64, 32)
    row = m.tensor(rng.standard_normal((1, 64)).astype(np.float32))
    return {
        "x * y": lambda: x * y,
        "x + bias (broadcast)": lambda: x + bias,
        "tanh": lambda: m.tanh(x),
        "relu 32x16x8x8": lambda: functional.relu(activation),
        "leaky_relu": lambda: functional.leaky_relu(x, 0.1),
        "sum(1)": lambda: x.sum(1),
        "mean": lambda: x.mean(),
        "reshape": lambda: x.reshape(8, 4),
        "t": lambda: x.t(),
        "x[1:3]": lambda: x[1:3],
        "x[index]": lambda: x[index],
        "cat": lambda: m.cat([x, y], 0),
        "stack": lambda: m.stack([x, y]),
        "matmul 4x8 @ 8x8": lambda: x @ w,
        "Linear 64->32, one row": lambda: linear(row),
        "softmax": lambda: functional.softmax(logits, dim=1),
        "log_softmax": lambda: functional.log_softmax(logits, dim=1),
        "nll_loss": lambda: functional.nll_loss(functional.log_softmax(logits, dim=1), target),
        "cross_entropy": lambda: functional.cross_entropy(logits, target),
        "mse_loss": lambda: functional.mse_loss(x, y),
    }


def op_table(torch, repeat: int, cpu_time: bool, only: list[str] | None = None) -> None:
    """Print each op's forward and forward+backward time in both libraries, and the ratios."""
    import numdiff

    ours, theirs = cases(numdiff), cases(torch)
    clock = time.thread_time if cpu_time else None
    print(f"\nOne op of each family, median of {repeat} alternating rounds (us per call)")
    print(f"{'op':<24}{'numdiff':>9}{'torch':>8}{'ratio':>7}{'numdiff f+b':>13}{'torch f+b':>11}{'ratio':>7}")
    print("-" * 79)
    ratios = []
    for name in ours:
        if only and not any(word in name for word in only):
            continue
        ours_ones, theirs_ones = numdiff.ones(tuple(ours[name]().shape)), torch.ones(tuple(theirs[name]().shape))
        candidates = {
            "nf": ours[name], "tf": theirs[name],
            "nb": lambda f=ours[name], g=ours_ones: f().backward(g),
            "tb": lambda f=theirs[name], g=theirs_ones: f().backward(g),
        }  # fmt: skip
        table = compare(candidates, repeat=repeat, warmup=3, clock=clock)
        us = {key: timing.median * 1e6 for key, timing in table.timings.items()}
        ratios.append((us["nf"] / us["tf"], us["nb"] / us["tb"]))
        print(
            f"{name:<24}{us['nf']:>9.2f}{us['tf']:>8.2f}{us['nf'] / us['tf']:>6.2f}x"
            f"{us['nb']:>13.2f}{us['tb']:>11.2f}{us['nb'] / us['tb']:>6.2f}x"
        )
    if ratios:
        forward, both = (float(np.exp(np.mean(np.log(column)))) for column in zip(*ratios))
        print(f"{'geometric mean':<24}{'':>17}{forward:>6.2f}x{'':>24}{both:>6.2f}x")
