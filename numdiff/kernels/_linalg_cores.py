"""Per-matrix factorization and substitution loops, written once for both targets.

Plain Python over arrays and indices: numdiff.kernels.linalg_small compiles them with
``njit(inline="always")`` for the CPU, numdiff.cuda.kernels.linalg with ``cuda.jit(device=True)``
for the GPU, so both devices run the same arithmetic. Each works on matrix `p` of a (batch, n, n)
stack (and column `j` of a (batch, n, k) right-hand side); none allocates.

    cholesky_core(a, out, p)          out[p] = L, lower, with A = L L^T; returns 0, or the order of
                                      the first leading minor that is not positive definite
    lower_solve_core(a, b, out, p, j, unit)   forward substitution for column j
    upper_solve_core(a, b, out, p, j, unit)   back substitution for column j
    lu_solve_core(work, x, p)         Gaussian elimination with partial pivoting on work[p] (a copy
                                      of A, overwritten) and x[p] (B on entry, X on exit); returns
                                      0, or k when the k-th pivot is exactly zero
"""

from __future__ import annotations

import math


def cholesky_core(a, out, p):  # pragma: no cover - compiled
    n = a.shape[1]
    for j in range(n):
        for i in range(j):
            out[p, i, j] = 0.0
        s = a[p, j, j]
        for k in range(j):
            s -= out[p, j, k] * out[p, j, k]
        if not s > 0.0:
            return j + 1
        d = math.sqrt(s)
        out[p, j, j] = d
        for i in range(j + 1, n):
            t = a[p, i, j]
            for k in range(j):
                t -= out[p, i, k] * out[p, j, k]
            out[p, i, j] = t / d
    return 0


def lower_solve_core(a, b, out, p, j, unit):  # pragma: no cover - compiled
    n = a.shape[1]
    for i in range(n):
        s = b[p, i, j]
        for m in range(i):
            s -= a[p, i, m] * out[p, m, j]
        out[p, i, j] = s if unit else s / a[p, i, i]


def upper_solve_core(a, b, out, p, j, unit):  # pragma: no cover - compiled
    n = a.shape[1]
    for i in range(n - 1, -1, -1):
        s = b[p, i, j]
        for m in range(i + 1, n):
            s -= a[p, i, m] * out[p, m, j]
        out[p, i, j] = s if unit else s / a[p, i, i]


def lu_solve_core(work, x, p):  # pragma: no cover - compiled
    n = work.shape[1]
    k_cols = x.shape[2]
    for c in range(n):
        pivot = c
        best = abs(work[p, c, c])
        for r in range(c + 1, n):
            if abs(work[p, r, c]) > best:
                best = abs(work[p, r, c])
                pivot = r
        if best == 0.0:
            return c + 1
        if pivot != c:
            for m in range(n):
                t = work[p, c, m]
                work[p, c, m] = work[p, pivot, m]
                work[p, pivot, m] = t
            for m in range(k_cols):
                t = x[p, c, m]
                x[p, c, m] = x[p, pivot, m]
                x[p, pivot, m] = t
        for r in range(c + 1, n):
            factor = work[p, r, c] / work[p, c, c]
            for m in range(c, n):
                work[p, r, m] -= factor * work[p, c, m]
            for m in range(k_cols):
                x[p, r, m] -= factor * x[p, c, m]
    for m in range(k_cols):
        for i in range(n - 1, -1, -1):
            s = x[p, i, m]
            for q in range(i + 1, n):
                s -= work[p, i, q] * x[p, q, m]
            x[p, i, m] = s / work[p, i, i]
    return 0
