"""The diagonal family: diagonal (a primitive: a strided view on the CPU), diag, diag_embed and
trace, composed of it and of the index-add primitive."""

from __future__ import annotations

import numpy as np

from numdiff.autograd.function import Function
from numdiff.backend import is_host
from numdiff.ops._util import ensure_tensor, normalize_dim
from numdiff.ops.indexing import IndexAddIntoZeros
from numdiff.ops.rearrange import movedim
from numdiff.ops.registry import register
from numdiff.ops.shape import _as_view
from numdiff.tensor import Tensor


@register("diagonal", compile="call", view=True)
class Diagonal(Function):
    """The diagonal `offset` of the (dim1, dim2) planes, as a last dim: a writable strided view
    (NumPy's own np.diagonal view is read-only). Gradient: the diagonal written into zeros (index_add_into_zeros)
    laid out with dim1 and dim2 last, where the two index arrays sit side by side and give the
    gradient's own layout (which also lets vmap batch it), then permuted back."""

    @staticmethod
    def forward(ctx, x, *, offset, dim1, dim2):
        keep = [d for d in range(x.ndim) if d not in (dim1, dim2)]
        ctx.order = tuple(keep) + (dim1, dim2)
        ctx.moved_shape = tuple(x.shape[d] for d in ctx.order)
        ctx.key = _diagonal_key(ctx.moved_shape, offset)
        if not is_host(x):
            return np.diagonal(x, offset, dim1, dim2)  # numdiff.cuda's is a writable view
        corner = [slice(None)] * x.ndim
        corner[dim1] = slice(max(-offset, 0), None)
        corner[dim2] = slice(max(offset, 0), None)
        shape = tuple(x.shape[d] for d in keep) + (len(ctx.key[-1]),)
        strides = tuple(x.strides[d] for d in keep) + (x.strides[dim1] + x.strides[dim2],)
        return np.lib.stride_tricks.as_strided(x[tuple(corner)], shape, strides)

    @staticmethod
    def backward(ctx, grad):
        moved = IndexAddIntoZeros.apply(grad, key=ctx.key, shape=ctx.moved_shape)
        return (moved.permute(tuple(int(i) for i in np.argsort(ctx.order))),)


def _diagonal_key(shape: tuple, offset: int) -> tuple:
    """The index of diagonal `offset` of the last two dims of `shape`: two arrays, side by side."""
    rows, cols = shape[-2:]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    positions = np.arange(length, dtype=np.int64)
    return (slice(None),) * (len(shape) - 2) + (positions + max(-offset, 0), positions + max(offset, 0))


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, `offset` above (> 0) or below (< 0) the main
    one, as the last dim; a view, so in-place edits of it reach `input`.

    >>> numdiff.diagonal(numdiff.tensor([[1, 2], [3, 4]]))
    tensor([1, 4])
    """
    return _diagonal("diagonal", input, offset, dim1, dim2)


def _diagonal(op: str, input: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    input = ensure_tensor(op, input)
    if input.ndim < 2:
        raise ValueError(f"{op}: expects a tensor with at least 2 dimensions, got shape {tuple(input.shape)}")
    d1 = normalize_dim(op, dim1, input.ndim)
    d2 = normalize_dim(op, dim2, input.ndim)
    if d1 == d2:
        raise ValueError(f"{op}: dim1 and dim2 name the same dimension {d1} (dim1={dim1}, dim2={dim2})")
    attrs = {"offset": int(offset), "dim1": d1, "dim2": d2}
    return _as_view(Diagonal.apply(input, **attrs), input, Diagonal, attrs)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D input: a square matrix with `input` on diagonal `diagonal`; 2-D input: that diagonal.

    >>> numdiff.diag(numdiff.tensor([1, 2]))
    tensor([[1, 0],
            [0, 2]])
    """
    input = ensure_tensor("diag", input)
    offset = int(diagonal)
    if input.ndim == 2:
        return _diagonal("diag", input, offset, 0, 1)
    if input.ndim != 1:
        raise ValueError(f"diag: expects a 1-D or 2-D tensor, got shape {tuple(input.shape)}")
    n = input.shape[0] + abs(offset)
    return IndexAddIntoZeros.apply(input, key=_diagonal_key((n, n), offset), shape=(n, n))


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Tensors whose (dim1, dim2) planes have the last dim of `input` on diagonal `offset` and
    zeros elsewhere: the transpose of `diagonal` (diagonal(diag_embed(x, o, a, b), o, a, b) == x).

    >>> numdiff.diag_embed(numdiff.tensor([[1, 2]])).shape
    numdiff.Size([1, 2, 2])
    """
    input = ensure_tensor("diag_embed", input)
    if input.ndim == 0:
        raise ValueError("diag_embed: expects a tensor with at least 1 dimension, got a 0-d tensor")
    d1 = normalize_dim("diag_embed", dim1, input.ndim + 1)
    d2 = normalize_dim("diag_embed", dim2, input.ndim + 1)
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 name the same dimension {d1} (dim1={dim1}, dim2={dim2})")
    n = input.shape[-1] + abs(int(offset))
    shape = tuple(input.shape[:-1]) + (n, n)
    planes = IndexAddIntoZeros.apply(input, key=_diagonal_key(shape, int(offset)), shape=shape)
    return movedim(planes, (-2, -1), (d1, d2))


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a 2-D tensor (integer inputs give int64).

    >>> numdiff.trace(numdiff.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor(5.)
    """
    input = ensure_tensor("trace", input)
    if input.ndim != 2:
        raise ValueError(f"trace: expects a 2-D tensor, got shape {tuple(input.shape)}")
    return _diagonal("trace", input, 0, 0, 1).sum()
