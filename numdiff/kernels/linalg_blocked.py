"""Blocked, parallel LU (partial pivoting) and Cholesky of one large matrix, and triangular solves
with many right-hand sides, over numdiff's threads.

SciPy's OpenBLAS LAPACK barely runs faster on two threads than on one at order 512 (getrf 4.3 ->
4.2 ms, issue 29), and its thread pool spins beside Numba's. These kernels run the right-looking
blocked algorithms LAPACK's own getrf/potrf use, with the bulk of the flops (the trailing update)
split over Numba threads, each a single-threaded BLAS call; LAPACK (SciPy's, at one thread) factors
only the narrow panels:

    lu_factor_blocked(a, block, threads) -> (lu, piv, info)
        per step k (b = min(block, n - k) columns), panel k already factored (getrf, LAPACK):
          thread 0: the columns of panel k + b: panel k's row swaps, then the update below; then
                    getrf on that next panel (look-ahead: the serial ~ n^2 b / 2 flops of the
                    panels run beside the other threads' updates instead of between them); then
                    a few more columns, so that the threads' shares even out (_PANEL_WEIGHT)
          other threads, a block each of the remaining columns c:
            panel k's row swaps on the rows of c
            A[k:k+b, c] = L11^-1 A[k:k+b, c]            (trsm, unit lower)
            A[k+b:, c] -= A[k+b:, k:k+b] A[k:k+b, c]     (gemm)       ~ 2 n^3 / 3 flops in all
        at the end, each panel's swaps on the columns left of it. Without look-ahead, a step's
        update waited for its panel: at order 512 on two threads the serial panels (1.7 of getrf's
        4.1 ms with panels of 128) were why the split LU ran no faster than getrf.
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
(numdiff.kernels._lapack_calls), called by address with leading dimension
n, in place. Extra memory: the copy of A the factors are written into.

Measured (2 cores, float64, order 512): DEFAULT_BLOCK's and LU_BLOCK's docstrings; benchmarks/RESULTS.md for the
public functions against torch.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._blas import gemm, prepare_blas
from numdiff.kernels._lapack_calls import blas_flags, getrf, potrf, swap_rows, trsm
from numdiff.kernels._self_healing_cache import njit

__all__ = ["DEFAULT_BLOCK", "LU_BLOCK", "cholesky_blocked", "lu_factor_blocked", "lu_solve_blocked", "solve_triangular_blocked"]

DEFAULT_BLOCK = 128
"""Panel width: columns factored by LAPACK per step. At order 512, one thread, 32 to 128 were within
noise of each other (LU 4.1-4.8 ms against getrf's 4.1; Cholesky 2.7-3.1 against potrf's 3.2). At two
threads on a loaded machine (load 7, 41 alternating runs, ms min / median), 128 against 64: LU 3.6 / 48
against 10.4 / 96, Cholesky 2.6 / 19 against 2.7 / 82 (getrf 4.3 / 21, potrf 3.4 / 19 at one thread):
each step's parallel region waits for a thread that lost its core, and 128 has half as many steps.
On a quiet machine 64 would leave less of LU serial (the panels: n^2 b / 2 of 2 n^3 / 3 flops)."""

LU_BLOCK = 128
"""Panel width of the LU at more than one thread (look-ahead). Order 512, two threads, load 8 on 2
CPUs, 41 alternating runs, ms min / median (two runs): panels of 128 10.1 / 16.5 and 12.6 / 23.1,
panels of 64 16.0 / 24.0 and 20.0 / 29.8, the LU before look-ahead (panels of 128) 13.0 / 20.7 and
16.7 / 24.0, getrf at one thread 4.5 / 12.5. A loaded machine makes each of the 2n/b parallel regions
wait for a thread that lost its core; on a quiet one the estimate is close (the unhidden first panel:
getrf of 512 x 128 0.69 ms against 512 x 64's 0.27, one thread; narrower panels even the shares)."""

# Below this many multiply-adds in a step's update the step runs on the calling thread.
_PARALLEL_MIN_MACS = 1 << 17

# Columns per GEMM of the Cholesky update, dealt to the threads in turn: the columns' heights fall
# from left to right, so chunks much narrower than the trailing matrix keep the threads' shares even
# (chunks of a 128-column block, at order 512, gave one thread twice the other's work).
_UPDATE_CHUNK = 32

# A panel's getrf (BLAS-2 bound) costs about as much as updating twice its columns (order 512, panels
# of 64: getrf of 448 x 64 0.27 ms, the update of 64 columns of that height 0.15 ms).
_PANEL_WEIGHT = 2


@njit(cache=True, nogil=True)
def _lu_update_columns(at, k, b, first, stop):
    """Columns first:stop of the step at k: U12 = L11^-1 A12, then A22 -= L21 U12."""
    if stop <= first:
        return
    n = at.shape[0]
    trsm(blas_flags("L", "L", "N", "U"), b, stop - first, at, k, k, at, k, first)
    if k + b < n:
        gemm(False, False, -1.0, at[first:stop, k:k + b], at[k:k + b, k + b:], 1.0, at[first:stop, k + b:])


@njit(cache=True, nogil=True)
def _lu_step_columns(at, piv, k, b, first, stop):
    """Columns first:stop at the step of panel k: its row swaps, then the update."""
    swap_rows(at, piv, k, b, first, stop)
    _lu_update_columns(at, k, b, first, stop)


@njit(cache=True, nogil=True)
def _lu_panel(at, piv, k, b, ipiv, info):
    """getrf on panel k (its b columns, rows k:); piv[k:k+b] its 0-based swaps; info[0] the first
    exactly zero pivot's 1-based index (once set, kept)."""
    step = getrf(at, k, at.shape[0] - k, b, ipiv)
    if step > 0 and info[0] == 0:
        info[0] = step + k
    for i in range(b):
        piv[k + i] = ipiv[i] - 1 + k


@njit(cache=True, nogil=True, parallel=True)
def _lu_lookahead_step(at, piv, k, b, nb, split, parts, ipiv, info):
    """The step of panel k with the next panel (nb columns) factored during it: thread 0 updates the
    next panel's columns, factors it, then updates columns up to `split`; the other threads share the
    columns split:n. Only thread 0 writes piv and info, and the threads' columns are disjoint."""
    n = at.shape[0]
    nxt = k + b
    rest = n - split
    for t in prange(parts):
        if t == 0:
            _lu_step_columns(at, piv, k, b, nxt, nxt + nb)
            _lu_panel(at, piv, nxt, nb, ipiv, info)
            _lu_step_columns(at, piv, k, b, nxt + nb, split)
        else:
            _lu_step_columns(at, piv, k, b, split + (t - 1) * rest // (parts - 1), split + t * rest // (parts - 1))


@njit(cache=True, nogil=True)
def _lu_factor_t(at, piv, block, parts):
    n = at.shape[0]
    info = np.zeros(1, np.int32)
    ipiv = np.empty(block, np.int32)
    k, b = 0, min(block, n)
    _lu_panel(at, piv, 0, b, ipiv, info)
    while k + b < n:
        nxt = k + b
        nb = min(block, n - nxt)
        rest = n - nxt - nb
        if parts > 1 and (n - nxt) * (n - k) * b >= _PARALLEL_MIN_MACS and rest >= 2 * parts:
            # Thread 0's share: the next panel's columns, its factorization (as _PANEL_WEIGHT times
            # their update), then enough further columns to even the threads out.
            own = nb * (1 + _PANEL_WEIGHT)
            extra = max(0, (rest + own) // parts - own)
            _lu_lookahead_step(at, piv, k, b, nb, nxt + nb + min(extra, rest), parts, ipiv, info)
        else:
            _lu_step_columns(at, piv, k, b, nxt, n)
            _lu_panel(at, piv, nxt, nb, ipiv, info)
        k, b = nxt, nb
    for k in range(block, n, block):  # each panel's swaps on the columns left of it, in order
        swap_rows(at, piv, k, min(block, n - k), 0, k)
    return info[0]


@njit(cache=True, nogil=True)
def _cholesky_panel_rows(at, k, b, first, stop):
    """Rows first:stop of L21 = A21 L11^-T."""
    if stop > first:
        trsm(blas_flags("R", "L", "T", "N"), stop - first, b, at, k, k, at, first, k)


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
        step = potrf(at, k, b)
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
        trsm(blas_flags("L", "U" if upper else "L", "N", "U" if unit else "N"), t_at.shape[0], stop - first,
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
        trsm(blas_flags("L", "U", "T", "N"), n, stop - first, lu_t, 0, 0, bt, 0, first)
        trsm(blas_flags("L", "L", "T", "U"), n, stop - first, lu_t, 0, 0, bt, 0, first)
    for c in range(first, stop):
        column = bt[c]
        for step in range(n):
            i = n - 1 - step if transposed else step
            p = piv[i]
            if p != i:
                column[i], column[p] = column[p], column[i]
    if not transposed:
        trsm(blas_flags("L", "L", "N", "U"), n, stop - first, lu_t, 0, 0, bt, 0, first)
        trsm(blas_flags("L", "U", "N", "N"), n, stop - first, lu_t, 0, 0, bt, 0, first)


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
    `block` columns per panel (when None: LU_BLOCK at more than one thread, else DEFAULT_BLOCK).

    >>> lu, piv, info = lu_factor_blocked(np.array([[1.0, 2.0], [3.0, 4.0]]), block=1)
    >>> piv.tolist(), info
    ([1, 1], 0)
    """
    block = (LU_BLOCK if threads > 1 else DEFAULT_BLOCK) if block is None else block
    _check("lu_factor_blocked", a, block, threads)
    prepare_blas(a.dtype)
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
    prepare_blas(a.dtype)
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
    prepare_blas(t.dtype)
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
    prepare_blas(lu.dtype)
    out = np.array(b, order="F")
    if out.size:
        lu_t = np.asfortranarray(lu).T
        pivots = np.ascontiguousarray(piv, dtype=np.int32)
        if _split_columns(n, b.shape[1], threads):
            _lu_solve_split(lu_t, pivots, transposed, out.T, threads)
        else:
            _lu_solve_columns(lu_t, pivots, transposed, out.T, 0, b.shape[1])
    return out
