"""Sparse products as ops: ``coo_mm`` (COO @ dense) and ``coo_sampled_dot`` (a @ b.T read at the
COO entries), each other's gradients, and their CSR forms ``csr_mm`` and ``csr_sampled_dot``
(numdiff.kernels.sparse explains the kernels).

For ``out = A @ D`` with A = COO(rows, cols, values) of shape (m, k) and D dense (k, n):

    d values[e] = sum_j grad[rows[e], j] * D[cols[e], j]   = coo_sampled_dot(grad, D)
    d D         = A.T @ grad                               = coo_mm with rows and cols swapped

and for ``s = coo_sampled_dot(a, b)`` (s[e] = a[rows[e]] . b[cols[e]]):

    d a = COO(rows, cols, grad_s) @ b,   d b = COO(cols, rows, grad_s) @ a

so second derivatives come from the same two ops. The CSR pair has the same four formulas; A.T,
which a CSR kernel cannot read by columns, is the transposed structure (:func:`csr_transpose`,
worked out once per backward on the host) with the values permuted by a differentiable gather.
Indices are attrs (never differentiated); the public entry points (numdiff.sparse) check them
before any kernel runs.
"""

from __future__ import annotations

import numpy as np

from numdiff.autograd.function import Function
from numdiff.backend import backend_for, like_host, to_host
from numdiff.ops.registry import register
from numdiff.tensor import Tensor

__all__ = ["CooMatmul", "CooSampledDot", "CsrMatmul", "CsrSampledDot", "check_csr", "coo_matmul", "coo_sampled_dot",
           "csr_matmul", "csr_sampled_dot", "csr_transpose"]


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


def csr_transpose(crow: np.ndarray, cols: np.ndarray, n_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CSR structure of A.T from A's: ``(crow_t, cols_t, order)``, where A.T's entry e' is A's
    entry ``order[e']`` (host arrays; a stable sort by column keeps rows ascending within one).

    >>> csr_transpose(np.array([0, 1, 3]), np.array([1, 0, 1]), 2)
    (array([0, 1, 3]), array([1, 0, 1]), array([1, 0, 2]))
    """
    rows = np.repeat(np.arange(len(crow) - 1, dtype=np.int64), np.diff(crow))
    order = np.argsort(cols, kind="stable").astype(np.int64)
    crow_t = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=n_cols))]).astype(np.int64)
    return crow_t, rows[order], order


def _transposed(values: Tensor, crow: object, cols: object, n_cols: int) -> tuple[Tensor, object, object]:
    """A.T as (values, crow, cols) on A's device; the values are gathered, so gradients flow."""
    crow_t, cols_t, order = csr_transpose(to_host(crow), to_host(cols), n_cols)
    index = Tensor._wrap(like_host(order, crow), None, None)
    return values[index], like_host(crow_t, crow), like_host(cols_t, cols)


@register("csr_mm", compile="call", launchers=("csr_spmm",))
class CsrMatmul(Function):
    """CSR(crow, cols, values) @ dense (attrs: crow, cols); A has crow.shape[0] - 1 rows."""

    @staticmethod
    def forward(ctx, values, dense, *, crow, cols):
        out = np.empty((crow.shape[0] - 1, dense.shape[1]), dtype=dense.dtype, like=dense)
        backend_for(dense).csr_spmm(crow, cols, values, dense, out)
        ctx.save_for_backward(values, dense)
        ctx.crow, ctx.cols = crow, cols
        return out

    @staticmethod
    def backward(ctx, grad):
        values, dense = ctx.saved_tensors
        grad_values = grad_dense = None
        if ctx.needs_input_grad[0]:
            grad_values = CsrSampledDot.apply(grad, dense, crow=ctx.crow, cols=ctx.cols)
        if ctx.needs_input_grad[1]:
            values_t, crow_t, cols_t = _transposed(values, ctx.crow, ctx.cols, dense.shape[0])
            grad_dense = CsrMatmul.apply(values_t, grad, crow=crow_t, cols=cols_t)
        return grad_values, grad_dense


@register("csr_sampled_dot", compile="call", launchers=("csr_sddmm",))
class CsrSampledDot(Function):
    """s[e] = a[row of e] . b[cols[e]] for the CSR entries (attrs: crow, cols)."""

    @staticmethod
    def forward(ctx, a, b, *, crow, cols):
        out = np.empty((cols.shape[0],), dtype=a.dtype, like=a)
        backend_for(a).csr_sddmm(crow, cols, a, b, out)
        ctx.save_for_backward(a, b)
        ctx.crow, ctx.cols = crow, cols
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = CsrMatmul.apply(grad, b, crow=ctx.crow, cols=ctx.cols)
        if ctx.needs_input_grad[1]:
            grad_t, crow_t, cols_t = _transposed(grad, ctx.crow, ctx.cols, b.shape[0])
            grad_b = CsrMatmul.apply(grad_t, a, crow=crow_t, cols=cols_t)
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


def check_csr(op: str, crow: Tensor, cols: Tensor, n_rows: int, n_cols: int) -> None:
    """Refuse a CSR structure a kernel would read out of bounds, naming `op` and the values."""
    for name, index in (("crow_indices", crow), ("col_indices", cols)):
        if not isinstance(index, Tensor) or index.dtype.name not in ("int64", "int32") or index.ndim != 1:
            raise ValueError(f"{op}: {name} must be a 1-D int64 (or int32) tensor, got "
                             f"{getattr(index, 'dtype', type(index).__name__)} of shape {tuple(getattr(index, 'shape', ()))}")
    if crow.shape[0] != n_rows + 1:
        raise ValueError(f"{op}: crow_indices must have size[0] + 1 = {n_rows + 1} entries, got {crow.shape[0]}")
    offsets, columns = to_host(crow._data), to_host(cols._data)
    if offsets[0] != 0 or offsets[-1] != len(columns):
        raise ValueError(f"{op}: crow_indices must start at 0 and end at nnz = {len(columns)}, got {offsets[0]} "
                         f"and {offsets[-1]}")
    steps = np.diff(offsets)
    if steps.size and steps.min() < 0:
        row = int(np.argmax(steps < 0))
        raise ValueError(f"{op}: crow_indices must not decrease, but goes from {offsets[row]} to {offsets[row + 1]} "
                         f"at row {row}")
    if columns.size and (columns.min() < 0 or columns.max() >= n_cols):
        bad = columns.min() if columns.min() < 0 else columns.max()
        raise IndexError(f"{op}: a column index is {bad}, outside [0, {n_cols})")


def csr_matmul(crow: Tensor, cols: Tensor, values: Tensor, shape: tuple[int, int], dense: Tensor) -> Tensor:
    """CSR(crow, cols, values) of `shape` @ `dense` (k, n) -> (m, n), checked before the kernel runs.

    >>> csr_matmul(numdiff.tensor([0, 1, 2]), numdiff.tensor([1, 0]), numdiff.ones(2), (2, 2), numdiff.eye(2))
    tensor([[0., 1.],
            [1., 0.]])
    """
    if not isinstance(dense, Tensor) or dense.ndim not in (1, 2):
        raise ValueError(f"sparse CSR matmul: the dense operand must be a 1-D or 2-D tensor, got "
                         f"{type(dense).__name__} of shape {tuple(getattr(dense, 'shape', ()))}")
    vector = dense.ndim == 1
    matrix = dense.reshape(-1, 1) if vector else dense
    if matrix.shape[0] != shape[1]:
        raise ValueError(f"sparse CSR matmul: size mismatch, sparse {tuple(shape)} @ dense {tuple(dense.shape)}")
    if not (values.is_floating_point() and values.dtype is dense.dtype):
        raise TypeError(f"sparse CSR matmul: expected the sparse values and the dense operand to have one floating "
                        f"dtype, got {values.dtype} and {dense.dtype}; convert one with .to(dtype)")
    if values.device != dense.device:
        raise RuntimeError(f"sparse CSR matmul: operands on different devices, {values.device} and {dense.device}")
    check_csr("sparse CSR matmul", crow, cols, shape[0], shape[1])
    out = CsrMatmul.apply(values, matrix, crow=_int64(crow), cols=_int64(cols))
    return out.reshape(-1) if vector else out


def csr_sampled_dot(crow: Tensor, cols: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``(a @ b.T)`` at the CSR entries only (one value per entry, in CSR order).

    >>> csr_sampled_dot(numdiff.tensor([0, 1, 1]), numdiff.tensor([1]), numdiff.eye(2), numdiff.eye(2))
    tensor([0.])
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or a.dtype is not b.dtype or not a.is_floating_point():
        raise ValueError(f"sampled dot: expected two 2-D float tensors with the same columns and dtype, got "
                         f"{a.dtype} {tuple(a.shape)} and {b.dtype} {tuple(b.shape)}")
    check_csr("sampled dot", crow, cols, a.shape[0], b.shape[0])
    return CsrSampledDot.apply(a, b, crow=_int64(crow), cols=_int64(cols))


def _int64(index: Tensor) -> object:
    return index._data if index.dtype.name == "int64" else index._data.astype(np.int64)
