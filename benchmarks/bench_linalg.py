"""numdiff.linalg against torch.linalg: forward plus backward, in one process, at 1 and 2 threads.

    python benchmarks/bench_linalg.py [--repeat 20] [--threads 1 2] [--quick] [--markdown FILE]

Workloads (issue 29's goals in brackets): cholesky, solve, eigh, svd and slogdet, each on a batch
of 256 matrices 8x8 [numdiff <= 1.0x torch] and on one 512x512 matrix [<= 1.2x], as a scalar loss
of every output and its backward, float64. Both libraries get the same matrices (symmetric
positive definite, or well conditioned), and their gradients are checked to agree first. The two
alternate call by call; the reported ratio is numdiff's median over torch's. The load average is
printed with the table: on a shared machine it says how much to trust it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import numdiff  # noqa: E402


def _matrices(batch: tuple, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(batch + (n, n))
    spd = x @ np.swapaxes(x, -1, -2) / n + np.eye(n)
    general = x / np.sqrt(n) + 2 * np.eye(n)
    rhs = rng.standard_normal(batch + (n, 2))
    return spd, general, rhs


def losses(lib):
    """Each workload as (make inputs, loss of every output) for `lib` (numdiff or torch)."""
    la = lib.linalg

    def eigh_loss(a, weight):
        w, v = la.eigh(a)
        return w.sum() + (v * v * weight).sum()

    def svd_loss(a, weight):
        u, s, vh = la.svd(a, full_matrices=False)
        return s.sum() + (u * u * weight).sum() + (vh * vh * weight).sum()

    return {
        "cholesky": (lambda spd, general, rhs, w: (spd,), lambda a: la.cholesky(a).sum()),
        "solve": (lambda spd, general, rhs, w: (general, rhs), lambda a, b: la.solve(a, b).sum()),
        "eigh": (lambda spd, general, rhs, w: (spd, w), eigh_loss),
        "svd": (lambda spd, general, rhs, w: (general, w), svd_loss),
        "slogdet": (lambda spd, general, rhs, w: (general,), lambda a: la.slogdet(a)[1].sum()),
    }


def _step(lib, loss, arrays):
    tensors = [lib.tensor(a) for a in arrays]
    tensors[0].requires_grad_(True)

    def run():
        tensors[0].grad = None
        value = loss(*tensors)
        value.backward()
        return tensors[0].grad

    return run


def measure(name: str, batch: tuple, n: int, repeat: int) -> tuple[float, float]:
    spd, general, rhs = _matrices(batch, n, seed=0)
    weight = np.random.default_rng(1).standard_normal(batch + (n, n))
    make, ours = losses(numdiff)[name]
    _, theirs = losses(torch)[name]
    arrays = make(spd, general, rhs, weight)
    run_nd, run_pt = _step(numdiff, ours, arrays), _step(torch, theirs, arrays)
    g_nd, g_pt = run_nd().numpy(), run_pt().numpy()
    if name not in ("eigh", "svd"):  # vector gradients depend on LAPACK's sign choices; values do not
        np.testing.assert_allclose(g_nd, g_pt, rtol=1e-6, atol=1e-8, err_msg=name)
    times_nd, times_pt = [], []
    for _ in range(repeat):
        for run, times in ((run_nd, times_nd), (run_pt, times_pt)):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
    return float(np.median(times_nd)), float(np.median(times_pt))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (a smoke test)")
    parser.add_argument("--markdown", metavar="FILE", help="append the table to FILE")
    args = parser.parse_args(argv)
    shapes = [((256,), 8), ((), 512)] if not args.quick else [((4,), 3), ((), 16)]
    repeat = 3 if args.quick else args.repeat
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"numdiff.linalg vs torch.linalg, forward + backward, float64; load average {load:.1f} "
             f"on {os.cpu_count()} CPUs", "",
             "| workload | threads | numdiff ms | torch ms | ratio |", "|---|---:|---:|---:|---:|"]
    for threads in args.threads:
        numdiff.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name in losses(numdiff):
            for batch, n in shapes:
                t_nd, t_pt = measure(name, batch, n, repeat)
                label = f"{name} {batch[0]} x {n}x{n}" if batch else f"{name} {n}x{n}"
                lines.append(f"| {label} | {threads} | {t_nd * 1e3:.3f} | {t_pt * 1e3:.3f} | {t_nd / t_pt:.2f} |")
                print(lines[-1], flush=True)
    if args.markdown:
        with open(args.markdown, "a") as handle:
            handle.write("\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
