"""Linear solvers and inverses as differentiable ops: solve_triangular, solve, inv, pinv and
matrix_exp. Batched over leading dims; LAPACK through NumPy and SciPy on the host.

Each backward is written with numdiff ops, several of them these same ops, so second derivatives
come for free (the double backward of solve and inv is differentiating these formulas):

    solve_triangular  X = A^-1 B:   gB = A^-T gX (a triangular solve),  gA = -tri(gB X^T)
    solve             X = A^-1 B:   gB = solve(A^T, gX),                gA = -gB X^T
    inv               Y = A^-1:     gA = -Y^T gY Y^T
    pinv              P = A^+:      gA = -P^T gP P^T + (I - A P) gP^T P P^T + P^T P gP^T (I - P A)
    matrix_exp        E = e^A:      gA = the upper-right block of exp([[A^T, gE], [0, A^T]])

The public functions (numdiff.linalg) check shapes, dtypes, NaN and singularity before these run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.autograd.function import Function
from numdiff.backend import backend_for
from numdiff.ops import _lapack, _linalg_grads
from numdiff.ops.joining import cat
from numdiff.ops.registry import register

scipy_linalg = lazy_module("scipy.linalg")
_blas = lazy_module("numdiff.kernels._blas")
_blocked = lazy_module("numdiff.kernels.linalg_blocked")

# Batches of matrices up to this order go through the compiled substitution kernel; one matrix,
# or larger ones, through LAPACK's trsm (blocked, BLAS-3).
_KERNEL_MAX_ORDER = 64


def _mT(x: Any) -> Any:  # noqa: N802 - PyTorch's name for the matrix transpose
    return x.transpose(tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))  # CudaArray has no swapaxes


def on_device(a: Any) -> bool:
    """Whether `a` lives on a GPU, where the batched small-matrix kernels run instead of LAPACK."""
    return backend_for(a).name != "cpu"


def _stack3(x: Any) -> Any:
    """A contiguous (batch, m, n) array of `x`'s matrices (copied only when not contiguous)."""
    x = x if x.flags.c_contiguous else x.copy()
    return x.reshape((math.prod(x.shape[:-2]),) + tuple(x.shape[-2:]))


def device_triangular_solve(a: Any, b: Any, upper: bool, unit: bool) -> Any:
    """The GPU's A^-1 B for same-batch A (..., n, n) and B (..., n, k) (public functions expand them)."""
    b3 = _stack3(b)
    out = b3.copy()
    backend_for(a).triangular_solve(_stack3(a), b3, out, upper, unit)
    return out.reshape(tuple(b.shape))


def device_info(x: Any, batch: int) -> Any:
    """A zeroed int32 info vector on `x`'s device."""
    return backend_for(x).from_host(np.zeros(max(batch, 1), np.int32), x)


def triangular_solve_array(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """A^-1 B for triangular A (..., n, n) and B (..., n, k), broadcasting the batch dims."""
    if on_device(a):
        return device_triangular_solve(a, b, upper, unit)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, k = a.shape[-1], b.shape[-1]
    dtype = np.result_type(a, b)
    a3 = np.ascontiguousarray(np.broadcast_to(a, batch + a.shape[-2:]), dtype=dtype).reshape(math.prod(batch), n, n)
    b3 = np.ascontiguousarray(np.broadcast_to(b, batch + b.shape[-2:]), dtype=dtype).reshape(math.prod(batch), n, k)
    out = np.empty_like(b3)
    threads = _lapack.blocked_threads(a3)
    # trsm over numdiff's threads; a zero on the diagonal goes to SciPy's, which raises (as at one thread)
    if threads and (unit or np.diagonal(a3, axis1=1, axis2=2).all()):
        for p in range(len(a3)):
            out[p] = _blocked.solve_triangular_blocked(a3[p], b3[p], upper, unit, threads)
    elif len(a3) == 1 or n > _KERNEL_MAX_ORDER:
        _blas.hold_one_blas_thread()
        for p in range(len(a3)):
            out[p] = _lapack_triangular_solve(a3[p], b3[p], upper, unit)
    elif len(a3):
        backend_for(a3).triangular_solve(a3, b3, out, upper, unit)
    return out.reshape(batch + (n, k))


def _lapack_triangular_solve(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """A^-1 B for one C-contiguous triangular A (n, n) and B (n, k): the LAPACK call SciPy's
    solve_triangular makes for such an A (trtrs on A^T, the other triangle, transposed), without
    its per-call wrapper (a 20 x 20 solve against one column: 6.0 -> 1.3 us; a Gaussian process's
    likelihood and its gradient solve a dozen times per step). Same call, same numbers."""
    if not a.size or not b.size:
        return scipy_linalg.solve_triangular(a, b, lower=not upper, unit_diagonal=unit, check_finite=False)
    (trtrs,) = scipy_linalg.get_lapack_funcs(("trtrs",), (a, b))
    x, info = trtrs(a.T, b, lower=upper, trans=1, unitdiag=unit)
    if info > 0:
        raise np.linalg.LinAlgError(f"singular matrix: resolution failed at diagonal {info - 1}")
    if info < 0:
        raise ValueError(f"solve_triangular: illegal value in argument {-info} of LAPACK's trtrs")
    return x


def _triangle(x: Any, upper: bool, unit: bool) -> Any:
    """The part of a gradient that a triangular solve read: the triangle, less the diagonal if unit."""
    part = x.triu(1 if unit else 0) if upper else x.tril(-1 if unit else 0)
    return part


@register("solve_triangular", compile="call", launchers=("triangular_solve",))
class SolveTriangular(Function):
    @staticmethod
    def forward(ctx, a, b, *, upper, left, unitriangular):
        if left:
            out = triangular_solve_array(a, b, upper, unitriangular)
        else:  # X A = B  <=>  A^T X^T = B^T
            out = _mT(triangular_solve_array(_mT(a), _mT(b), not upper, unitriangular))
        ctx.save_for_backward(a, out)
        ctx.upper, ctx.left, ctx.unit = upper, left, unitriangular
        return out

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        g_b = SolveTriangular.apply(a.mT, grad, upper=not ctx.upper, left=ctx.left, unitriangular=ctx.unit)
        g_a = None
        if ctx.needs_input_grad[0]:
            g_a = _triangle(-(g_b @ x.mT) if ctx.left else -(x.mT @ g_b), ctx.upper, ctx.unit)
        return g_a, g_b if ctx.needs_input_grad[1] else None


@register("linalg_solve", compile="call", launchers=("lu_solve_batched",))
class Solve(Function):
    @staticmethod
    def forward(ctx, a, b):
        if on_device(a):
            out = _stack3(b).copy()
            info = device_info(a, out.shape[0])
            backend_for(a).lu_solve_batched(_stack3(a), _stack3(b), out, info)
            if backend_for(info).to_host(info).any():
                raise np.linalg.LinAlgError("Singular matrix")
            out = out.reshape(tuple(b.shape))
            ctx.factors = None
        else:
            out, ctx.factors = _lapack.solve(a, b)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        if _linalg_grads.direct(grad, x.shape):  # A^-T G from the forward's LU, no graph recorded
            g_a, g_b = _linalg_grads.solve(a._data, ctx.factors, x._data, grad._data, ctx.needs_input_grad[0])
            g_b = grad.new_tensor(g_b) if ctx.needs_input_grad[1] else None
            return (None if g_a is None else grad.new_tensor(g_a)), g_b
        g_b = Solve.apply(a.mT, grad)
        g_a = -(g_b @ x.mT) if ctx.needs_input_grad[0] else None
        return g_a, g_b if ctx.needs_input_grad[1] else None


def _device_inverse(a: Any) -> Any:
    """A^-1 of each matrix of a GPU array: the batched LU kernel, then its substitution on the identity."""
    backend = backend_for(a)
    lu = _stack3(a).copy()
    piv = backend.from_host(np.zeros(lu.shape[:2], np.int32), a)
    if backend.to_host(backend.lu_factor_batched(lu, piv)).any():
        raise np.linalg.LinAlgError("Singular matrix")
    out = backend.from_host(np.broadcast_to(np.eye(lu.shape[1], dtype=a.dtype), lu.shape).copy(), a)
    backend.lu_substitute_batched(lu, piv, out, False)
    return out.reshape(tuple(a.shape))


@register("linalg_inv", compile="call", launchers=("lu_factor_batched", "lu_substitute_batched"))
class Inv(Function):
    @staticmethod
    def forward(ctx, a):
        out = _device_inverse(a) if on_device(a) else _lapack.inv(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        y_t = y.mT
        return (-(y_t @ grad @ y_t),)


@register("linalg_pinv", compile="call")
class Pinv(Function):
    @staticmethod
    def forward(ctx, a, *, rtol, hermitian):
        out = np.linalg.pinv(a, rcond=rtol, hermitian=hermitian)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, p = ctx.saved_tensors
        m, n = a.shape[-2], a.shape[-1]
        eye_m = p.new_tensor(np.eye(m))
        eye_n = p.new_tensor(np.eye(n))
        p_t, g_t = p.mT, grad.mT
        g_a = -(p_t @ grad @ p_t)
        g_a = g_a + (eye_m - a @ p) @ g_t @ (p @ p_t)
        g_a = g_a + (p_t @ p) @ g_t @ (eye_n - p @ a)
        return (g_a,)


def _expm(a: np.ndarray) -> np.ndarray:
    flat = a.reshape(math.prod(a.shape[:-2]), *a.shape[-2:])
    out = np.empty_like(flat)
    for p in range(len(flat)):
        out[p] = scipy_linalg.expm(flat[p])
    return out.reshape(a.shape)


@register("linalg_matrix_exp", compile="call")
class MatrixExp(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _expm(a)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        a_t = a.mT
        zeros = a_t * 0.0
        block = cat([cat([a_t, grad], -1), cat([zeros, a_t], -1)], -2)
        return (MatrixExp.apply(block)[..., :n, n:],)
