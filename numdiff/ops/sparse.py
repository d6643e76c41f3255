"""Sparse COO products as ops: ``coo_mm`` (COO @ dense) and ``coo_sampled_dot`` (a @ b.T read at
the COO entries), each other's gradients (numdiff.kernels.sparse explains the kernels).

For ``out = A @ D`` with A = COO(rows, cols, values) of shape (m, k) and D dense (k, n):

    d values[e] = sum_j grad[rows[e], j] * D[cols[e], j]   = coo_sampled_dot(grad, D)
    d D         = A.T @ grad                               = coo_mm with rows and cols swapped

and for ``s = coo_sampled_dot(a, b)`` (s[e] = a[rows[e]] . b[cols[e]]):

    d a = COO(rows, cols, grad_s) @ b,   d b = COO(cols, rows, grad_s) @ a

so second derivatives come from the same two ops. Indices are attrs (never differentiated);
the public entry points (numdiff.sparse) check them before any kernel runs.
"""

from __future__ import annotations

import numpy as np

from numdiff.autograd.function import Function
from numdiff.backend import backend_for
from numdiff.ops.registry import register
from numdiff.tensor import Tensor

__all__ = ["CooMatmul", "CooSampledDot", "coo_matmul", "coo_sampled_dot"]


@register("coo_mm", compile="call", launchers=("coo_spmm",))
class CooMatmul(Function):
    """COO(rows, cols, values) of `n_rows` rows @ dense (attrs: rows, cols, n_rows)."""

    @staticmethod
    def forward(ctx, values, dense, *, rows, cols, n_rows):
        out = np.empty((n_rows, dense.shape[1]), dtype=dense.dtype, like=dense)
        backend_for(dense).coo_spmm(rows, cols, values, dense, out)
        ctx.save_for_backward(values, dense)
        ctx.rows, ctx.cols = rows, cols
        return out

    @staticmethod
    def backward(ctx, grad):
        values, dense = ctx.saved_tensors
        grad_values = grad_dense = None
        if ctx.needs_input_grad[0]:
            grad_values = CooSampledDot.apply(grad, dense, rows=ctx.rows, cols=ctx.cols)
        if ctx.needs_input_grad[1]:
            grad_dense = CooMatmul.apply(values, grad, rows=ctx.cols, cols=ctx.rows, n_rows=dense.shape[0])
        return grad_values, grad_dense


@register("coo_sampled_dot", compile="call", launchers=("coo_sddmm",))
class CooSampledDot(Function):
    """s[e] = a[rows[e]] . b[cols[e]] for the COO entries (attrs: rows, cols)."""

    @staticmethod
    def forward(ctx, a, b, *, rows, cols):
        out = np.empty((rows.shape[0],), dtype=a.dtype, like=a)
        backend_for(a).coo_sddmm(rows, cols, a, b, out)
        ctx.save_for_backward(a, b)
        ctx.rows, ctx.cols = rows, cols
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = CooMatmul.apply(grad, b, rows=ctx.rows, cols=ctx.cols, n_rows=a.shape[0])
        if ctx.needs_input_grad[1]:
            grad_b = CooMatmul.apply(grad, a, rows=ctx.cols, cols=ctx.rows, n_rows=b.shape[0])
        return grad_a, grad_b


def _check(op: str, rows: Tensor, cols: Tensor, n_rows: int, n_cols: int) -> None:
    if rows.dtype.name != "int64" or cols.dtype.name != "int64" or rows.ndim != 1 or rows.shape != cols.shape:
        raise ValueError(f"{op}: indices must be two int64 vectors of one length, got {rows.dtype} {tuple(rows.shape)} "
                         f"and {cols.dtype} {tuple(cols.shape)}")
    if rows.numel():
        for name, index, bound in (("row", rows, n_rows), ("column", cols, n_cols)):
            low, high = int(index.min()), int(index.max())
            if low < 0 or high >= bound:
                raise IndexError(f"{op}: a {name} index is {low if low < 0 else high}, outside [0, {bound})")


def coo_matmul(rows: Tensor, cols: Tensor, values: Tensor, shape: tuple[int, int], dense: Tensor) -> Tensor:
    """COO(rows, cols, values) of `shape` @ `dense` (k, n) -> (m, n), checked before the kernel runs.

    >>> coo_matmul(numdiff.tensor([0, 1]), numdiff.tensor([1, 0]), numdiff.ones(2), (2, 2), numdiff.eye(2))
    tensor([[0., 1.],
            [1., 0.]])
    """
    if not isinstance(dense, Tensor) or dense.ndim not in (1, 2):
        raise ValueError(f"sparse matmul: the dense operand must be a 1-D or 2-D tensor, got {type(dense).__name__} "
                         f"of shape {tuple(getattr(dense, 'shape', ()))}")
    vector = dense.ndim == 1
    matrix = dense.reshape(-1, 1) if vector else dense
    if matrix.shape[0] != shape[1]:
        raise ValueError(f"sparse matmul: size mismatch, sparse {tuple(shape)} @ dense {tuple(dense.shape)}")
    if not (values.is_floating_point() and values.dtype is dense.dtype):
        raise TypeError(f"sparse matmul: expected the sparse values and the dense operand to have one floating "
                        f"dtype, got {values.dtype} and {dense.dtype}; convert one with .to(dtype)")
    if values.device != dense.device:
        raise RuntimeError(f"sparse matmul: operands on different devices, {values.device} and {dense.device}")
    _check("sparse matmul", rows, cols, shape[0], shape[1])
    out = CooMatmul.apply(values, matrix, rows=rows._data, cols=cols._data, n_rows=int(shape[0]))
    return out.reshape(-1) if vector else out


def coo_sampled_dot(rows: Tensor, cols: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``(a @ b.T)[rows[e], cols[e]]`` for every entry e, without forming a @ b.T.

    >>> coo_sampled_dot(numdiff.tensor([0]), numdiff.tensor([1]), numdiff.eye(2), numdiff.eye(2))
    tensor([0.])
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or a.dtype is not b.dtype or not a.is_floating_point():
        raise ValueError(f"sampled dot: expected two 2-D float tensors with the same columns and dtype, got "
                         f"{a.dtype} {tuple(a.shape)} and {b.dtype} {tuple(b.shape)}")
    _check("sampled dot", rows, cols, a.shape[0], b.shape[0])
    return CooSampledDot.apply(a, b, rows=rows._data, cols=cols._data)
