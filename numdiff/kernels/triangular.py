"""Batched small-matrix linear algebra on the CPU: triangular solves, Cholesky, LU solves.

The launchers have the names and arguments of their CUDA twins (numdiff.cuda.kernels.linalg):

    triangular_solve(a, b, out, upper, unit)   a (batch, n, n), b and out (batch, n, k), float
    cholesky_batched(a, out, info)             out = L per matrix; info[p] = 0 or the failing order
    lu_solve_batched(a, b, out, info)          out = A^-1 B by partial pivoting; info[p] = 0 or the
                                               zero pivot's position (1-based)

The triangular solve is a compiled Numba loop (batch in parallel x right-hand side column x row,
O(n^2 k) a matrix): LAPACK's trsm takes one matrix a call, so a batch of 256 8x8 systems would
pay 256 Python-level calls. Cholesky and the LU solve are LAPACK's, through NumPy's batched loop,
which measured 5x faster here than the same per-matrix loops compiled with prange (98 against
575 us for 256 8x8 Cholesky factors); the GPU runs those loops (numdiff.kernels._linalg_cores).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff._lazy import lazy_module
from numdiff.kernels._linalg_cores import lower_solve_core, upper_solve_core
from numdiff.kernels._self_healing_cache import njit

scipy_linalg = lazy_module("scipy.linalg")

__all__ = ["cholesky_batched", "lu_solve_batched", "triangular_solve"]

_lower = njit(cache=True, inline="always")(lower_solve_core)
_upper = njit(cache=True, inline="always")(upper_solve_core)


@njit(cache=True, parallel=True)
def _solve_lower_batched(a, b, out, unit):  # pragma: no cover - compiled
    for p in prange(b.shape[0]):
        for j in range(b.shape[2]):
            _lower(a, b, out, p, j, unit)


@njit(cache=True, parallel=True)
def _solve_upper_batched(a, b, out, unit):  # pragma: no cover - compiled
    for p in prange(b.shape[0]):
        for j in range(b.shape[2]):
            _upper(a, b, out, p, j, unit)


def _check(op: str, a: np.ndarray, *others: np.ndarray) -> None:
    if a.ndim != 3 or a.shape[1] != a.shape[2] or any(o.shape[:2] != a.shape[:2] for o in others):
        raise ValueError(f"{op}: expected (batch, n, n) and (batch, n, k) arrays, got {[x.shape for x in (a, *others)]}")
    if any(x.dtype != a.dtype for x in others) or a.dtype.kind != "f":
        raise TypeError(f"{op}: expected one float dtype, got {[x.dtype for x in (a, *others)]}")


def triangular_solve(a: np.ndarray, b: np.ndarray, out: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """out[p] = a[p]^-1 b[p] for triangular a[p] (the `upper` or lower triangle; unit diagonal if `unit`)."""
    _check("triangular_solve", a, b, out)
    (_solve_upper_batched if upper else _solve_lower_batched)(a, b, out, bool(unit))
    return out


def cholesky_batched(a: np.ndarray, out: np.ndarray, info: np.ndarray) -> np.ndarray:
    """out[p] = the lower Cholesky factor of a[p]; info[p] = 0, or the order of the failing minor."""
    _check("cholesky_batched", a, out)
    try:
        out[...] = np.linalg.cholesky(a)
        info[...] = 0
    except np.linalg.LinAlgError:  # one matrix failed: factor each, reporting the order that failed
        for p, m in enumerate(a):
            info[p] = 0
            try:
                out[p] = np.linalg.cholesky(m)
            except np.linalg.LinAlgError:
                out[p] = np.nan
                info[p] = _failing_minor(m)
    return out


def _failing_minor(m: np.ndarray) -> int:
    """The order of the first leading minor that is not positive definite: potrf's info, from one
    factorization (testing each minor in turn took O(n^4): 40 s at order 300)."""
    return int(scipy_linalg.get_lapack_funcs("potrf", (m,))(m, lower=1, clean=0)[1])


def lu_solve_batched(a: np.ndarray, b: np.ndarray, out: np.ndarray, info: np.ndarray) -> np.ndarray:
    """out[p] = a[p]^-1 b[p] by Gaussian elimination with partial pivoting; info[p] = 0 or the zero pivot."""
    _check("lu_solve_batched", a, b, out)
    try:
        out[...] = np.linalg.solve(a, b)
        info[...] = 0
    except np.linalg.LinAlgError:
        for p in range(len(a)):
            try:
                out[p] = np.linalg.solve(a[p], b[p])
                info[p] = 0
            except np.linalg.LinAlgError:
                out[p] = np.nan
                info[p] = _zero_pivot(a[p])
    return out


def _zero_pivot(m: np.ndarray) -> int:
    """The 1-based position of the first exactly zero pivot of partial-pivoting elimination."""
    work = m.astype(np.float64).copy()
    for c in range(len(work)):
        pivot = c + int(np.argmax(np.abs(work[c:, c])))
        if work[pivot, c] == 0.0:
            return c + 1
        work[[c, pivot]] = work[[pivot, c]]
        work[c + 1 :] -= np.outer(work[c + 1 :, c] / work[c, c], work[c])
    return 0
