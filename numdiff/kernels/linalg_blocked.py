"""Blocked, parallel LU (partial pivoting) and Cholesky of one large matrix, and triangular solves
with many right-hand sides, over numdiff's threads.

SciPy's OpenBLAS LAPACK barely runs faster on two threads than on one at order 512 (getrf 4.3 ->
4.2 ms, issue 29), and its thread pool spins beside Numba's. These kernels run the right-looking
blocked algorithms LAPACK's own getrf/potrf use, with the bulk of the flops (the trailing update)
split over Numba threads, each a single-threaded BLAS call; LAPACK (SciPy's, at one thread) factors
only the narrow panels:

    lu_factor_blocked(a, block, threads) -> (lu, piv, info)
        per step k (b = min(block, n - k) columns):
          getrf on the panel A[k:, k:k+b]  (LAPACK, calling thread)     ~ n^2 b / 2 flops in all
          the panel's row swaps on the columns left and right of it
          per thread, a block of the columns c right of the panel:     (in parallel)
            A[k:k+b, c] = L11^-1 A[k:k+b, c]            (trsm, unit lower)
            A[k+b:, c] -= A[k+b:, k:k+b] A[k:k+b, c]     (gemm)       ~ 2 n^3 / 3 flops in all
        lu, piv, info as scipy.linalg.lu_factor and getrf give them: lu (n, n) Fortran order, L\\U;
        piv (n,) int32 0-based row swaps in order; info 0, or k where U[k-1, k-1] is exactly zero.

    cholesky_blocked(a, block, threads) -> (low, info)
        per step k: potrf on the diagonal block (LAPACK, calling thread); then per thread a block of
        rows of L21 = A21 L11^-T (trsm); then per thread every `threads`-th 32-column chunk c0:c1 of
        the trailing lower triangle, A[c0:, c0:c1] -= L[c0:, k:k+b] L[c0:c1, k:k+b]^T (gemm, so only
        the diagonal blocks do extra work). low (n, n) Fortran order, zero above the diagonal; info
        0, or the order of the leading minor that is not positive definite (potrf's), low then
        unfinished.

    solve_triangular_blocked(t, b, upper, unit, threads) -> T^-1 B, the columns of B split over threads
        (trsm each).
    lu_solve_blocked(lu, piv, b, transposed, threads) -> A^-1 B or A^-T B from the factors (getrs's
        steps: row swaps and two trsm), the columns of B split over threads.

A Fortran-ordered A is handled as its row-major transpose ``at`` (``at[j, i] = A[i, j]``), so the
GEMMs are numdiff.kernels._blas.gemm calls on row-major views. getrf, potrf and trsm are SciPy's
(numdiff.kernels._blas_library.register_factor_symbols), called by address with leading dimension
n, in place. Extra memory: the copy of A the factors are written into.

Measured (2 cores, float64, order 512): DEFAULT_BLOCK's docstring; benchmarks/RESULTS.md for the
public functions against torch.
"""

from __future__ import annotations

import numpy as np
from numba import prange, types

from numdiff.kernels._blas import _data_ptr, gemm, prepare_blas
from numdiff.kernels._blas_library import FACTOR_SYMBOLS, register_factor_symbols
from numdiff.kernels._self_healing_cache import njit

__all__ = ["DEFAULT_BLOCK", "cholesky_blocked", "lu_factor_blocked", "lu_solve_blocked", "solve_triangular_blocked"]

DEFAULT_BLOCK = 128
"""Panel width: columns factored by LAPACK per step. At order 512, one thread, 32 to 128 were within
noise of each other (LU 4.1-4.8 ms against getrf's 4.1; Cholesky 2.7-3.1 against potrf's 3.2). At two
threads on a loaded machine (load 7, 41 alternating runs, ms min / median), 128 against 64: LU 3.6 / 48
against 10.4 / 96, Cholesky 2.6 / 19 against 2.7 / 82 (getrf 4.3 / 21, potrf 3.4 / 19 at one thread):
each step's parallel region waits for a thread that lost its core, and 128 has half as many steps.
On a quiet machine 64 would leave less of LU serial (the panels: n^2 b / 2 of 2 n^3 / 3 flops)."""

register_factor_symbols()  # before any kernel below is compiled or loaded from the cache
_VOID = types.voidptr
_GETRF = {k: types.ExternalFunction(FACTOR_SYMBOLS[f"{k}getrf"], types.void(*(_VOID,) * 6)) for k in "sd"}
_POTRF = {k: types.ExternalFunction(FACTOR_SYMBOLS[f"{k}potrf"], types.void(*(_VOID,) * 5)) for k in "sd"}
_TRSM = {k: types.ExternalFunction(FACTOR_SYMBOLS[f"{k}trsm"], types.void(*(_VOID,) * 11)) for k in "sd"}
_SGETRF, _DGETRF = _GETRF["s"], _GETRF["d"]
_SPOTRF, _DPOTRF = _POTRF["s"], _POTRF["d"]
_STRSM, _DTRSM = _TRSM["s"], _TRSM["d"]

# Below this many multiply-adds in a step's update the step runs on the calling thread.
_PARALLEL_MIN_MACS = 1 << 17

# Columns per GEMM of the Cholesky update, dealt to the threads in turn: the columns' heights fall
# from left to right, so chunks much narrower than the trailing matrix keep the threads' shares even
# (chunks of a 128-column block, at order 512, gave one thread twice the other's work).
_UPDATE_CHUNK = 32


@njit(cache=True, nogil=True, inline="always")
def _at(at, row, col):
    """The address of A[row, col], A column-major and stored as its row-major transpose `at`."""
    return _data_ptr(at[col:, row:])


@njit(cache=True, nogil=True)
def _getrf(at, k, rows, cols, ipiv):
    """getrf on the rows x cols block of A at (k, k); ipiv (cols,) gets 1-based swaps; returns info."""
    ints = np.empty(4, np.int32)
    ints[0], ints[1], ints[2], ints[3] = rows, cols, at.shape[1], 0
    m_, n_, ld_, info_ = _data_ptr(ints[0:1]), _data_ptr(ints[1:2]), _data_ptr(ints[2:3]), _data_ptr(ints[3:4])
    if at.itemsize == 4:
        _SGETRF(m_, n_, _at(at, k, k), ld_, _data_ptr(ipiv), info_)
    else:
        _DGETRF(m_, n_, _at(at, k, k), ld_, _data_ptr(ipiv), info_)
    return ints[3]


@njit(cache=True, nogil=True)
def _potrf(at, k, order):
    """potrf (lower) on the order x order block of A at (k, k); returns info."""
    ints = np.empty(3, np.int32)
    ints[0], ints[1], ints[2] = order, at.shape[1], 0
    uplo = np.empty(1, np.uint8)
    uplo[0] = ord("L")
    if at.itemsize == 4:
        _SPOTRF(_data_ptr(uplo), _data_ptr(ints[0:1]), _at(at, k, k), _data_ptr(ints[1:2]), _data_ptr(ints[2:3]))
    else:
        _DPOTRF(_data_ptr(uplo), _data_ptr(ints[0:1]), _at(at, k, k), _data_ptr(ints[1:2]), _data_ptr(ints[2:3]))
    return ints[2]


@njit(cache=True, nogil=True)
def _trsm(flags, rows, cols, t_at, t_row, t_col, at, row, col):
    """BLAS trsm, alpha 1, in place on the rows x cols block of B at (row, col) (B stored as `at`),
    with the triangle T at (t_row, t_col) of `t_at`; flags: side, uplo, transa, diag (Fortran chars)."""
    ints = np.empty(4, np.int32)
    ints[0], ints[1], ints[2], ints[3] = rows, cols, t_at.shape[1], at.shape[1]
    alpha = np.ones(1, at.dtype)
    f = _data_ptr(flags)
    side, uplo, trans, diag = f, _data_ptr(flags[1:2]), _data_ptr(flags[2:3]), _data_ptr(flags[3:4])
    m_, n_, lda, ldb = _data_ptr(ints[0:1]), _data_ptr(ints[1:2]), _data_ptr(ints[2:3]), _data_ptr(ints[3:4])
    t, b = _at(t_at, t_row, t_col), _at(at, row, col)
    if at.itemsize == 4:
        _STRSM(side, uplo, trans, diag, m_, n_, _data_ptr(alpha), t, lda, b, ldb)
    else:
        _DTRSM(side, uplo, trans, diag, m_, n_, _data_ptr(alpha), t, lda, b, ldb)


@njit(cache=True, nogil=True, inline="always")
def _flags(side, uplo, trans, diag):
    flags = np.empty(4, np.uint8)
    flags[0], flags[1], flags[2], flags[3] = ord(side), ord(uplo), ord(trans), ord(diag)
    return flags


@njit(cache=True, nogil=True)
def _swap_rows(at, piv, k, b, first, stop):
    """The swaps piv[k:k+b] on A's rows, in columns first:stop."""
    for c in range(first, stop):
        column = at[c]
        for i in range(k, k + b):
            p = piv[i]
            if p != i:
                column[i], column[p] = column[p], column[i]


@njit(cache=True, nogil=True)
def _lu_update_columns(at, k, b, first, stop):
    """Columns first:stop of the step at k: U12 = L11^-1 A12, then A22 -= L21 U12."""
    if stop <= first:
        return
    n = at.shape[0]
    _trsm(_flags("L", "L", "N", "U"), b, stop - first, at, k, k, at, k, first)
    if k + b < n:
        gemm(False, False, -1.0, at[first:stop, k:k + b], at[k:k + b, k + b:], 1.0, at[first:stop, k + b:])


@njit(cache=True, nogil=True, parallel=True)
def _lu_update_split(at, k, b, parts):
    n = at.shape[0]
    rest = n - k - b
    for t in prange(parts):
        _lu_update_columns(at, k, b, k + b + t * rest // parts, k + b + (t + 1) * rest // parts)


@njit(cache=True, nogil=True)
def _lu_factor_t(at, piv, block, parts):
    n = at.shape[0]
    info = 0
    ipiv = np.empty(block, np.int32)
    for k in range(0, n, block):
        b = min(block, n - k)
        step = _getrf(at, k, n - k, b, ipiv)
        if step > 0 and info == 0:
            info = step + k
        for i in range(b):
            piv[k + i] = ipiv[i] - 1 + k
        _swap_rows(at, piv, k, b, 0, k)
        _swap_rows(at, piv, k, b, k + b, n)
        rest = n - k - b
        if parts > 1 and rest * (n - k) * b >= _PARALLEL_MIN_MACS and rest >= 2 * parts:
            _lu_update_split(at, k, b, parts)
        else:
            _lu_update_columns(at, k, b, k + b, n)
    return info


@njit(cache=True, nogil=True)
def _cholesky_panel_rows(at, k, b, first, stop):
    """Rows first:stop of L21 = A21 L11^-T."""
    if stop > first:
        _trsm(_flags("R", "L", "T", "N"), stop - first, b, at, k, k, at, first, k)


@njit(cache=True, nogil=True)
def _cholesky_update_columns(at, k, b, chunk, t, parts):
    """Every `parts`-th column chunk c0:c1 (from the t-th) of the trailing lower triangle:
    A[c0:, c0:c1] -= L[c0:, k:k+b] L[c0:c1, k:k+b]^T, written as at[c0:c1, c0:] -= P^T P[:, c0:]."""
    n = at.shape[0]
    c0 = k + b + t * chunk
    while c0 < n:
        c1 = min(c0 + chunk, n)
        gemm(True, False, -1.0, at[k:k + b, c0:c1], at[k:k + b, c0:], 1.0, at[c0:c1, c0:])
        c0 += parts * chunk


@njit(cache=True, nogil=True, parallel=True)
def _cholesky_panel_split(at, k, b, parts):
    rest = at.shape[0] - k - b
    for t in prange(parts):
        _cholesky_panel_rows(at, k, b, k + b + t * rest // parts, k + b + (t + 1) * rest // parts)


@njit(cache=True, nogil=True, parallel=True)
def _cholesky_update_split(at, k, b, parts):
    # A region of its own after the panel's: every update reads rows of L21 that other threads solved.
    for t in prange(parts):
        _cholesky_update_columns(at, k, b, _UPDATE_CHUNK, t, parts)


@njit(cache=True, nogil=True)
def _cholesky_t(at, block, parts):
    n = at.shape[0]
    for k in range(0, n, block):
        b = min(block, n - k)
        step = _potrf(at, k, b)
        if step > 0:
            return step + k
        rest = n - k - b
        if parts > 1 and rest * rest * b >= 2 * _PARALLEL_MIN_MACS and rest >= 2 * parts:
            _cholesky_panel_split(at, k, b, parts)
            _cholesky_update_split(at, k, b, parts)
        else:
            _cholesky_panel_rows(at, k, b, k + b, n)
            _cholesky_update_columns(at, k, b, _UPDATE_CHUNK, 0, 1)
    for c in range(1, n):
        at[c, :c] = 0.0
    return 0


@njit(cache=True, nogil=True)
def _solve_columns(t_at, upper, unit, bt, first, stop):
    """Columns first:stop of T^-1 B (B stored as its transpose `bt`)."""
    if stop > first:
        _trsm(_flags("L", "U" if upper else "L", "N", "U" if unit else "N"), t_at.shape[0], stop - first,
              t_at, 0, 0, bt, 0, first)


@njit(cache=True, nogil=True, parallel=True)
def _solve_split(t_at, upper, unit, bt, parts):
    k = bt.shape[0]
    for t in prange(parts):
        _solve_columns(t_at, upper, unit, bt, t * k // parts, (t + 1) * k // parts)


@njit(cache=True, nogil=True)
def _lu_solve_columns(lu_t, piv, transposed, bt, first, stop):
    """Columns first:stop of A^-1 B = U^-1 L^-1 P^T B, or of A^-T B = P L^-T U^-T B (B stored as `bt`)."""
    if stop <= first:
        return
    n = lu_t.shape[0]
    if transposed:
        _trsm(_flags("L", "U", "T", "N"), n, stop - first, lu_t, 0, 0, bt, 0, first)
        _trsm(_flags("L", "L", "T", "U"), n, stop - first, lu_t, 0, 0, bt, 0, first)
    for c in range(first, stop):
        column = bt[c]
        for step in range(n):
            i = n - 1 - step if transposed else step
            p = piv[i]
            if p != i:
                column[i], column[p] = column[p], column[i]
    if not transposed:
        _trsm(_flags("L", "L", "N", "U"), n, stop - first, lu_t, 0, 0, bt, 0, first)
        _trsm(_flags("L", "U", "N", "N"), n, stop - first, lu_t, 0, 0, bt, 0, first)


@njit(cache=True, nogil=True, parallel=True)
def _lu_solve_split(lu_t, piv, transposed, bt, parts):
    k = bt.shape[0]
    for t in prange(parts):
        _lu_solve_columns(lu_t, piv, transposed, bt, t * k // parts, (t + 1) * k // parts)


def _split_columns(n: int, k: int, threads: int) -> bool:
    """Whether a solve with k right-hand sides of order n is split over `threads` threads."""
    return threads > 1 and k >= 2 * threads and n * n * k >= 2 * _PARALLEL_MIN_MACS


def _check(op: str, a: np.ndarray, block: int, threads: int) -> None:
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{op}: expected one square matrix, got shape {a.shape}")
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{op}: expected float32 or float64, got {a.dtype}")
    if block < 1 or threads < 1:
        raise ValueError(f"{op}: block and threads must be at least 1, got block={block}, threads={threads}")


def lu_factor_blocked(a: np.ndarray, block: int | None = None, threads: int = 1) -> tuple[np.ndarray, np.ndarray, int]:
    """(lu, piv, info) of a square float32/float64 matrix, as scipy.linalg.lu_factor and getrf's info;
    `block` columns per panel (DEFAULT_BLOCK when None).

    >>> lu, piv, info = lu_factor_blocked(np.array([[1.0, 2.0], [3.0, 4.0]]), block=1)
    >>> piv.tolist(), info
    ([1, 1], 0)
    """
    block = DEFAULT_BLOCK if block is None else block
    _check("lu_factor_blocked", a, block, threads)
    prepare_blas()
    lu = np.array(a, order="F")
    piv = np.empty(a.shape[0], np.int32)
    info = _lu_factor_t(lu.T, piv, block, threads) if a.size else 0
    return lu, piv, int(info)


def cholesky_blocked(a: np.ndarray, block: int | None = None, threads: int = 1) -> tuple[np.ndarray, int]:
    """(L, info) from the lower triangle of a square float32/float64 matrix, as potrf's (see the module
    doc); `block` columns per panel (DEFAULT_BLOCK when None).

    >>> cholesky_blocked(np.array([[4.0, 2.0], [2.0, 3.0]]), block=1)[0].round(4).tolist()
    [[2.0, 0.0], [1.0, 1.4142]]
    """
    block = DEFAULT_BLOCK if block is None else block
    _check("cholesky_blocked", a, block, threads)
    prepare_blas()
    low = np.array(a, order="F")
    info = _cholesky_t(low.T, block, threads) if a.size else 0
    return low, int(info)


def solve_triangular_blocked(t: np.ndarray, b: np.ndarray, upper: bool, unit: bool = False,
                             threads: int = 1) -> np.ndarray:
    """T^-1 B for square triangular T (its `upper` or lower triangle, a unit diagonal when `unit`) and
    B (n, k), same float dtype; a zero on T's diagonal gives inf or NaN (trsm does not check).

    >>> solve_triangular_blocked(np.array([[2.0, 0.0], [1.0, 1.0]]), np.ones((2, 1)), upper=False).tolist()
    [[0.5], [0.5]]
    """
    _check("solve_triangular_blocked", t, 1, threads)
    if b.ndim != 2 or b.shape[0] != t.shape[0] or b.dtype != t.dtype:
        raise ValueError(f"solve_triangular_blocked: B {b.shape} {b.dtype} does not fit T {t.shape} {t.dtype}")
    prepare_blas()
    out = np.array(b, order="F")
    if out.size:
        t_at = np.asfortranarray(t).T
        k = b.shape[1]
        if _split_columns(t.shape[0], k, threads):
            _solve_split(t_at, upper, unit, out.T, threads)
        else:
            _solve_columns(t_at, upper, unit, out.T, 0, k)
    return out


def lu_solve_blocked(lu: np.ndarray, piv: np.ndarray, b: np.ndarray, transposed: bool = False,
                     threads: int = 1) -> np.ndarray:
    """A^-1 B (A^-T B when `transposed`) from A's (lu, piv) as :func:`lu_factor_blocked` or
    scipy.linalg.lu_factor give them, B (n, k) of lu's dtype; the columns of B split over threads.

    >>> lu, piv, _ = lu_factor_blocked(np.array([[1.0, 2.0], [3.0, 4.0]]), block=1)
    >>> lu_solve_blocked(lu, piv, np.array([[5.0], [6.0]])).round(6).tolist()
    [[-4.0], [4.5]]
    """
    _check("lu_solve_blocked", lu, 1, threads)
    n = lu.shape[0]
    if b.ndim != 2 or b.shape[0] != n or b.dtype != lu.dtype or piv.shape != (n,):
        raise ValueError(f"lu_solve_blocked: B {b.shape} {b.dtype} and pivots {piv.shape} do not fit LU "
                         f"{lu.shape} {lu.dtype}")
    prepare_blas()
    out = np.array(b, order="F")
    if out.size:
        lu_t = np.asfortranarray(lu).T
        pivots = np.ascontiguousarray(piv, dtype=np.int32)
        if _split_columns(n, b.shape[1], threads):
            _lu_solve_split(lu_t, pivots, transposed, out.T, threads)
        else:
            _lu_solve_columns(lu_t, pivots, transposed, out.T, 0, b.shape[1])
    return out
