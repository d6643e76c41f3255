"""The linalg backward formulas on host arrays, for a backward that will not be differentiated again.

Each op in numdiff.ops.linalg_factor and linalg_solve writes its backward with numdiff ops, so that
``create_graph=True`` records it (second derivatives). That costs a recorded op, with its Python
dispatch, per matrix product: about fifteen per eigh or svd backward, which for a batch of small
matrices took longer than the arithmetic (issue 29). When grad mode is off during the backward
(no create_graph) and the arrays are on the host, the ops call these instead: the same formulas
(written out in numdiff.ops.linalg_factor's docstring), in NumPy, with no graph recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import is_host
from numdiff.ops import _lapack
from numdiff.ops.linalg import _product as product

_numba = lazy_module("numba")
_blocked_grads = lazy_module("numdiff.kernels.linalg_blocked_grads")


def direct(grad: Any, output_shape: tuple) -> bool:
    """Whether a backward may use these array formulas: grad mode off, a host gradient, laid out as
    the op's output was (`output_shape`; a transform's batched stand-in is not)."""
    return not is_grad_enabled() and is_host(grad._data) and grad._data.shape == tuple(output_shape)


def _t(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


_NUMPY_MAX_ORDER = 32


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b: NumPy's matmul for small matrices, numdiff's GEMM (one BLAS thread per Numba thread)
    for larger ones, as the recorded backward's matmul ops would run them. NumPy's own OpenBLAS
    keeps a second thread pool beside Numba's (numdiff.kernels._blas says why numdiff avoids that)."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if max(m, k, n) <= _NUMPY_MAX_ORDER or a.dtype.kind != "f" or a.dtype != b.dtype or a.dtype.itemsize < 4:
        return a @ b
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = np.empty(batch + (m, n), dtype=a.dtype)
    if not batch:
        product(a, b, out)
    else:
        a3 = np.broadcast_to(a, batch + (m, k)).reshape(-1, m, k)
        b3 = np.broadcast_to(b, batch + (k, n)).reshape(-1, k, n)
        product(a3, b3, out.reshape(-1, m, n))
    return out


def _symmetric_mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b^T where the product is known to be symmetric: above order 32, from its lower triangle only
    (numdiff.kernels.linalg_blocked_grads.symmetric_product: about half the flops, split over numdiff's
    threads), per matrix of a batch; else as :func:`_mm`."""
    n = a.shape[-2]
    if n <= _NUMPY_MAX_ORDER or a.dtype not in (np.float32, np.float64) or a.dtype != b.dtype or a.shape != b.shape:
        return _mm(a, _t(b))
    threads = _numba.get_num_threads()
    if a.ndim == 2:
        return _blocked_grads.symmetric_product(a, b, threads)
    flat = [_blocked_grads.symmetric_product(x, y, threads) for x, y in zip(a.reshape((-1,) + a.shape[-2:]),
                                                                         b.reshape((-1,) + b.shape[-2:]))]
    return np.stack(flat).reshape(a.shape[:-1] + (n,))


def cholesky(
    low: np.ndarray, grad: np.ndarray, upper_solve: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """gA of L = cholesky(A): sym(L^-T Phi L^-1) / 2, Phi = tril(L^T gL) with its diagonal halved;
    ``upper_solve(U, B)`` is U^-1 B for upper-triangular U (numdiff.ops.linalg_solve's, batched).
    Most orders run the whole formula in one kernel call (numdiff.ops._lapack.cholesky_backward: the
    batched kernel up to order 16, the blocked one from order 32); this composition takes the rest."""
    by_kernel = _lapack.cholesky_backward(low, grad)
    if by_kernel is not None:
        return by_kernel
    phi = np.tril(_mm(_t(low), np.tril(grad)))
    diagonal = np.einsum("...ii->...i", phi)
    diagonal *= 0.5
    upper = _t(low)
    left = upper_solve(upper, phi)
    g_a = _t(upper_solve(upper, _t(left)))
    return 0.5 * (g_a + _t(g_a))


def eigh_values(vectors: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """gA of the eigenvalues: V diag(gw) V^T (symmetric: its lower triangle computed)."""
    return _symmetric_mm(vectors * grad[..., None, :], vectors)


def eigh_vectors(values: np.ndarray, vectors: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """gA of the eigenvectors: sym(V (F o V^T gV) V^T) / 2, F_ij = 1 / (w_j - w_i) off the diagonal,
    computed as V M V^T with M = sym(F o V^T gV) / 2 = (C - C^T) / (2 (w_j - w_i)), C = V^T gV
    (symmetric, so V M V^T is, and only its lower triangle is computed)."""
    gap = values[..., None, :] - values[..., :, None]
    inner = _mm(_t(vectors), grad)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = (inner - _t(inner)) / (gap + gap)
    np.einsum("...ii->...i", inner)[...] = 0.0
    return _symmetric_mm(_mm(vectors, inner), vectors)


def svd_values(u: np.ndarray, vh: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """gA of the singular values: U diag(gs) V^T."""
    return _mm(u * grad[..., None, :], vh)


def _gaps(s: np.ndarray) -> np.ndarray:
    squared = s * s
    gaps = squared[..., None, :] - squared[..., :, None]
    np.einsum("...ii->...i", gaps)[...] = 1.0  # skew parts are 0 there
    return gaps


def svd_u(u: np.ndarray, s: np.ndarray, vh: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """gA of U: U (skew(U^T gU) / E) S V^T + (I - U U^T) gU S^-1 V^T."""
    inner = _mm(_t(u), grad)
    with np.errstate(divide="ignore", invalid="ignore"):
        core = ((inner - _t(inner)) / _gaps(s)) * s[..., None, :]
        g_a = _mm(_mm(u, core), vh)
        if u.shape[-2] > s.shape[-1]:
            g_a = g_a + _mm((grad - _mm(u, inner)) / s[..., None, :], vh)
    return g_a


def svd_vh(u: np.ndarray, s: np.ndarray, vh: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """gA of V^T: U S (skew(V^T gV) / E) V^T + U S^-1 gV^T (I - V V^T), gV = gVh^T."""
    g_v, v = _t(grad), _t(vh)
    inner = _mm(vh, g_v)
    with np.errstate(divide="ignore", invalid="ignore"):
        core = s[..., :, None] * ((inner - _t(inner)) / _gaps(s))
        g_a = _mm(_mm(u, core), vh)
        if vh.shape[-1] > s.shape[-1]:
            g_a = g_a + _mm(u, _t((g_v - _mm(v, inner)) / s[..., None, :]))
    return g_a


def inverse_transpose(a: np.ndarray, factors: _lapack.LUFactors | None) -> np.ndarray:
    """A^-T, from A's LU factors when the forward kept them."""
    if factors is not None:
        return _lapack.solve_factored(factors, np.eye(a.shape[-1], dtype=a.dtype), transposed=True).reshape(a.shape)
    return _t(np.linalg.inv(a))


def solve(a: np.ndarray, factors: _lapack.LUFactors | None, x: np.ndarray, grad: np.ndarray,
          need_a: bool) -> tuple[np.ndarray | None, np.ndarray]:
    """(gA, gB) of X = A^-1 B: gB = A^-T gX (from A's LU factors when the forward kept them), gA = -gB X^T
    (None unless `need_a`)."""
    if factors is not None:
        g_b = _lapack.solve_factored(factors, grad, transposed=True)
    else:
        g_b = np.linalg.solve(_t(a), grad)
    return (-_mm(g_b, _t(x)) if need_a else None), g_b
