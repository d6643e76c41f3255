"""Writes at index positions, and reads by mask or flat index: scatter, index_add, masked_select, take.

scatter is a primitive (the gradient of its src is a gather, and of its input the same scatter of
zeros); so is scaled_row_scatter (rows gathered, scaled and added at other rows: its gradient for
the rows is itself with the two indices swapped); index_add, masked_select and take are composed
of indexing ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._dtype import int64
from numdiff._vmap_level import per_example
from numdiff.autograd.function import Function
from numdiff.backend import backend_for, holds_values, to_host
from numdiff.ops._util import (
    broadcast_shape,
    check_same_device,
    ensure_tensor,
    normalize_dim,
    scalar_like,
    vmapped,
)
from numdiff.ops.indexing import (
    IndexAddIntoZeros,
    _check_index_tensor,
    _lift,
    _scatter_key,
    _zero_dim_pair,
    gather,
    scatter_add,
)
from numdiff.ops.registry import register
from numdiff.ops.scatter_reduce import scatter_reduce
from numdiff.tensor import Tensor


@register("scatter", compile="call")
class Scatter(Function):
    """A copy of x with src written at positions index along dim (src may be larger than index:
    its leading corner is used). Where index repeats a position, one of the writes is kept."""

    @staticmethod
    def forward(ctx, x, index, src, *, dim):
        ctx.dim = dim
        ctx.src_shape = src.shape
        ctx.save_for_backward(index)
        out = x.copy()
        out[_scatter_key(index, dim)] = src[tuple(slice(0, n) for n in index.shape)]
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        grad_x = grad_src = None
        if ctx.needs_input_grad[0]:
            zeros = Tensor._wrap(np.zeros(tuple(index.shape), dtype=grad._data.dtype, like=grad._data), None, None)
            grad_x = Scatter.apply(grad, index, zeros, dim=ctx.dim)
        if ctx.needs_input_grad[2]:
            grad_src = gather(grad, ctx.dim, index)
            if tuple(grad_src.shape) != ctx.src_shape:
                corner = tuple(slice(0, n) for n in index.shape)
                grad_src = IndexAddIntoZeros.apply(grad_src, key=corner, shape=ctx.src_shape)
        return grad_x, None, grad_src


@register("scaled_row_scatter", compile="call", launchers=("scaled_row_scatter",))
class ScaledRowScatter(Function):
    """zeros(size, width) with scale[t] * src[take[t]] added at row into[t] for every t: a gather,
    a scale and a scatter-add in one kernel (embedding_bag's sum and mean). Its gradient for src is
    the same op with take and into swapped; for scale, the dot of the two rows each entry joins."""

    @staticmethod
    def forward(ctx, src, scale, take, into, *, size):
        # src only for scale's gradient: a weight updated in place after the forward stays usable.
        if ctx.needs_input_grad[1:2] == (True,):
            ctx.save_for_backward(src, scale, take, into)
        else:
            ctx.save_for_backward(scale, take, into)
        ctx.src_rows = src.shape[0]
        out = np.zeros((size, src.shape[1]), dtype=src.dtype, like=src)
        backend_for(out).scaled_row_scatter(out, src, scale, take, into)
        return out

    @staticmethod
    def backward(ctx, grad):
        *src, scale, take, into = ctx.saved_tensors
        grad_src = grad_scale = None
        if ctx.needs_input_grad[0]:
            grad_src = ScaledRowScatter.apply(grad, scale, into, take, size=ctx.src_rows)
        if ctx.needs_input_grad[1]:
            width = grad.shape[1]
            rows_of_grad = gather(grad, 0, into.unsqueeze(1).expand(-1, width))
            rows_of_src = gather(src[0], 0, take.unsqueeze(1).expand(-1, width))
            grad_scale = (rows_of_grad * rows_of_src).sum(1)
        return grad_src, grad_scale, None, None


def scaled_row_scatter(src: Tensor, scale: Tensor, take: Tensor, into: Tensor, size: int) -> Tensor:
    """A (size, width) tensor whose row r is the sum of scale[t] * src[take[t]] over the t with
    into[t] == r: the rows of `src` (n, width) at `take`, scaled and added at `into` (all three 1-D
    of one length). Differentiable in src and scale.

    >>> ones, eye = numdiff.tensor([1.0, 2.0]), numdiff.eye(2)
    >>> scaled_row_scatter(eye, ones, numdiff.tensor([0, 1]), numdiff.tensor([1, 1]), 2)
    tensor([[0., 0.],
            [1., 2.]])
    """
    op = "scaled_row_scatter"
    src, scale = ensure_tensor(op, src, "src"), ensure_tensor(op, scale, "scale")
    if src.ndim != 2 or src._data.dtype.kind not in "fV":
        raise ValueError(f"{op}: src must be a 2-D floating tensor, got shape {tuple(src.shape)} dtype {src.dtype}")
    if scale.dtype is not src.dtype:
        raise TypeError(f"{op}: scale is {scale.dtype} but src is {src.dtype}; they must have the same dtype")
    for name, ids, rows in (("take", take, src.shape[0]), ("into", into, size)):
        if not isinstance(ids, Tensor) or ids.ndim != 1 or ids._data.dtype.kind not in "iu":
            raise TypeError(f"{op}: {name} must be a 1-D integer tensor, got {getattr(ids, 'dtype', type(ids).__name__)}")
        if tuple(ids.shape) != tuple(scale.shape):
            raise ValueError(f"{op}: take, into and scale must have one length, got {name} {tuple(ids.shape)} and scale {tuple(scale.shape)}")
        values = ids._data
        if holds_values(values) and values.size:
            low, high = int(values.min()), int(values.max())
            if low < 0 or high >= rows:
                raise IndexError(f"{op}: {name} values must be in [0, {rows}), got values in [{low}, {high}]")
    check_same_device(op, src, scale, take, into)
    take = take if take._data.dtype == np.int64 else take.to(dtype=int64)
    into = into if into._data.dtype == np.int64 else into.to(dtype=int64)
    return ScaledRowScatter.apply(src, scale, take, into, size=size)


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None, reduce: str | None = None) -> Tensor:
    """A copy of `input` with out[index[i][j]][j] = src[i][j] (for dim=0), PyTorch's scatter; `src`
    may be a tensor or a number (also given as `value`). reduce="add" adds instead (scatter_add).

    >>> numdiff.scatter(numdiff.zeros(3), 0, numdiff.tensor([2, 0]), numdiff.tensor([1.0, 2.0]))
    tensor([2., 0., 1.])
    """
    input = ensure_tensor("scatter", input)
    if src is None and value is None:
        raise TypeError("scatter: expected a src tensor or a value")
    if src is not None and value is not None:
        raise TypeError("scatter: give either src or value, not both")
    src = value if src is None else src
    dim = normalize_dim("scatter", dim, input.ndim)
    if _zero_dim_pair(input, index):
        return scatter(_lift(input), 0, _lift(index), _lift(src), reduce=reduce).reshape(tuple(input.shape))
    _check_index_tensor("scatter", input, dim, index)
    for d, (a, b) in enumerate(zip(index.shape, input.shape)):
        if d != dim and a > b:
            raise ValueError(f"scatter: index shape {tuple(index.shape)} exceeds input shape {tuple(input.shape)} in dimension {d}")
    if isinstance(src, Tensor):
        if src.dtype is not input.dtype:
            raise TypeError(f"scatter: src is {src.dtype} but input is {input.dtype}; they must have the same dtype")
        if src.ndim != input.ndim or any(a > b for a, b in zip(index.shape, src.shape)):
            raise ValueError(f"scatter: index shape {tuple(index.shape)} exceeds src shape {tuple(src.shape)}")
        check_same_device("scatter", input, index, src)
    else:
        src = scalar_like(src, input, "scatter").expand(tuple(index.shape))
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise ValueError(f"scatter: reduce must be 'add' or 'multiply' (see scatter_reduce for more), got {reduce!r}")
        if reduce == "add":
            return scatter_add(input, dim, index, src)
        # PyTorch's multiply keeps input's own value in each product and records no derivative;
        # scatter_reduce's "prod" computes the same numbers and has one.
        return scatter_reduce(input, dim, index, src, "prod", include_self=True)
    return Scatter.apply(input, index, src, dim=dim)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of `input` with alpha * source[..., i, ...] added at input[..., index[i], ...] along
    `dim` (repeated indices accumulate).

    >>> numdiff.index_add(numdiff.zeros(3), 0, numdiff.tensor([0, 0, 2]), numdiff.tensor([1.0, 2.0, 3.0]))
    tensor([3., 0., 3.])
    """
    input = ensure_tensor("index_add", input)
    source = ensure_tensor("index_add", source, "source")
    dim = normalize_dim("index_add", dim, input.ndim)
    if not isinstance(index, Tensor) or index.ndim > 1 or index._data.dtype.kind not in "iu":
        raise TypeError(f"index_add: index must be a 0-d or 1-D integer tensor, got {getattr(index, 'dtype', type(index).__name__)}")
    if source.dtype is not input.dtype:
        raise TypeError(f"index_add: source is {source.dtype} but input is {input.dtype}; they must have the same dtype")
    if vmapped(index):
        # The positions differ per vmap example; a batched index's own array is the first example's.

        return per_example("index_add", lambda i, x, s: index_add(x, dim, i, s, alpha=alpha), index, input, source)
    positions = to_host(index._data) if holds_values(index._data) else index._data  # meta: shapes only
    positions = positions.reshape(-1).astype(np.int64, copy=False)
    size = input.shape[dim] if input.ndim else 1
    expected = tuple(len(positions) if d == dim else n for d, n in enumerate(input.shape))
    if (tuple(source.shape) if source.ndim else (1,)) != (expected if input.ndim else (len(positions),)):
        raise ValueError(
            f"index_add: source of shape {tuple(source.shape)} must be the input's shape {tuple(input.shape)} "
            f"with {len(positions)} (the index's length) in dimension {dim}"
        )
    if holds_values(positions) and positions.size and (positions.min() < 0 or positions.max() >= size):
        raise IndexError(
            f"index_add: index values must be in [0, {size}) for dimension {dim} of input shape "
            f"{tuple(input.shape)}; got values in [{positions.min()}, {positions.max()}]"
        )
    check_same_device("index_add", input, source)
    if input._data.dtype.kind in "iu" and isinstance(alpha, float):
        alpha = int(alpha)  # PyTorch casts alpha to the integer dtype (2.5 -> 2), keeping the result's dtype
    if input.ndim == 0:
        return input + (source.sum() if alpha == 1 else source.sum() * alpha)
    scaled = source if alpha == 1 else source * alpha
    added = IndexAddIntoZeros.apply(scaled, key=(slice(None),) * dim + (positions,), shape=tuple(input.shape))
    return input + added


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of `input` where the bool `mask` is True, as a 1-D tensor (the two broadcast).

    >>> numdiff.masked_select(numdiff.tensor([1, 2, 3]), numdiff.tensor([True, False, True]))
    tensor([1, 3])
    """
    input = ensure_tensor("masked_select", input)
    if not isinstance(mask, Tensor) or mask._data.dtype.kind != "b":
        raise TypeError(f"masked_select: mask must be a bool tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    check_same_device("masked_select", input, mask)
    shape = broadcast_shape("masked_select", tuple(input.shape), tuple(mask.shape))
    return input.expand(shape)[mask.expand(shape)]


def take(input: Tensor, index: Tensor) -> Tensor:
    """input viewed as 1-D, read at `index` (negative values count from the end); the result has index's shape.

    >>> numdiff.take(numdiff.tensor([[1, 2], [3, 4]]), numdiff.tensor([0, -1]))
    tensor([1, 4])
    """
    input = ensure_tensor("take", input)
    if not isinstance(index, Tensor) or index._data.dtype.kind not in "iu":
        raise TypeError(f"take: index must be an integer tensor, got {getattr(index, 'dtype', type(index).__name__)}")
    data = to_host(index._data)
    n = input.numel()
    if data.size and (data.min() < -n or data.max() >= n):
        raise IndexError(
            f"take: index values must be in [{-n}, {n}) for an input of {n} elements (shape "
            f"{tuple(input.shape)}); got values in [{data.min()}, {data.max()}]"
        )
    return input.reshape(-1)[index]
