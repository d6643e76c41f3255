"""Per-matrix factorization and substitution loops, written once for both targets.

Plain Python over arrays and indices: numdiff.kernels.triangular and linalg_small compile them
with ``njit(inline="always")`` for the CPU, numdiff.cuda.kernels.linalg with ``cuda.jit(device=True)``
for the GPU, so both devices run the same arithmetic. Each works on matrix `p` of a (batch, n, n)
stack (and column `j` of a (batch, n, k) right-hand side); none allocates.

    cholesky_core(a, out, p)          out[p] = L, lower, with A = L L^T; returns 0, or the order of
                                      the first leading minor that is not positive definite
    lower_solve_core(a, b, out, p, j, unit)   forward substitution for column j
    upper_solve_core(a, b, out, p, j, unit)   back substitution for column j
    lu_solve_core(work, x, p)         Gaussian elimination with partial pivoting on work[p] (a copy
                                      of A, overwritten) and x[p] (B on entry, X on exit); returns
                                      0, or k when the k-th pivot is exactly zero
    cholesky_backward_core(low, grad, out, p)   out[p] = gA of L = cholesky(A) from L and gL:
                                      Phi = tril(L^T tril(gL)) with its diagonal halved, then
                                      S = L^-T Phi L^-1 by two substitutions, out = (S + S^T) / 2
    lu_factor_core(lu, piv, p)        LAPACK getrf's partial pivoting on lu[p] in place (unit L
                                      below the diagonal, U on and above it), piv[p, c] the row
                                      swapped with row c (0-based); returns 0, or k for the first
                                      exactly zero pivot U[k-1, k-1] (elimination goes on past it,
                                      as LAPACK's does, so the factors still give the determinant)
    slogdet_core(lu, piv, info, sign, logabs, p)   sign[p] and logabs[p] = log|det A[p]| from
                                      lu_factor_core's factors and info
    lu_substitute_core(lu, piv, x, p, transposed)   x[p] <- A^-1 x[p] (A^-T x[p] when
                                      `transposed`) from lu_factor_core's factors, row by row
                                      (the inner loop runs along a row of x's k columns)
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


def lu_factor_core(lu, piv, p):  # pragma: no cover - compiled
    n = lu.shape[1]
    info = 0
    for c in range(n):
        pivot = c
        best = abs(lu[p, c, c])
        for r in range(c + 1, n):
            if abs(lu[p, r, c]) > best:
                best = abs(lu[p, r, c])
                pivot = r
        piv[p, c] = pivot
        if best == 0.0:
            if info == 0:
                info = c + 1
            continue
        if pivot != c:
            for m in range(n):
                t = lu[p, c, m]
                lu[p, c, m] = lu[p, pivot, m]
                lu[p, pivot, m] = t
        for r in range(c + 1, n):
            factor = lu[p, r, c] / lu[p, c, c]
            lu[p, r, c] = factor
            for m in range(c + 1, n):
                lu[p, r, m] -= factor * lu[p, c, m]
    return info


def slogdet_core(lu, piv, info, sign, logabs, p):  # pragma: no cover - compiled
    """sign[p] and logabs[p] = log|det| from lu_factor_core's factors of matrix p and its `info`
    (sign 0 and logabs -inf when singular)."""
    negative = False
    total = 0.0
    for c in range(lu.shape[1]):
        d = lu[p, c, c]
        negative ^= (d < 0.0) ^ (piv[p, c] != c)
        total += math.log(abs(d)) if d != 0.0 else -math.inf
    sign[p] = 0.0 if info else (-1.0 if negative else 1.0)
    logabs[p] = total


def lu_substitute_core(lu, piv, x, p, transposed):  # pragma: no cover - compiled
    n, k = lu.shape[1], x.shape[2]
    if not transposed:  # P A = L U: X = U^-1 L^-1 (P B), the swaps applied in order
        for c in range(n):
            r = piv[p, c]
            if r != c:
                for j in range(k):
                    t = x[p, c, j]
                    x[p, c, j] = x[p, r, j]
                    x[p, r, j] = t
        for i in range(n):
            for m in range(i):
                f = lu[p, i, m]
                for j in range(k):
                    x[p, i, j] -= f * x[p, m, j]
        for i in range(n - 1, -1, -1):
            for m in range(i + 1, n):
                f = lu[p, i, m]
                for j in range(k):
                    x[p, i, j] -= f * x[p, m, j]
            d = lu[p, i, i]
            for j in range(k):
                x[p, i, j] /= d
        return
    # A^T = U^T L^T P: X = P^T L^-T U^-T B, the swaps undone in reverse order
    for i in range(n):
        for m in range(i):
            f = lu[p, m, i]
            for j in range(k):
                x[p, i, j] -= f * x[p, m, j]
        d = lu[p, i, i]
        for j in range(k):
            x[p, i, j] /= d
    for i in range(n - 1, -1, -1):
        for m in range(i + 1, n):
            f = lu[p, m, i]
            for j in range(k):
                x[p, i, j] -= f * x[p, m, j]
    for c in range(n - 1, -1, -1):
        r = piv[p, c]
        if r != c:
            for j in range(k):
                t = x[p, c, j]
                x[p, c, j] = x[p, r, j]
                x[p, r, j] = t


def cholesky_backward_core(low, grad, out, p):  # pragma: no cover - compiled
    n = low.shape[1]
    for i in range(n):
        for j in range(n):
            out[p, i, j] = 0.0
    for k in range(n):  # Phi = tril(L^T tril(gL)): row k of L and of gL add into rows i <= k
        for i in range(k + 1):
            f = low[p, k, i]
            for j in range(i + 1):
                out[p, i, j] += f * grad[p, k, j]
    for i in range(n):
        out[p, i, i] *= 0.5
    # Pass 0: X = L^-T Phi. Pass 1: S^T = L^-T X^T, the same substitution on X transposed; the
    # symmetric (S + S^T) / 2 is then the same from S^T. Each substitution goes row by row
    # (L^T is upper), the inner loop along a contiguous row of out.
    for sweep in range(2):
        if sweep == 1:
            for i in range(n):
                for j in range(i + 1, n):
                    t = out[p, i, j]
                    out[p, i, j] = out[p, j, i]
                    out[p, j, i] = t
        for i in range(n - 1, -1, -1):
            for k in range(i + 1, n):
                f = low[p, k, i]
                for j in range(n):
                    out[p, i, j] -= f * out[p, k, j]
            r = 1.0 / low[p, i, i]
            for j in range(n):
                out[p, i, j] *= r
    for i in range(n):
        for j in range(i + 1, n):
            t = 0.5 * (out[p, i, j] + out[p, j, i])
            out[p, i, j] = t
            out[p, j, i] = t
