"""How evenly a parallel op's work lands on the threads: per-thread busy time, numdiff vs PyTorch.

    python benchmarks/bench_threads.py [--threads 2] [--repeat 9] [--calls 10] [--only conv,bmm] [--no-torch]

On a loaded machine a two-thread wall clock measures the scheduler (a region waits for a thread
that lost its core), so this script reads each thread's own CPU clock instead: Linux keeps one per
thread (``clock_gettime`` on the clock id ``(~tid << 3) | 6``), which only runs while the thread
runs. Idle pool threads would spin on their clock while they wait for the others, so the script
sets ``GOMP_SPINCOUNT=0`` before either library loads its OpenMP runtime (both are libgomp here):
a waiting thread sleeps at once, and its clock counts its share of the work only.

For each op, per call (median over `--repeat` rounds of `--calls` calls, the libraries alternating):
``cpu`` is the process's CPU time, all threads; ``busiest`` the busiest thread's, a lower bound of
the critical path (the wall time on an idle machine, less the regions' wake-ups); ``balance`` is
``cpu / (threads * busiest)``: 1.0 when every thread did an equal share.

The ops are forward plus backward at shapes the threads do not divide evenly (batch 1, 3, 5, a
first axis of 1), which the model benchmarks do not use; the transposing copies are forward only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("GOMP_SPINCOUNT", "0")  # before numdiff or torch loads libgomp (see above)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numdiff  # noqa: E402
from numdiff.kernels._background import foreground  # noqa: E402


def thread_clocks() -> dict[int, float]:
    """CPU seconds of every thread of this process, by thread id (Linux)."""
    clocks = {}
    for name in os.listdir("/proc/self/task"):
        tid = int(name)
        try:
            clocks[tid] = time.clock_gettime((~tid << 3) | 6)  # CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD
        except OSError:  # the thread ended meanwhile
            continue
    return clocks


def busy_per_thread(step: Callable[[], object], calls: int) -> tuple[list[float], float]:
    """(each thread's CPU seconds per call, wall seconds per call) over `calls` calls of `step`."""
    before = thread_clocks()
    start = time.perf_counter()
    for _ in range(calls):
        step()
    wall = time.perf_counter() - start
    after = thread_clocks()
    busy = [(after[tid] - before.get(tid, 0.0)) / calls for tid in after]
    return sorted((b for b in busy if b > 0), reverse=True), wall / calls


def _workloads(m, library: str) -> dict[str, Callable[[], object]]:
    """name -> a forward + backward closure in module `m` (numdiff or torch), float32."""
    rng = np.random.default_rng(0)

    def leaf(*shape):
        return m.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)

    functional = m.nn.functional

    def conv(batch, c, co, size, k, stride):
        x, w = leaf(batch, c, size, size), leaf(co, c, k, k)

        def step():
            functional.conv2d(x, w, stride=stride, padding=k // 2).sum().backward()

        return step

    def broadcast(shape, other):
        x, y = leaf(*shape), leaf(*other)

        def step():
            (x * y).sum().backward()

        return step

    def bmm(batch, rows, inner, cols):
        a, b = leaf(batch, rows, inner), leaf(batch, inner, cols)

        def step():
            (a @ b).sum().backward()

        return step

    def transposing_copy(shape, permutation):
        x = m.tensor(rng.standard_normal(shape).astype(np.float32))

        def step():
            x.permute(*permutation).contiguous()  # forward only: a copy has no work backward

        return step

    return {
        "conv 5x5 3->32 32x32 batch 3": conv(3, 3, 32, 32, 5, 1),
        "conv 5x5 16->32 24x24 batch 5": conv(5, 16, 32, 24, 5, 1),
        "conv 3x3 s2 32->64 32x32 batch 3": conv(3, 32, 64, 32, 3, 2),
        "conv 3x3 s2 64->64 16x16 batch 1": conv(1, 64, 64, 16, 3, 2),
        "conv 3x3 s2 48->96 8x8 batch 48": conv(48, 48, 96, 8, 3, 2),  # several images a GEMM
        "mul (1,64,56,56) * (64,1,1)": broadcast((1, 64, 56, 56), (64, 1, 1)),
        "mul (3,48,40,40) * (48,1,1)": broadcast((3, 48, 40, 40), (48, 1, 1)),
        "bmm 3 x 256x128 @ 128x192": bmm(3, 256, 128, 192),
        "bmm 5 x 96x64 @ 64x96": bmm(5, 96, 64, 96),
        "copy (3,40,33,40) to NHWC": transposing_copy((3, 40, 33, 40), (0, 2, 3, 1)),
        "copy (5,130,129) permuted (0,2,1)": transposing_copy((5, 130, 129), (0, 2, 1)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--only", default="", help="comma-separated substrings of op names")
    parser.add_argument("--no-torch", action="store_true", help="numdiff only")
    args = parser.parse_args()

    libraries = {"numdiff": numdiff}
    numdiff.set_num_threads(args.threads)
    if not args.no_torch:
        import torch

        torch.set_num_threads(args.threads)
        libraries["torch"] = torch
    steps = {name: _workloads(m, name) for name, m in libraries.items()}
    names = [n for n in steps["numdiff"] if not args.only or any(s in n for s in args.only.split(","))]
    if not names:
        parser.exit(2, f"--only {args.only!r} matches no op; the ops: {', '.join(steps['numdiff'])}\n")

    load = os.getloadavg()
    print(f"# bench_threads {time.strftime('%Y-%m-%d %H:%M')}, {args.threads} threads, GOMP_SPINCOUNT="
          f"{os.environ['GOMP_SPINCOUNT']}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("| op | library | cpu ms | busiest thread ms | balance | wall ms |")
    print("|---|---|---:|---:|---:|---:|")
    for name in names:
        rows: dict[str, list[tuple[float, float, float]]] = {lib: [] for lib in libraries}
        with foreground():  # warm-up: compile or load every build here, the parallel ones included
            for lib in libraries:
                steps[lib][name]()
        for _ in range(args.repeat):
            for lib in libraries:
                busy, wall = busy_per_thread(steps[lib][name], args.calls)
                rows[lib].append((sum(busy), busy[0] if busy else 0.0, wall))
        for lib, samples in rows.items():
            cpu = statistics.median(s[0] for s in samples)
            busiest = statistics.median(s[1] for s in samples)
            wall = statistics.median(s[2] for s in samples)
            balance = cpu / (args.threads * busiest) if busiest else float("nan")
            print(f"| {name} | {lib} | {cpu * 1e3:.3f} | {busiest * 1e3:.3f} | {balance:.2f} | {wall * 1e3:.3f} |")


if __name__ == "__main__":
    main()
