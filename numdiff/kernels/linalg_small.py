"""Batched small-matrix factorizations on the CPU: LU with partial pivoting, its substitutions, and
the symmetric eigendecomposition by cyclic Jacobi. One call does a whole batch.

LAPACK takes one matrix per call: for a batch of 256 8x8 matrices NumPy's loop pays LAPACK's
per-call setup 256 times, which costs more than the arithmetic (issue 29). These kernels run
the batch in one compiled call and are what numdiff.ops._lapack uses below an order measured
here (it keeps LAPACK for larger matrices and single ones):

    lu_factor_batched(lu, piv) -> info        lu (batch, n, n): A on entry, L\\U on exit (LAPACK's
                                              getrf layout, unit L below the diagonal); piv
                                              (batch, n) int32, 0-based row swaps in order; info
                                              (batch,) 0, or k where U[k-1, k-1] is exactly zero
    lu_substitute_batched(lu, piv, x, transposed)   x (batch, n, k): B on entry, A^-1 B (A^-T B
                                              when `transposed`) on exit
    slogdet_batched(lu, piv, sign, logabs) -> info   lu_factor_batched, then sign and log|det|
                                              of each matrix from its factors
    cholesky_batched(a, out) -> info          out (batch, n, n) = L; info 0 or the failing minor's order
    cholesky_backward_batched(low, grad, out) out = gA of L = cholesky(A), the whole formula per matrix
    svd_jacobi_batched(a, u, s, vh) -> fallback   thin SVD of a (batch, m, n), m >= n, s descending,
                                              by one-sided Jacobi; fallback marks the matrices with a
                                              tiny singular value, for LAPACK to redo
    eigh_jacobi_batched(a, upper, w, v)       w (batch, n) ascending, v (batch, n, n) the
                                              eigenvectors in columns, from the `upper` or lower
                                              triangle of a (batch, n, n)

Cholesky and LU: per matrix, the loops of numdiff.kernels._linalg_cores (the GPU compiles the same ones); the
batch in parallel above a grain. Eigh: the batch is cut into chunks of CHUNK matrices, each
copied into a (n, n, CHUNK) array with the batch innermost, so every rotation of the cyclic
Jacobi sweep runs over the chunk as one vector loop (the matrices of a chunk take the same
rotation order; each its own angle). Sweeps stop when every off-diagonal element of the chunk is
below eps * sqrt(|a_ii a_jj|) (the relative-accuracy test of Demmel and Veselic), at most
MAX_SWEEPS. Extra memory: 2 n^2 CHUNK + 3 CHUNK floats per chunk. Measured here (256 8x8,
float64, one thread): 0.88 ms against NumPy's LAPACK loop 1.66 ms; at order 16 LAPACK wins.

All kernels use error_model="numpy": a division is one instruction, not a checked call (a zero
pivot is handled by the callers, which report it as LAPACK does).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from numdiff.kernels._linalg_cores import (
    cholesky_backward_core,
    cholesky_core,
    lu_factor_core,
    lu_substitute_core,
    slogdet_core,
)
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

__all__ = ["CHUNK", "MAX_SWEEPS", "cholesky_backward_batched", "cholesky_batched", "eigh_jacobi_batched",
           "lu_factor_batched", "lu_substitute_batched", "slogdet_batched", "svd_jacobi_batched"]

CHUNK = 32
"""Matrices per vectorised Jacobi chunk: two chunks of order 8 fit in a 32 KiB L1 cache."""

MAX_SWEEPS = 60
"""A cap on Jacobi sweeps; convergence is quadratic and takes 5-10 for orders up to 32."""

# Multiply-adds below which a batch runs on the calling thread: a parallel region waits for every
# worker, and on a shared machine one that lost its core stalls the call (an inverse of 256 8x8
# matrices, 131k multiply-adds, took 1.2 ms in parallel under load against 0.25 ms serially).
_FLOP_GRAIN = 1 << 18

_factor = njit(cache=True, inline="always", error_model="numpy")(lu_factor_core)
_cholesky = njit(cache=True, inline="always", error_model="numpy")(cholesky_core)
_cholesky_backward = njit(cache=True, inline="always", error_model="numpy")(cholesky_backward_core)


def _cholesky_loop(a, out, info):  # pragma: no cover - compiled
    for p in prange(a.shape[0]):
        info[p] = _cholesky(a, out, p)


def _cholesky_backward_loop(low, grad, out):  # pragma: no cover - compiled
    for p in prange(low.shape[0]):
        _cholesky_backward(low, grad, out, p)
_substitute = njit(cache=True, inline="always", error_model="numpy")(lu_substitute_core)
_slogdet = njit(cache=True, inline="always", error_model="numpy")(slogdet_core)


def _lu_factor_loop(lu, piv, info):  # pragma: no cover - compiled
    for p in prange(lu.shape[0]):
        info[p] = _factor(lu, piv, p)


def _lu_substitute_loop(lu, piv, x, transposed):  # pragma: no cover - compiled
    for p in prange(x.shape[0]):
        _substitute(lu, piv, x, p, transposed)


def _slogdet_loop(lu, piv, sign, logabs, info):  # pragma: no cover - compiled
    for p in prange(lu.shape[0]):
        info[p] = _factor(lu, piv, p)
        _slogdet(lu, piv, info[p], sign, logabs, p)


_CHOLESKY = serial_and_parallel(_cholesky_loop, error_model="numpy")
_CHOLESKY_BACKWARD = serial_and_parallel(_cholesky_backward_loop, error_model="numpy")
_LU_FACTOR = serial_and_parallel(_lu_factor_loop, error_model="numpy")
_LU_SUBSTITUTE = serial_and_parallel(_lu_substitute_loop, error_model="numpy")
_SLOGDET = serial_and_parallel(_slogdet_loop, error_model="numpy")


@njit(cache=True, inline="always", error_model="numpy")
def _rotation(app, aqq, apq):  # pragma: no cover - compiled
    """(c, s, t) of the Jacobi rotation that zeroes apq: t = tan, the smaller root of
    t^2 + 2 t theta - 1 = 0 with theta = (aqq - app) / (2 apq); t = 0 when apq is already 0."""
    theta = (aqq - app) / (2.0 * apq) if apq != 0.0 else 1e300
    t = math.copysign(1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0)), theta)
    c = 1.0 / math.sqrt(t * t + 1.0)
    return c, t * c, t


def _eigh_loop(a, upper, eps, w, v):  # pragma: no cover - compiled
    batch, n = a.shape[0], a.shape[1]
    for chunk in prange((batch + CHUNK - 1) // CHUNK):
        start = chunk * CHUNK
        size = min(CHUNK, batch - start)
        m = np.empty((n, n, CHUNK), dtype=a.dtype)
        vt = np.empty((n, n, CHUNK), dtype=a.dtype)  # vt[i, :, q]: the i-th eigenvector of matrix q
        cos = np.empty(CHUNK, dtype=a.dtype)
        sin = np.empty(CHUNK, dtype=a.dtype)
        tan = np.empty(CHUNK, dtype=a.dtype)
        for i in range(n):
            for j in range(n):
                row, col = (min(i, j), max(i, j)) if upper else (max(i, j), min(i, j))
                for q in range(size):
                    m[i, j, q] = a[start + q, row, col]
                    vt[i, j, q] = 1.0 if i == j else 0.0
        for _ in range(MAX_SWEEPS):
            converged = True
            for i in range(n - 1):
                for j in range(i + 1, n):
                    for q in range(size):
                        if abs(m[i, j, q]) > eps * math.sqrt(abs(m[i, i, q] * m[j, j, q])):
                            converged = False
            if converged:
                break
            for i in range(n - 1):
                for j in range(i + 1, n):
                    for q in range(size):
                        cos[q], sin[q], tan[q] = _rotation(m[i, i, q], m[j, j, q], m[i, j, q])
                    for k in range(n):  # A <- J^T A J on rows and columns i, j (kept symmetric)
                        if k != i and k != j:
                            for q in range(size):
                                aki, akj = m[k, i, q], m[k, j, q]
                                x = cos[q] * aki - sin[q] * akj
                                y = sin[q] * aki + cos[q] * akj
                                m[k, i, q] = x
                                m[i, k, q] = x
                                m[k, j, q] = y
                                m[j, k, q] = y
                    for q in range(size):
                        apq = m[i, j, q]
                        m[i, i, q] -= tan[q] * apq
                        m[j, j, q] += tan[q] * apq
                        m[i, j, q] = 0.0
                        m[j, i, q] = 0.0
                    for k in range(n):  # V <- V J
                        for q in range(size):
                            vi, vj = vt[i, k, q], vt[j, k, q]
                            vt[i, k, q] = cos[q] * vi - sin[q] * vj
                            vt[j, k, q] = sin[q] * vi + cos[q] * vj
        for q in range(size):  # ascending, by insertion sort of the (few) eigenvalues
            p = start + q
            for i in range(n):
                w[p, i] = m[i, i, q]
                for k in range(n):
                    v[p, k, i] = vt[i, k, q]
            for i in range(1, n):
                j = i
                while j > 0 and w[p, j - 1] > w[p, j]:
                    w[p, j - 1], w[p, j] = w[p, j], w[p, j - 1]
                    for k in range(n):
                        v[p, k, j - 1], v[p, k, j] = v[p, k, j], v[p, k, j - 1]
                    j -= 1


_EIGH = serial_and_parallel(_eigh_loop, error_model="numpy")


def _svd_loop(a, eps, u, s, vh, fallback):  # pragma: no cover - compiled
    batch, m, n = a.shape[0], a.shape[1], a.shape[2]
    for chunk in prange((batch + CHUNK - 1) // CHUNK):
        start = chunk * CHUNK
        size = min(CHUNK, batch - start)
        g = np.empty((n, m, CHUNK), dtype=a.dtype)  # g[i, :, q]: column i of A V for matrix q
        vt = np.empty((n, n, CHUNK), dtype=a.dtype)  # vt[i, :, q]: column i of V
        cos = np.empty(CHUNK, dtype=a.dtype)
        sin = np.empty(CHUNK, dtype=a.dtype)
        tan = np.empty(CHUNK, dtype=a.dtype)
        alpha = np.empty(CHUNK, dtype=a.dtype)
        beta = np.empty(CHUNK, dtype=a.dtype)
        gamma = np.empty(CHUNK, dtype=a.dtype)
        for i in range(n):
            for k in range(m):
                for q in range(size):
                    g[i, k, q] = a[start + q, k, i]
            for k in range(n):
                for q in range(size):
                    vt[i, k, q] = 1.0 if i == k else 0.0
        for _ in range(MAX_SWEEPS):
            converged = True
            for i in range(n - 1):
                for j in range(i + 1, n):
                    for q in range(size):  # the (i, j) entries of G^T G
                        alpha[q] = 0.0
                        beta[q] = 0.0
                        gamma[q] = 0.0
                    for k in range(m):
                        for q in range(size):
                            alpha[q] += g[i, k, q] * g[i, k, q]
                            beta[q] += g[j, k, q] * g[j, k, q]
                            gamma[q] += g[i, k, q] * g[j, k, q]
                    for q in range(size):
                        if abs(gamma[q]) > eps * math.sqrt(alpha[q] * beta[q]):
                            converged = False
                        cos[q], sin[q], tan[q] = _rotation(alpha[q], beta[q], gamma[q])
                    for k in range(m):  # G <- G J: the rotation that diagonalises G^T G's (i, j) block
                        for q in range(size):
                            x, y = g[i, k, q], g[j, k, q]
                            g[i, k, q] = cos[q] * x - sin[q] * y
                            g[j, k, q] = sin[q] * x + cos[q] * y
                    for k in range(n):
                        for q in range(size):
                            x, y = vt[i, k, q], vt[j, k, q]
                            vt[i, k, q] = cos[q] * x - sin[q] * y
                            vt[j, k, q] = sin[q] * x + cos[q] * y
            if converged:
                break
        for q in range(size):
            p = start + q
            for i in range(n):
                total = 0.0
                for k in range(m):
                    total += g[i, k, q] * g[i, k, q]
                s[p, i] = math.sqrt(total)
            for i in range(1, n):  # descending, by insertion sort, moving U's columns and Vh's rows along
                j = i
                while j > 0 and s[p, j - 1] < s[p, j]:
                    s[p, j - 1], s[p, j] = s[p, j], s[p, j - 1]
                    for k in range(m):
                        g[j - 1, k, q], g[j, k, q] = g[j, k, q], g[j - 1, k, q]
                    for k in range(n):
                        vt[j - 1, k, q], vt[j, k, q] = vt[j, k, q], vt[j - 1, k, q]
                    j -= 1
            # U's column i is G's over s_i: defined (and accurate) only while s_i is not tiny
            fallback[p] = n > 0 and s[p, n - 1] <= math.sqrt(eps) * s[p, 0]
            for i in range(n):
                inverse = 1.0 / s[p, i] if s[p, i] > 0.0 else 0.0
                for k in range(m):
                    u[p, k, i] = g[i, k, q] * inverse
                for k in range(n):
                    vh[p, i, k] = vt[i, k, q]


_SVD = serial_and_parallel(_svd_loop, error_model="numpy")


def _check(op: str, a: np.ndarray, *others: np.ndarray) -> None:
    if a.ndim != 3 or (a.shape[1] != a.shape[2] and op != "svd_jacobi_batched") or a.dtype.kind != "f" or not a.flags.c_contiguous:
        raise ValueError(f"{op}: expected a C-contiguous float (batch, n, n) array, got {a.dtype} {a.shape}")
    for other in others:
        if other.shape[0] != a.shape[0] or not other.flags.c_contiguous:
            raise ValueError(f"{op}: arrays of batch {a.shape[0]} expected, got {[x.shape for x in (a, *others)]}")


def cholesky_batched(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out[p] = the lower Cholesky factor of a[p] (read from its lower triangle). Returns info (int32):
    0, or the order of the first leading minor that is not positive definite (out[p] then partial)."""
    _check("cholesky_batched", a, out)
    if out.shape != a.shape or out.dtype != a.dtype:
        raise ValueError(f"cholesky_batched: out must be {a.dtype} {a.shape}, got {out.dtype} {out.shape}")
    info = np.zeros(a.shape[0], dtype=np.int32)
    kernel, _ = _CHOLESKY.pick(a.shape[0] * a.shape[1] ** 3 // 6, _FLOP_GRAIN)
    kernel(a, out, info)
    return info


def cholesky_backward_batched(low: np.ndarray, grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out[p] = the gradient with respect to A[p] of L[p] = cholesky(A[p]), given L (low) and gL (grad)."""
    _check("cholesky_backward_batched", low, grad, out)
    if not low.shape == grad.shape == out.shape or not low.dtype == grad.dtype == out.dtype:
        raise ValueError(f"cholesky_backward_batched: low, grad and out must agree, got {low.dtype} {low.shape}, "
                         f"{grad.dtype} {grad.shape}, {out.dtype} {out.shape}")
    kernel, _ = _CHOLESKY_BACKWARD.pick(low.shape[0] * low.shape[1] ** 3, _FLOP_GRAIN)
    kernel(low, grad, out)
    return out


def lu_factor_batched(lu: np.ndarray, piv: np.ndarray) -> np.ndarray:
    """Factor each lu[p] = P L U in place (getrf's layout); piv[p] 0-based swaps. Returns info (int32).

    >>> lu = np.array([[[0.0, 1.0], [2.0, 3.0]]]); piv = np.empty((1, 2), np.int32)
    >>> lu_factor_batched(lu, piv), piv
    (array([0], dtype=int32), array([[1, 1]], dtype=int32))
    """
    _check("lu_factor_batched", lu, piv)
    if piv.dtype != np.int32 or piv.shape != lu.shape[:2]:
        raise ValueError(f"lu_factor_batched: piv must be int32 of shape {lu.shape[:2]}, got {piv.dtype} {piv.shape}")
    info = np.zeros(lu.shape[0], dtype=np.int32)
    kernel, _ = _LU_FACTOR.pick(lu.shape[0] * lu.shape[1] ** 3 // 3, _FLOP_GRAIN)
    kernel(lu, piv, info)
    return info


def lu_substitute_batched(lu: np.ndarray, piv: np.ndarray, x: np.ndarray, transposed: bool) -> np.ndarray:
    """x[p] <- A[p]^-1 x[p] (A[p]^-T x[p] when `transposed`) from lu_factor_batched's (lu, piv)."""
    _check("lu_substitute_batched", lu, piv, x)
    if x.ndim != 3 or x.shape[1] != lu.shape[1] or x.dtype != lu.dtype:
        raise ValueError(f"lu_substitute_batched: x must be {lu.dtype} (batch, {lu.shape[1]}, k), got {x.dtype} "
                         f"{x.shape}")
    kernel, _ = _LU_SUBSTITUTE.pick(x.shape[0] * x.shape[1] ** 2 * x.shape[2], _FLOP_GRAIN)
    kernel(lu, piv, x, bool(transposed))
    return x


def slogdet_batched(lu: np.ndarray, piv: np.ndarray, sign: np.ndarray, logabs: np.ndarray) -> np.ndarray:
    """lu_factor_batched, and from its factors sign[p] and logabs[p] = log|det A[p]| (sign 0 and
    logabs -inf where A[p] is singular). Returns info as lu_factor_batched does."""
    _check("slogdet_batched", lu, piv, sign, logabs)
    if piv.dtype != np.int32 or piv.shape != lu.shape[:2] or sign.shape != lu.shape[:1] or logabs.shape != sign.shape:
        raise ValueError(f"slogdet_batched: piv (int32 {lu.shape[:2]}), sign and logabs ({lu.shape[:1]}) expected, "
                         f"got {piv.dtype} {piv.shape}, {sign.shape}, {logabs.shape}")
    info = np.zeros(lu.shape[0], dtype=np.int32)
    kernel, _ = _SLOGDET.pick(lu.shape[0] * lu.shape[1] ** 3 // 3, _FLOP_GRAIN)
    kernel(lu, piv, sign, logabs, info)
    return info


def svd_jacobi_batched(a: np.ndarray, u: np.ndarray, s: np.ndarray, vh: np.ndarray) -> np.ndarray:
    """The thin SVD a[p] = u[p] diag(s[p]) vh[p] of tall or square a (batch, m, n), m >= n, s
    descending, by one-sided Jacobi. Returns a bool mask of the matrices whose smallest singular
    value is below sqrt(eps) times the largest: their U is not accurate, the caller recomputes them."""
    _check("svd_jacobi_batched", a, u, s, vh)
    batch, m, n = a.shape if a.ndim == 3 else (0, 0, 0)
    if a.ndim != 3 or m < n or u.shape != a.shape or s.shape != (batch, n) or vh.shape != (batch, n, n):
        raise ValueError(f"svd_jacobi_batched: a (batch, m, n) with m >= n, u like a, s (batch, n) and vh "
                         f"(batch, n, n) expected, got {a.shape}, {u.shape}, {s.shape}, {vh.shape}")
    if not a.dtype == u.dtype == s.dtype == vh.dtype:
        raise ValueError(f"svd_jacobi_batched: one float dtype expected, got {[x.dtype for x in (a, u, s, vh)]}")
    fallback = np.zeros(batch, dtype=np.bool_)
    kernel, _ = _SVD.pick(batch * m * n * n * 8, _FLOP_GRAIN)
    kernel(a, float(np.finfo(a.dtype).eps), u, s, vh, fallback)
    return fallback


def eigh_jacobi_batched(a: np.ndarray, upper: bool, w: np.ndarray, v: np.ndarray) -> None:
    """Eigenvalues w[p] (ascending) and eigenvectors v[p] (columns) of the symmetric matrix whose
    `upper` (else lower) triangle a[p] holds. a must be finite (the callers check)."""
    _check("eigh_jacobi_batched", a, w, v)
    if w.shape != a.shape[:2] or v.shape != a.shape or w.dtype != a.dtype or v.dtype != a.dtype:
        raise ValueError(f"eigh_jacobi_batched: w {w.shape} and v {v.shape} must be {a.dtype} of shapes "
                         f"{a.shape[:2]} and {a.shape}")
    n = a.shape[1]
    kernel, _ = _EIGH.pick(a.shape[0] * n**3 * 8, _FLOP_GRAIN)
    kernel(a, bool(upper), float(np.finfo(a.dtype).eps), w, v)
