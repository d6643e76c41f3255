"""Matrix factorizations as differentiable ops: cholesky, eigh, svd and qr, batched over leading dims.

An op has one output, so a factorization with several is several ops over the same LAPACK call
(eigh's values and vectors, svd's U, S and Vh, qr's Q and R). That costs nothing in the backward:
each formula is linear in the incoming gradients, so the gradient with respect to A is the sum of
the parts, and each op contributes its own. Formulas (real case; F_ij = 1 / (w_j - w_i) off the
diagonal, 0 on it; sym(X) = X + X^T, skew(X) = X - X^T):

    det       d = |A|:             gA = g d A^-T, or g cof(A) through the SVD where A is singular
    logabsdet l = log|A|:          gA = g A^-T
    cholesky  A = L L^T:       P = tril(L^T gL) with its diagonal halved;  gA = sym(L^-T P L^-1) / 2
                               (two triangular solves, as PyTorch and JAX do: no inverse is formed)
    eigh      A = V diag(w) V^T:   values   gA = V diag(gw) V^T
                                   vectors  gA = V (F o V^T gV) V^T, symmetrized
    svd       A = U diag(s) V^T:   values   gA = U diag(gs) V^T
                                   U        gA = U (skew(U^T gU) / E) S V^T + (I - U U^T) gU S^-1 V^T
                                   V^T      gA = U S (skew(V^T gV) / E) V^T + U S^-1 gV^T (I - V V^T)
                                   with E_ij = s_j^2 - s_i^2 (1 on the diagonal, where skew is 0)
    qr        A = Q R (m >= n):    M = R gR^T - gQ^T Q;  gA = (gQ + Q copyltu(M)) R^-T,
                                   copyltu(M) = tril(M, -1) + tril(M, -1)^T + diag(M)

Repeated eigenvalues (or singular values) make F (or 1/E) infinite: the vectors' gradient is then
not defined, and, as in PyTorch, it comes out inf or NaN; the values' gradient stays finite.
"""

from __future__ import annotations

import numpy as np

from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import backend_for
from numdiff.ops import _lapack, _linalg_grads
from numdiff.ops.joining import stack
from numdiff.ops.linalg_solve import (
    Inv,
    Solve,
    SolveTriangular,
    _stack3,
    device_info,
    on_device,
    triangular_solve_array,
)
from numdiff.ops.registry import register
from numdiff.tensor import Tensor


def _other(ctx, grad, op, name, **attrs):
    """Another factor of the same decomposition, for a backward formula.

    Under create_graph it is recomputed from A by its own op, so the formula stays differentiable
    (second derivatives are right); otherwise the array forward kept is used as a constant.
    """
    if is_grad_enabled():
        return op.apply(ctx.saved_tensors[0], **attrs)
    return grad.new_tensor(getattr(ctx, name))


def _upper_solve(upper: np.ndarray, b: np.ndarray) -> np.ndarray:
    return triangular_solve_array(upper, b, True, False)


def _diag_embed(v):
    return v.unsqueeze(-1) * v.new_tensor(np.eye(v.shape[-1]))


@register("linalg_cholesky", compile="call", launchers=("cholesky_batched", "cholesky_backward_batched"))
class Cholesky(Function):
    @staticmethod
    def forward(ctx, a):
        if on_device(a):
            a3 = _stack3(a)
            out = a3.copy()
            info = device_info(a, a3.shape[0])
            backend_for(a).cholesky_batched(a3, out, info)
            if backend_for(info).to_host(info).any():
                raise np.linalg.LinAlgError("Matrix is not positive definite")
            out = out.reshape(tuple(a.shape))
        else:
            out = _lapack.cholesky(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (low,) = ctx.saved_tensors
        if _linalg_grads.direct(grad, low.shape):
            return (grad.new_tensor(_linalg_grads.cholesky(low._data, grad._data, _upper_solve)),)
        if on_device(low._data) and not is_grad_enabled() and tuple(grad.shape) == tuple(low.shape):
            out = _stack3(low._data).copy()  # the GPU's whole formula, one thread per matrix
            backend_for(low._data).cholesky_backward_batched(_stack3(low._data), _stack3(grad._data), out)
            return (Tensor._wrap(out.reshape(tuple(low.shape)), None, None),)
        phi = low.mT @ grad.tril()
        phi = phi.tril(-1) + 0.5 * _diag_embed(phi.diagonal(0, -2, -1))
        # L^-T phi L^-1 as two triangular solves with L^T (upper).
        left = SolveTriangular.apply(low.mT, phi, upper=True, left=True, unitriangular=False)
        g_a = SolveTriangular.apply(low.mT, left.mT, upper=True, left=True, unitriangular=False).mT
        return (0.5 * (g_a + g_a.mT),)


@register("linalg_eigvalsh", compile="call")
class EighValues(Function):
    @staticmethod
    def forward(ctx, a, *, upper):
        values, vectors = _lapack.eigh(a, upper)
        ctx.save_for_backward(a)
        ctx.vectors, ctx.upper = vectors, upper
        return values

    @staticmethod
    def backward(ctx, grad):
        if _linalg_grads.direct(grad, ctx.vectors.shape[:-1]):
            return (grad.new_tensor(_linalg_grads.eigh_values(ctx.vectors, grad._data)),)
        v = _other(ctx, grad, EighVectors, "vectors", upper=ctx.upper)
        return ((v * grad.unsqueeze(-2)) @ v.mT,)


@register("linalg_eigh_vectors", compile="call")
class EighVectors(Function):
    @staticmethod
    def forward(ctx, a, *, upper):
        values, vectors = _lapack.eigh(a, upper)
        ctx.save_for_backward(a, vectors)
        ctx.values, ctx.upper = values, upper
        return vectors

    @staticmethod
    def backward(ctx, grad):
        v = ctx.saved_tensors[1]
        if _linalg_grads.direct(grad, v.shape):
            return (grad.new_tensor(_linalg_grads.eigh_vectors(ctx.values, v._data, grad._data)),)
        w = _other(ctx, grad, EighValues, "values", upper=ctx.upper)
        gap = w.unsqueeze(-2) - w.unsqueeze(-1)  # w_j - w_i
        eye = grad.new_tensor(np.eye(w.shape[-1]))
        with np.errstate(divide="ignore", invalid="ignore"):
            inner = (v.mT @ grad) / (gap + eye)  # the diagonal is divided by 1, then zeroed
        inner = inner * (1 - eye)
        g_a = v @ inner @ v.mT
        return (0.5 * (g_a + g_a.mT),)


def _svd(a: np.ndarray) -> tuple:
    return _lapack.svd(a)


@register("linalg_svdvals", compile="call")
class SvdValues(Function):
    @staticmethod
    def forward(ctx, a):
        u, s, vh = _svd(a)
        ctx.save_for_backward(a)
        ctx.u, ctx.vh = u, vh
        return s

    @staticmethod
    def backward(ctx, grad):
        if _linalg_grads.direct(grad, ctx.u.shape[:-2] + ctx.u.shape[-1:]):
            return (grad.new_tensor(_linalg_grads.svd_values(ctx.u, ctx.vh, grad._data)),)
        u, vh = _other(ctx, grad, SvdU, "u"), _other(ctx, grad, SvdVh, "vh")
        return ((u * grad.unsqueeze(-2)) @ vh,)


def _svd_parts(grad, u, s, vh):
    """(E_ij = s_j^2 - s_i^2 with a unit diagonal, the identity of order k)."""
    k = s.shape[-1]
    eye = grad.new_tensor(np.eye(k))
    squared = s * s
    e = squared.unsqueeze(-2) - squared.unsqueeze(-1) + eye
    return e, eye


@register("linalg_svd_u", compile="call")
class SvdU(Function):
    @staticmethod
    def forward(ctx, a):
        u, s, vh = _svd(a)
        ctx.save_for_backward(a, u)
        ctx.s, ctx.vh = s, vh
        return u

    @staticmethod
    def backward(ctx, grad):
        u = ctx.saved_tensors[1]
        if _linalg_grads.direct(grad, u.shape):
            return (grad.new_tensor(_linalg_grads.svd_u(u._data, ctx.s, ctx.vh, grad._data)),)
        s, vh = _other(ctx, grad, SvdValues, "s"), _other(ctx, grad, SvdVh, "vh")
        e, eye = _svd_parts(grad, u, s, vh)
        inner = u.mT @ grad
        core = ((inner - inner.mT) / e) * s.unsqueeze(-2)
        g_a = u @ core @ vh
        if u.shape[-2] > s.shape[-1]:
            g_a = g_a + ((grad - u @ inner) / s.unsqueeze(-2)) @ vh
        return (g_a,)


@register("linalg_svd_vh", compile="call")
class SvdVh(Function):
    @staticmethod
    def forward(ctx, a):
        u, s, vh = _svd(a)
        ctx.save_for_backward(a, vh)
        ctx.u, ctx.s = u, s
        return vh

    @staticmethod
    def backward(ctx, grad):
        vh = ctx.saved_tensors[1]
        if _linalg_grads.direct(grad, vh.shape):
            return (grad.new_tensor(_linalg_grads.svd_vh(ctx.u, ctx.s, vh._data, grad._data)),)
        u, s = _other(ctx, grad, SvdU, "u"), _other(ctx, grad, SvdValues, "s")
        e, eye = _svd_parts(grad, u, s, vh)
        g_v = grad.mT  # the gradient with respect to V = Vh^T
        v = vh.mT
        inner = v.mT @ g_v
        core = s.unsqueeze(-1) * ((inner - inner.mT) / e)
        g_a = u @ core @ vh
        if vh.shape[-1] > s.shape[-1]:
            g_a = g_a + u @ ((g_v - v @ inner) / s.unsqueeze(-2)).mT
        return (g_a,)


def _qr(a: np.ndarray) -> tuple:
    return _lapack.qr(a)


def _copyltu(m):
    lower = m.tril(-1)
    return lower + lower.mT + _diag_embed(m.diagonal(0, -2, -1))


@register("linalg_qr_q", compile="call")
class QrQ(Function):
    @staticmethod
    def forward(ctx, a):
        q, r = _qr(a)
        ctx.save_for_backward(a, q)
        ctx.r = r
        return q

    @staticmethod
    def backward(ctx, grad):
        q = ctx.saved_tensors[1]
        r = _other(ctx, grad, QrR, "r")
        m = -(grad.mT @ q)
        b = grad + q @ _copyltu(m)
        return (SolveTriangular.apply(r.mT, b, upper=False, left=False, unitriangular=False),)


@register("linalg_qr_r", compile="call")
class QrR(Function):
    @staticmethod
    def forward(ctx, a):
        q, r = _qr(a)
        ctx.save_for_backward(a, r)
        ctx.q = q
        return r

    @staticmethod
    def backward(ctx, grad):
        r = ctx.saved_tensors[1]
        q = _other(ctx, grad, QrQ, "q")
        m = r @ grad.mT
        b = q @ _copyltu(m)
        return (SolveTriangular.apply(r.mT, b, upper=False, left=False, unitriangular=False),)


def device_slogdet(a):
    """(sign, log|det|, (lu, piv)) of a device array's matrices by the batched LU kernel, on its device."""
    backend = backend_for(a)
    lu = _stack3(a).copy()
    piv = backend.from_host(np.zeros(lu.shape[:2], np.int32), a)
    sign = backend.from_host(np.zeros(lu.shape[0], a.dtype), a)
    logabs = backend.from_host(np.zeros(lu.shape[0], a.dtype), a)
    backend.slogdet_batched(lu, piv, sign, logabs)
    shape = tuple(a.shape[:-2])
    return sign.reshape(shape), logabs.reshape(shape), (lu, piv)


def _device_inverse_transpose(a, factors):
    """A^-T of a GPU tensor: from the forward's LU factors by the substitution kernel when no graph
    is recorded, else by Solve (recorded, for create_graph)."""
    if is_grad_enabled():
        eye = a.new_tensor(np.broadcast_to(np.eye(a.shape[-1]), tuple(a.shape)).copy())
        return Solve.apply(a.mT, eye)
    lu, piv = factors
    x = backend_for(lu).from_host(np.broadcast_to(np.eye(lu.shape[1], dtype=lu.dtype), lu.shape).copy(), lu)
    backend_for(lu).lu_substitute_batched(lu, piv, x, True)
    return Tensor._wrap(x.reshape(tuple(a.shape)), None, None)


def _slogdet_any(a):
    return device_slogdet(a) if on_device(a) else _lapack.slogdet(a)


@register("linalg_det", compile="call", launchers=("slogdet_batched", "lu_substitute_batched"))
class Det(Function):
    @staticmethod
    def forward(ctx, a):
        sign, logabs, ctx.factors = _slogdet_any(a)
        out = sign * np.exp(logabs)
        out = out if on_device(a) else np.asarray(out)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, det = ctx.saved_tensors
        nonsingular = bool((backend_for(det._data).to_host(det._data) != 0).all())
        if nonsingular and _linalg_grads.direct(grad, det.shape):
            inverse_t = _linalg_grads.inverse_transpose(a._data, ctx.factors)
            return (grad.new_tensor((grad._data * det._data)[..., None, None] * inverse_t),)
        if nonsingular and on_device(a._data):
            return ((grad * det)[..., None, None] * _device_inverse_transpose(a, ctx.factors),)
        if nonsingular:
            return ((grad * det)[..., None, None] * Inv.apply(a).mT,)
        if on_device(a._data):  # the cofactors' SVD runs on the host
            return (grad[..., None, None] * _cofactor(a.cpu()).to(a.device),)
        return (grad[..., None, None] * _cofactor(a),)


def _cofactor(a):
    """cof(A) = det(U V^T) U diag(prod_{j != i} s_j) V^T from A = U S V^T: defined at any rank."""
    u, s, vh = SvdU.apply(a), SvdValues.apply(a), SvdVh.apply(a)
    n = s.shape[-1]
    if n == 1:
        products = s * 0 + 1
    else:
        products = stack([s[..., [j for j in range(n) if j != i]].prod(-1) for i in range(n)], -1)
    sign = Det.apply(u) * Det.apply(vh)
    return sign[..., None, None] * ((u * products.unsqueeze(-2)) @ vh)


@register("linalg_logabsdet", compile="call", launchers=("slogdet_batched", "lu_substitute_batched"))
class LogAbsDet(Function):
    @staticmethod
    def forward(ctx, a):
        _, logabs, ctx.factors = _slogdet_any(a)
        ctx.save_for_backward(a)
        return logabs if on_device(a) else np.asarray(logabs)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if _linalg_grads.direct(grad, a.shape[:-2]):
            inverse_t = _linalg_grads.inverse_transpose(a._data, ctx.factors)
            return (grad.new_tensor(grad._data[..., None, None] * inverse_t),)
        if on_device(a._data):
            return (grad[..., None, None] * _device_inverse_transpose(a, ctx.factors),)
        return (grad[..., None, None] * Inv.apply(a).mT,)
