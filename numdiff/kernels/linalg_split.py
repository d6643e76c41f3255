"""eigh and the square svd of one large matrix by LAPACK's steps, with the back-transforms (about
2 n^3 flops each, one thread inside syevd and gesdd) done by numdiff as GEMMs split over its threads.

    eigh_split(a, upper, threads) -> (w, v, info), A = V diag(w) V^T, w ascending:
        sytrd:  A = Q T Q^T, T tridiagonal           (LAPACK, calling thread; half of it BLAS-2)
        stedc:  T = Z diag(w) Z^T                     (LAPACK, thread 0)  | beside it, on the other
                                                                          | threads: Q's block
                                                                          | reflectors (below)
        V = Q Z: each thread a block of V's columns   (GEMMs, in parallel; ~ 2 n^3 flops in all)

    svd_split(a, threads) -> (u, s, vh, info), A = U diag(s) Vh, s descending, A square:
        gebrd:  A = Q B P^T, B upper bidiagonal       (LAPACK, calling thread)
        bdsdc:  B = U_B diag(s) V_B^T                 (LAPACK, thread 0)  | Q's and P's block
                                                                          | reflectors beside it
        U = Q U_B and Vh = V_B^T P^T: each thread a block of U's columns and of Vh's rows (GEMMs)

The block reflectors: Q (or P) is a product of Householder reflectors H_i = I - tau_i v_i v_i^T, as
sytrd/gebrd leave them; `block` consecutive ones make I - V T V^T (V the vectors with their unit and
zeros written out, T upper triangular: LAPACK's larft, "forward", computed here from G = V^T V by
T[:i, i] = -tau_i T[:i, :i] G[:i, i]). A block of the target's columns C is updated by three GEMMs per
block reflector, the last block first: W = V^T C, W = T W, C -= V W (on C's transpose, row blocks, as
below). Each thread's columns are its own, so the update needs one parallel region and no barrier.

Why not LAPACK's ormtr/ormbr on column blocks from several threads at once (this module's first
version, reverted): their unblocked path (orm2r/orm2l) writes 1 into the reflector array's diagonal
during each reflector and restores it after, so two threads on the same reflectors can restore each
other's 1 and corrupt the vectors (seen as wrong eigenvectors in 7 of 300 random eigh). Here the
reflector array is only read, LAPACK's steps each run on one thread with arrays of their own, and the
only calls made from several threads at once are single-threaded GEMMs on disjoint outputs.

Target matrices are held as row-major arrays X = C^T (which LAPACK's column-major U_B, Z write), so
Q C is X Q^T and a thread's columns of C are rows of X: contiguous. w, v, u, s, vh as syevd / gesdd
give them up to each vector's sign (same reflectors, same tridiagonal / bidiagonal solver: equal to
rounding, signs included, in practice); info is stedc's / bdsdc's (> 0: the solver failed, the
outputs are undefined). The drivers scale a matrix whose largest entry lies outside
[sqrt(safe minimum) / eps, its inverse] first; these do not, so callers keep such matrices (and NaN)
on syevd / gesdd (numdiff.ops._lapack).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._blas import gemm, prepare_blas
from numdiff.kernels._lapack_reductions import bdsdc, gebrd, stedc, sytrd
from numdiff.kernels._self_healing_cache import njit

__all__ = ["REFLECTOR_BLOCK", "eigh_split", "svd_split", "triangle_largest"]


def __dir__() -> list[str]:
    return sorted(__all__)


REFLECTOR_BLOCK = 64
"""Householder reflectors per block reflector: the inner dimension of the back-transform's GEMMs (T's
cost, n^2 * block flops in all, grows with it; the GEMMs' efficiency too)."""


@njit(cache=True, nogil=True)
def _build_block(src, offset, tau, k, width, y, t):
    """Reflectors k:k+width into y's columns (reflector i: 1 at row i + offset, src[i, r] below it,
    zeros above) and their T (width x width, upper triangular) into t."""
    n = y.shape[0]
    for i in range(k, k + width):
        y[i + offset, i] = 1.0
        for r in range(i + offset + 1, n):
            y[r, i] = src[i, r]
    v = y[k + offset:, k:k + width]
    g = np.empty((width, width), y.dtype)
    gemm(True, False, 1.0, v, v, 0.0, g)
    for i in range(width):
        scale = tau[k + i]
        t[i, i] = scale
        for r in range(i):
            total = 0.0
            for c in range(r, i):
                total += t[r, c] * g[c, i]
            t[r, i] = -scale * total


@njit(cache=True, nogil=True)
def _build_blocks(src, offset, tau, y, t_all, first, step):
    """Block reflectors first, first + step, ... (of `block` = t_all.shape[1] reflectors each)."""
    block = t_all.shape[1]
    for j in range(first, t_all.shape[0], step):
        _build_block(src, offset, tau, j * block, min(block, y.shape[1] - j * block), y, t_all[j])


@njit(cache=True, nogil=True)
def _apply_rows(x, r0, r1, y, t_all, offset):
    """Rows r0:r1 of X := X H_{count-1} ... H_0 (C := H_0 ... H_{count-1} C for C = X^T), one block
    reflector at a time, the last first: X[:, top:] -= ((X[:, top:] V) T^T) V^T."""
    block = t_all.shape[1]
    count = y.shape[1]
    if r1 <= r0 or count == 0:
        return
    w = np.empty((r1 - r0, block), x.dtype)
    w2 = np.empty((r1 - r0, block), x.dtype)
    for j in range(t_all.shape[0] - 1, -1, -1):
        k = j * block
        width = min(block, count - k)
        top = k + offset
        xs = x[r0:r1, top:]
        v = y[top:, k:k + width]
        gemm(False, False, 1.0, xs, v, 0.0, w[:, :width])
        gemm(False, True, 1.0, w[:, :width], t_all[j, :width, :width], 0.0, w2[:, :width])
        gemm(False, True, -1.0, w2[:, :width], v, 1.0, xs)


@njit(cache=True, nogil=True, parallel=True)
def _eigh_solve_and_build(at, d, e, tau, zbuf, y, t_all, parts, info):
    """stedc on thread 0, Q's block reflectors on the others (parts >= 2)."""
    for task in prange(parts):
        if task == 0:
            info[0] = stedc(d, e, zbuf)
        else:
            _build_blocks(at, 1, tau, y, t_all, task - 1, parts - 1)


@njit(cache=True, nogil=True, parallel=True)
def _eigh_apply(x, y, t_all, parts):
    n = x.shape[0]
    for task in prange(parts):
        _apply_rows(x, task * n // parts, (task + 1) * n // parts, y, t_all, 1)


@njit(cache=True, nogil=True)
def _eigh_t(at, d, zbuf, block, parts):
    """sytrd, then stedc beside the block reflectors, then V^T = Z^T Q^T into zbuf; returns info."""
    n = at.shape[0]
    e, tau = np.zeros(max(1, n - 1), at.dtype), np.zeros(max(1, n - 1), at.dtype)
    sytrd(at, d, e, tau)
    y = np.zeros((n, n - 1), at.dtype)
    t_all = np.zeros(((n - 1 + block - 1) // block, block, block), at.dtype)
    info = np.zeros(1, np.int32)
    if parts > 1:
        _eigh_solve_and_build(at, d, e, tau, zbuf, y, t_all, parts, info)
    else:
        info[0] = stedc(d, e, zbuf)
        _build_blocks(at, 1, tau, y, t_all, 0, 1)
    if info[0] == 0:
        if parts > 1:
            _eigh_apply(zbuf, y, t_all, parts)
        else:
            _apply_rows(zbuf, 0, n, y, t_all, 1)
    return info[0]


@njit(cache=True, nogil=True, parallel=True)
def _svd_solve_and_build(at, d, e, tauq, taup, ubuf, vtbuf, yq, tq, yp, tp, parts, info):
    """bdsdc on thread 0; Q's block reflectors, then P's, dealt to the others (parts >= 2)."""
    blocks_q = tq.shape[0]
    total = blocks_q + tp.shape[0]
    for task in prange(parts):
        if task == 0:
            info[0] = bdsdc(d, e, ubuf, vtbuf)
        else:
            for j in range(task - 1, total, parts - 1):
                if j < blocks_q:
                    _build_blocks(at, 0, tauq, yq, tq, j, blocks_q)  # block j alone
                else:
                    _build_blocks(at.T, 1, taup, yp, tp, j - blocks_q, tp.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def _svd_apply(xu, yq, tq, xv, yp, tp, parts):
    n = xu.shape[0]
    for task in prange(parts):
        _apply_rows(xu, task * n // parts, (task + 1) * n // parts, yq, tq, 0)
        _apply_rows(xv, task * n // parts, (task + 1) * n // parts, yp, tp, 1)


@njit(cache=True, nogil=True)
def _svd_t(at, d, ubuf, block, parts):
    """gebrd, then bdsdc beside the block reflectors, then U^T = U_B^T Q^T (into ubuf) and
    Vh = V_B^T P^T (returned); returns (info, Vh)."""
    n = at.shape[0]
    e = np.zeros(max(1, n - 1), at.dtype)
    tauq, taup = np.zeros(n, at.dtype), np.zeros(n, at.dtype)
    gebrd(at, d, e, tauq, taup)
    vtbuf = np.zeros((n, n), at.dtype)
    yq, yp = np.zeros((n, n), at.dtype), np.zeros((n, n - 1), at.dtype)
    tq = np.zeros(((n + block - 1) // block, block, block), at.dtype)
    tp = np.zeros(((n - 1 + block - 1) // block, block, block), at.dtype)
    info = np.zeros(1, np.int32)
    if parts > 1:
        _svd_solve_and_build(at, d, e, tauq, taup, ubuf, vtbuf, yq, tq, yp, tp, parts, info)
    else:
        info[0] = bdsdc(d, e, ubuf, vtbuf)
        _build_blocks(at, 0, tauq, yq, tq, 0, 1)
        _build_blocks(at.T, 1, taup, yp, tp, 0, 1)
    # bdsdc wrote V_B^T column-major, so vtbuf holds V_B row-major; the update wants V_B^T.
    xv = np.ascontiguousarray(vtbuf.T)
    if info[0] == 0:
        if parts > 1:
            _svd_apply(ubuf, yq, tq, xv, yp, tp, parts)
        else:
            _apply_rows(ubuf, 0, n, yq, tq, 0)
            _apply_rows(xv, 0, n, yp, tp, 1)
    return info[0], xv


@njit(cache=True, nogil=True)
def _triangle_largest(a, upper):
    largest = 0.0
    n = a.shape[0]
    for i in range(n):
        for j in range(i, n) if upper else range(i + 1):
            value = abs(a[i, j])
            if value != value:
                return value
            if value > largest:
                largest = value
    return largest


def triangle_largest(a: np.ndarray, upper: bool) -> float:
    """The largest |entry| of a square matrix's upper (else lower) triangle, NaN if it holds one (one
    pass; NumPy's tril/triu with abs and max took 3.4 ms at order 512, as long as a third of sytrd).

    >>> triangle_largest(np.array([[1.0, -7.0], [-2.0, 3.0]]), upper=False)
    3.0
    """
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"triangle_largest: expected one square matrix, got shape {a.shape}")
    return float(_triangle_largest(a, upper)) if a.size else 0.0


def _check(op: str, a: np.ndarray, threads: int, block: int) -> None:
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{op}: expected one square matrix, got shape {a.shape}")
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{op}: expected float32 or float64, got {a.dtype}")
    if threads < 1 or block < 1:
        raise ValueError(f"{op}: threads and block must be at least 1, got threads={threads}, block={block}")


def eigh_split(a: np.ndarray, upper: bool = False, threads: int = 1,
               block: int = REFLECTOR_BLOCK) -> tuple[np.ndarray, np.ndarray, int]:
    """(w, V, info) of a symmetric float32/float64 matrix, read from its upper (else lower) triangle,
    the back-transform split over `threads` (see the module doc).

    >>> w, v, info = eigh_split(np.array([[2.0, 1.0], [1.0, 2.0]]), threads=2)
    >>> w.round(4).tolist(), info, np.allclose(v * w @ v.T, [[2.0, 1.0], [1.0, 2.0]])
    ([1.0, 3.0], 0, True)
    """
    _check("eigh_split", a, threads, block)
    prepare_blas(a.dtype)
    n = a.shape[0]
    work = np.array(a.T if upper else a, order="F")  # A's upper triangle is A^T's lower one
    zbuf = np.zeros((n, n), a.dtype)
    w = np.empty(n, a.dtype)
    info = int(_eigh_t(work.T, w, zbuf, block, threads)) if n else 0
    return w, zbuf.T, info


def svd_split(a: np.ndarray, threads: int = 1,
              block: int = REFLECTOR_BLOCK) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(U, s, Vh, info) of a square float32/float64 matrix, the back-transforms split over `threads`
    (see the module doc).

    >>> u, s, vh, info = svd_split(np.array([[3.0, 0.0], [4.0, 5.0]]), threads=2)
    >>> s.round(4).tolist(), info, np.allclose(u * s @ vh, [[3.0, 0.0], [4.0, 5.0]])
    ([6.7082, 2.2361], 0, True)
    """
    _check("svd_split", a, threads, block)
    prepare_blas(a.dtype)
    n = a.shape[0]
    if not n:
        return np.zeros((0, 0), a.dtype), np.zeros(0, a.dtype), np.zeros((0, 0), a.dtype), 0
    work = np.array(a, order="F")  # gebrd overwrites it with the reflectors
    ubuf = np.zeros((n, n), a.dtype)
    s = np.empty(n, a.dtype)
    info, vh = _svd_t(work.T, s, ubuf, block, threads)
    return ubuf.T, s, vh, int(info)
