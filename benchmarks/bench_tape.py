"""Tape overhead: a chain of tiny elementwise ops plus backward, numdiff vs PyTorch (one thread).

    python benchmarks/bench_tape.py [--ops 100] [--repeat 15] [--memory-steps 10000] [--profile] [--cpu-time]
                                    [--op-table [WORD,...]]

On a 16-element float32 tensor the arithmetic is negligible, so the time per op is the cost of
recording a node in forward and replaying it in backward: Python dispatch, Node construction,
saved-tensor bookkeeping and the walk. The two libraries are timed alternately in one process
(numdiff.benchmark.compare) and the medians are reported per op, with their ratio. A tracemalloc
check then runs many small forward+backward steps and reports the memory still held afterwards.
``--cpu-time`` times the calling thread's CPU time instead of wall time (both libraries run one
thread), which other processes on a loaded machine do not inflate. ``--op-table`` adds one small op
of each family (broadcast arithmetic, activations, reductions, views, indexing, cat, matmul, Linear,
softmax and the losses; benchmarks/_tape_ops.py), forward and forward+backward, with their ratios;
given words, only the rows whose name contains one.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

# Run from a checkout without installing: the repository root holds the numdiff package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _tape_ops  # noqa: E402 - benchmarks/_tape_ops.py, the per-op table

import numdiff  # noqa: E402
from numdiff.benchmark import compare  # noqa: E402

SIZE = 16


def make_chain(m, ops: int) -> tuple[Callable[[], object], Callable[[], object]]:
    """Forward-only and forward+backward closures for `ops` mixed add/mul/sin/exp ops in module `m`.

    The cycle mul, add, sin, exp keeps values bounded (sin maps into [-1, 1], exp into [0.37, 2.7]).
    """
    rng = np.random.default_rng(0)
    x = m.tensor(rng.standard_normal(SIZE).astype(np.float32), requires_grad=True)
    scale = m.tensor(rng.uniform(0.5, 1.0, SIZE).astype(np.float32))
    shift = m.tensor(rng.uniform(-0.1, 0.1, SIZE).astype(np.float32))
    cycle = (lambda y: y * scale, lambda y: y + shift, lambda y: y.sin(), lambda y: y.exp())

    def forward():
        y = x
        for i in range(ops):
            y = cycle[i % 4](y)
        return y.sum()

    def forward_backward():
        forward().backward()
        x.grad = None

    return forward, forward_backward


def build(kind: str, ops: int = 100) -> Callable[[], object]:
    """numdiff's `ops`-op chain, "forward" or "forward+backward" (benchmarks/compare_commits.py's
    builder)."""
    forward, forward_backward = make_chain(numdiff, ops)
    return forward if kind == "forward" else forward_backward


def memory_growth(steps: int, ops: int) -> tuple[int, int]:
    """Bytes held after `steps` forward+backward steps of an `ops`-op chain, beyond a warmed-up start."""
    _, step = make_chain(numdiff, ops)
    warmup = max(steps // 10, 1)
    for _ in range(warmup):
        step()
    tracemalloc.start()
    try:
        for _ in range(warmup):
            step()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(steps):
            step()
        gc.collect()
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return after - before, peak - before


def profile(ops: int, calls: int) -> None:
    """cProfile of numdiff's forward+backward chain: where the per-op time goes."""
    _, step = make_chain(numdiff, ops)
    step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler).strip_dirs().sort_stats("tottime")
    print(f"\ncProfile of {calls} forward+backward calls of the {ops}-op chain (by own time):")
    stats.print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100, help="elementwise ops in the chain")
    parser.add_argument("--repeat", type=int, default=15, help="alternating rounds per candidate")
    parser.add_argument("--memory-steps", type=int, default=10_000, help="steps for the tracemalloc check")
    parser.add_argument("--memory-ops", type=int, default=4, help="ops per step in the tracemalloc check")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of numdiff's chain")
    parser.add_argument("--cpu-time", action="store_true", help="time the thread's CPU time, not wall time")
    parser.add_argument(
        "--op-table", nargs="?", const="", default=None, metavar="WORDS",
        help="also time one small op of each family (comma-separated words: only rows naming one)",
    )  # fmt: skip
    args = parser.parse_args()

    candidates: dict[str, Callable[[], object]] = {}
    nd_forward, nd_step = make_chain(numdiff, args.ops)
    candidates["numdiff fwd"] = nd_forward
    candidates["numdiff f+b"] = nd_step
    try:
        import torch
    except ImportError:
        torch = None
        print("torch is not installed: numdiff only")
    if torch is not None:
        torch.set_num_threads(1)
        th_forward, th_step = make_chain(torch, args.ops)
        candidates["torch fwd"] = th_forward
        candidates["torch f+b"] = th_step

    table = compare(candidates, repeat=args.repeat, warmup=3, clock=time.thread_time if args.cpu_time else None)
    per_op = {name: t.median / args.ops * 1e6 for name, t in table.timings.items()}
    spread = {name: t.iqr / args.ops * 1e6 for name, t in table.timings.items()}

    print(
        f"Chain of {args.ops} elementwise ops (mul, add, sin, exp) on float32[{SIZE}], "
        f"median of {args.repeat} alternating rounds{' (thread CPU time)' if args.cpu_time else ''}, torch threads: "
        f"{torch.get_num_threads() if torch is not None else '-'}"
    )
    print(f"{'pass':<18}{'numdiff us/op':>15}{'torch us/op':>14}{'ratio':>9}")
    print("-" * 56)
    for label, key in (("forward", "fwd"), ("forward+backward", "f+b")):
        ours = per_op[f"numdiff {key}"]
        line = f"{label:<18}{ours:>10.2f} ±{spread[f'numdiff {key}']:<4.2f}"
        if torch is not None:
            theirs = per_op[f"torch {key}"]
            line += f"{theirs:>9.2f} ±{spread[f'torch {key}']:<4.2f}{ours / theirs:>7.2f}x"
        print(line)
    if torch is not None:
        backward_ours = per_op["numdiff f+b"] - per_op["numdiff fwd"]
        backward_theirs = per_op["torch f+b"] - per_op["torch fwd"]
        print(
            f"{'backward (diff)':<18}{backward_ours:>10.2f}{'':6}{backward_theirs:>9.2f}{'':6}"
            f"{backward_ours / backward_theirs:>7.2f}x"
        )

    if args.memory_steps > 0:  # --memory-steps 0 leaves the memory check out
        growth, peak = memory_growth(args.memory_steps, args.memory_ops)
        print(
            f"\ntracemalloc: {args.memory_steps} forward+backward steps of a {args.memory_ops}-op chain "
            f"left {growth} bytes ({growth / args.memory_steps:.2f} bytes/step); peak above start "
            f"{peak / 1024:.1f} KiB"
        )

    if args.op_table is not None and torch is not None:
        _tape_ops.op_table(torch, args.repeat, args.cpu_time, [w for w in args.op_table.split(",") if w])

    if args.profile:
        profile(args.ops, calls=200)


if __name__ == "__main__":
    main()
