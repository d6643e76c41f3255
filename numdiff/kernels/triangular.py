"""Batched triangular solves: X = A^-1 B for a stack of small triangular A.

LAPACK's trsm solves one matrix per call, so a batch of 256 8x8 systems through SciPy pays 256
Python-level calls; here one compiled call runs them all, the batch split over threads.

    solve_lower_batched(A, B, out, unit)    A (b, n, n) lower, B and out (b, n, k)
    solve_upper_batched(A, B, out, unit)    A upper

Loop nest: batch (parallel) x right-hand side column x row, forward (lower) or backward (upper)
substitution; O(n^2 k) per matrix, no extra memory. With `unit` the diagonal is taken as ones.
Large single systems go to SciPy's trsm instead (numdiff.ops.linalg_solve picks).
"""

from __future__ import annotations

from numba import njit, prange


@njit(cache=True, parallel=True)
def solve_lower_batched(a, b, out, unit):  # pragma: no cover - compiled
    batch, n, k = b.shape
    for p in prange(batch):
        for j in range(k):
            for i in range(n):
                s = b[p, i, j]
                for m in range(i):
                    s -= a[p, i, m] * out[p, m, j]
                out[p, i, j] = s if unit else s / a[p, i, i]


@njit(cache=True, parallel=True)
def solve_upper_batched(a, b, out, unit):  # pragma: no cover - compiled
    batch, n, k = b.shape
    for p in prange(batch):
        for j in range(k):
            for i in range(n - 1, -1, -1):
                s = b[p, i, j]
                for m in range(i + 1, n):
                    s -= a[p, i, m] * out[p, m, j]
                out[p, i, j] = s if unit else s / a[p, i, i]
