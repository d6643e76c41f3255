"""Backward formulas of one large matrix in blocks that skip the triangles' zeros or the known
symmetry of the result, split over numdiff's threads.

    symmetric_product(a, b, threads, chunk) -> a @ b^T for a result known to be symmetric (eigh's
        backward: V diag(gw) V^T and V sym(M) V^T), (n, n) C order: per `chunk`-row block r0:r1 (64)
        (in parallel) C[r0:r1, :r1] = a[r0:r1] b[:r1]^T (gemm; ~ n^2 k flops in all, against the
        full product's 2 n^2 k), then the upper triangle mirrored from the lower in tiles. The
        result is exactly symmetric.

    cholesky_backward_blocked(low, grad, threads, chunk) -> gA of L = cholesky(A), (n, n) C order:
        gA = sym(L^-T Phi L^-1),  Phi = tril(L^T gL) with its diagonal halved,  sym(X) = (X + X^T) / 2

        1. Phi, per `chunk`-column block c0:c1 (in parallel):            ~ n^3 / 3 flops
             Phi[c0:, c0:c1] = L[c0:, c0:]^T tril(gL)[c0:, c0:c1]  (trmm: rows above c0 of
             tril(gL)'s columns are zero, and Phi's rows above them are not kept)
        2. Y = Phi L^-1, per `chunk`-row block r0:r1 (in parallel):       ~ n^3 / 3 flops
             Y[r0:r1, :r1] = Phi[r0:r1, :r1] L[:r1, :r1]^-1  (trsm; Y is lower triangular)
        3. X = L^-T Y, per column block (in parallel):                    ~ n^3 flops (trsm)
        4. gA = (X + X^T) / 2 in 32 x 32 tiles (in parallel)

The composed formula (numdiff.ops._linalg_grads.cholesky) takes ~ 4 n^3 flops: the full GEMM
L^T tril(gL) (2 n^3) and two full triangular solves, plus NumPy's copies for tril, the
transposes and the symmetrisation on one thread. The triangular blocks' sizes fall (step 1) or
grow (step 2) along the matrix, so `chunk`-wide blocks are dealt to the threads back and forth
(0, 1, 1, 0, 0, 1, ...), which evens their shares. Matrices are Fortran-ordered and handled as
their row-major transposes (numdiff.kernels._lapack_calls). Extra memory: one n x n work array.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._blas import gemm, prepare_blas
from numdiff.kernels._lapack_calls import blas_flags, trmm, trsm
from numdiff.kernels._self_healing_cache import njit

__all__ = ["DEFAULT_CHUNK", "PRODUCT_CHUNK", "cholesky_backward_blocked", "symmetric_product"]


def __dir__() -> list[str]:
    return sorted(__all__)


DEFAULT_CHUNK = 32
"""Columns (rows) per trmm (trsm) block in steps 1 and 2: 16 blocks at order 512, dealt evenly."""

PRODUCT_CHUNK = 64
"""Rows per GEMM in symmetric_product: order 512, one thread, process CPU ms (full product 6.5): rows
of 32 4.95, 64 4.61, 128 4.73, 256 5.45 (narrow blocks repack b's rows once per block)."""

_TILE = 32


@njit(cache=True, nogil=True, inline="always")
def _owner(block, parts):
    """The thread that takes the `block`-th chunk, dealt back and forth."""
    turn, place = divmod(block, parts)
    return place if turn % 2 == 0 else parts - 1 - place


@njit(cache=True, nogil=True)
def _phi_columns(lt, pt, c0, c1):
    """Columns c0:c1 of Phi, in place on tril(gL) stored as `pt` (pt[j, i] = P[i, j])."""
    n = lt.shape[0]
    for j in range(c0, c1):
        pt[j, :j] = 0.0
    trmm(blas_flags("L", "L", "T", "N"), n - c0, c1 - c0, lt, c0, c0, pt, c0, c0)
    for j in range(c0, c1):
        pt[j, c0:j] = 0.0
        pt[j, j] *= 0.5


@njit(cache=True, nogil=True)
def _y_rows(lt, pt, r0, r1):
    """Rows r0:r1 of Y = Phi L^-1 (Phi lower triangular: its columns from r1 are zero there)."""
    trsm(blas_flags("R", "L", "N", "N"), r1 - r0, r1, lt, 0, 0, pt, r0, 0)


@njit(cache=True, nogil=True)
def _x_columns(lt, pt, c0, c1):
    """Columns c0:c1 of X = L^-T Y."""
    if c1 > c0:
        trsm(blas_flags("L", "L", "T", "N"), lt.shape[0], c1 - c0, lt, 0, 0, pt, 0, c0)


@njit(cache=True, nogil=True)
def _symmetric_rows(pt, out, r0, r1):
    """Rows r0:r1 of out = (X + X^T) / 2, X stored as `pt`, in tiles."""
    n = pt.shape[0]
    for j0 in range(0, n, _TILE):
        j1 = min(j0 + _TILE, n)
        for i in range(r0, r1):
            for j in range(j0, j1):
                out[i, j] = 0.5 * (pt[j, i] + pt[i, j])


@njit(cache=True, nogil=True, parallel=True)
def _cholesky_backward_t(lt, pt, out, chunk, parts):
    n = lt.shape[0]
    blocks = (n + chunk - 1) // chunk
    for t in prange(parts):
        for c in range(blocks):
            if _owner(c, parts) == t:
                _phi_columns(lt, pt, c * chunk, min(n, (c + 1) * chunk))
    for t in prange(parts):
        for r in range(blocks):
            if _owner(blocks - 1 - r, parts) == t:  # the largest blocks (the last rows) dealt first
                _y_rows(lt, pt, r * chunk, min(n, (r + 1) * chunk))
    for t in prange(parts):
        _x_columns(lt, pt, t * n // parts, (t + 1) * n // parts)
    for t in prange(parts):
        for r0 in range(t * _TILE, n, parts * _TILE):
            _symmetric_rows(pt, out, r0, min(n, r0 + _TILE))


def cholesky_backward_blocked(low: np.ndarray, grad: np.ndarray, threads: int = 1,
                              chunk: int | None = None) -> np.ndarray:
    """gA of L = cholesky(A) for one lower-triangular `low` (n, n) and its gradient `grad` (n, n), both
    float32 or both float64 (only their lower triangles are read), `chunk` (DEFAULT_CHUNK when None)
    columns per block; see the module doc.

    >>> low = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> cholesky_backward_blocked(low, np.eye(2)).round(4).tolist()
    [[0.375, -0.25], [-0.25, 0.5]]
    """
    if low.ndim != 2 or low.shape[0] != low.shape[1] or grad.shape != low.shape:
        raise ValueError(f"cholesky_backward_blocked: expected square L and a gradient of its shape, got "
                         f"{low.shape} and {grad.shape}")
    if low.dtype not in (np.float32, np.float64) or grad.dtype != low.dtype:
        raise TypeError(f"cholesky_backward_blocked: expected float32 or float64 of one dtype, got {low.dtype} "
                        f"and {grad.dtype}")
    chunk = DEFAULT_CHUNK if chunk is None else chunk
    if threads < 1 or chunk < 1:
        raise ValueError(f"cholesky_backward_blocked: threads and chunk must be at least 1, got threads={threads}, "
                         f"chunk={chunk}")
    prepare_blas(low.dtype)
    out = np.empty(low.shape, dtype=low.dtype)
    if low.size:
        work = np.array(grad, order="F")
        _cholesky_backward_t(np.asfortranarray(low).T, work.T, out, chunk, threads)
    return out


@njit(cache=True, nogil=True)
def _lower_rows(a, b, out, r0, r1, a_t, b_t):
    """Rows r0:r1 of a b^T, up to their diagonal block's last column; `a_t` (`b_t`): the array passed
    is a's (b's) transpose, row-major."""
    if a_t and b_t:
        gemm(True, False, 1.0, a[:, r0:r1], b[:, :r1], 0.0, out[r0:r1, :r1])
    elif a_t:
        gemm(True, True, 1.0, a[:, r0:r1], b[:r1], 0.0, out[r0:r1, :r1])
    elif b_t:
        gemm(False, False, 1.0, a[r0:r1], b[:, :r1], 0.0, out[r0:r1, :r1])
    else:
        gemm(False, True, 1.0, a[r0:r1], b[:r1], 0.0, out[r0:r1, :r1])


@njit(cache=True, nogil=True)
def _mirror_rows(out, r0, r1):
    """out[i, j] = out[j, i] above the diagonal, for rows r0:r1, in tiles."""
    n = out.shape[0]
    for j0 in range(r0, n, _TILE):
        j1 = min(j0 + _TILE, n)
        for i in range(r0, r1):
            for j in range(max(j0, i + 1), j1):
                out[i, j] = out[j, i]


@njit(cache=True, nogil=True, parallel=True)
def _symmetric_product_t(a, b, out, chunk, parts, a_t, b_t):
    n = out.shape[0]
    blocks = (n + chunk - 1) // chunk
    for t in prange(parts):
        for r in range(blocks):
            if _owner(blocks - 1 - r, parts) == t:  # the widest rows (the last) dealt first
                _lower_rows(a, b, out, r * chunk, min(n, (r + 1) * chunk), a_t, b_t)
    tiles = (n + _TILE - 1) // _TILE
    for t in prange(parts):
        for r in range(tiles):
            if _owner(r, parts) == t:  # the first rows mirror the most
                _mirror_rows(out, r * _TILE, min(n, (r + 1) * _TILE))


def symmetric_product(a: np.ndarray, b: np.ndarray, threads: int = 1, chunk: int | None = None) -> np.ndarray:
    """a @ b^T for a (n, k) and b (n, k) of one float dtype whose product is known to be symmetric, from
    its lower triangle only (see the module doc); `chunk` (PRODUCT_CHUNK when None) rows per block.

    >>> v = np.array([[0.6, -0.8], [0.8, 0.6]])
    >>> symmetric_product(v * np.array([2.0, 1.0]), v).round(4).tolist()
    [[1.36, 0.48], [0.48, 1.64]]
    """
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"symmetric_product: expected a and b of one shape (n, k), got {a.shape} and {b.shape}")
    if a.dtype not in (np.float32, np.float64) or b.dtype != a.dtype:
        raise TypeError(f"symmetric_product: expected float32 or float64 of one dtype, got {a.dtype} and {b.dtype}")
    chunk = PRODUCT_CHUNK if chunk is None else chunk
    if threads < 1 or chunk < 1:
        raise ValueError(f"symmetric_product: threads and chunk must be at least 1, got threads={threads}, "
                         f"chunk={chunk}")
    prepare_blas(a.dtype)
    out = np.empty((a.shape[0], a.shape[0]), dtype=a.dtype)
    if out.size:
        # A Fortran-ordered operand (eigh's V) goes in as its row-major transpose: no transposing copy.
        a_t, b_t = _stored_transposed(a), _stored_transposed(b)
        _symmetric_product_t(np.ascontiguousarray(a.T if a_t else a), np.ascontiguousarray(b.T if b_t else b), out,
                             chunk, threads, a_t, b_t)
    return out


def _stored_transposed(x: np.ndarray) -> bool:
    """Whether x is laid out as a row-major transpose (Fortran order) and not also row-major."""
    return bool(x.flags.f_contiguous and not x.flags.c_contiguous)
