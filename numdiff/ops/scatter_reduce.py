"""scatter_reduce: src's elements combined into input at index positions along dim by a sum,
mean, maximum, minimum or product, PyTorch's reductions, optionally counting input's own value;
and index_reduce, the same with one index per slice of source along dim (PyTorch's index_add form),
whose product does have a gradient (each slot's factors are gathered along a new dim first).

It is composed of scatter_add, gather and where, so it needs no backward of its own: the sum and
mean are linear; the maximum and minimum pass the gradient to every element equal to the result,
split evenly among ties, as PyTorch does. The product, when a gradient is wanted, gathers each
position's factors into a row (its own value first, then src's in index order, padded with ones)
and multiplies the rows out with prod, whose gradient is the product of the other factors, zeros
included, as PyTorch's (`_scatter_prod`).
"""

from __future__ import annotations

import numpy as np

from numdiff import _dtype, creation
from numdiff._vmap_level import per_example
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import like_host, to_host
from numdiff.ops import arithmetic, indexing, joining, reduction, selection, shape
from numdiff.ops._util import ensure_tensor, normalize_dim, vmapped
from numdiff.ops.indexing import _check_index_tensor, _lift, _scatter_key, _zero_dim_pair
from numdiff.tensor import Tensor

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True) -> Tensor:
    """A copy of `input` where each position that `index` names along `dim` holds the `reduce`
    ("sum", "prod", "mean", "amax", "amin") of the src elements sent there, and of its own value
    when `include_self`. Positions no index names keep input's value.

    >>> numdiff.scatter_reduce(numdiff.zeros(3), 0, numdiff.tensor([0, 0, 2]), numdiff.tensor([1.0, 5.0, 2.0]), "amax")
    tensor([5., 0., 2.])
    """
    input, src = ensure_tensor("scatter_reduce", input), ensure_tensor("scatter_reduce", src, "src")
    if vmapped(input, index, src):  # the host reads below see one example of a batched tensor
        return per_example(
            "scatter_reduce", lambda x, i, s: scatter_reduce(x, dim, i, s, reduce, include_self=include_self), input, index, src
        )
    if reduce not in REDUCTIONS:
        raise ValueError(f"scatter_reduce: reduce must be one of {REDUCTIONS}, got {reduce!r}")
    if src.dtype is not input.dtype:
        raise TypeError(f"scatter_reduce: src is {src.dtype} but input is {input.dtype}; they must have the same dtype")
    dim = normalize_dim("scatter_reduce", dim, max(input.ndim, 1))
    if _zero_dim_pair(input, index):
        lifted = scatter_reduce(_lift(input), 0, _lift(index), _lift(src), reduce, include_self=include_self)
        return lifted.reshape(tuple(input.shape))
    _check_index_tensor("scatter_reduce", input, dim, index)
    if src.ndim != input.ndim or any(a > b for a, b in zip(index.shape, src.shape)):
        raise ValueError(f"scatter_reduce: index shape {tuple(index.shape)} exceeds src shape {tuple(src.shape)}")
    for d, (a, b) in enumerate(zip(index.shape, input.shape)):
        if d != dim and a > b:
            raise ValueError(f"scatter_reduce: index shape {tuple(index.shape)} exceeds input shape {tuple(input.shape)} in dimension {d}")
    if tuple(src.shape) != tuple(index.shape):
        src = indexing.getitem(src, tuple(slice(0, n) for n in index.shape))
    if input.dtype is _dtype.bfloat16:  # its storage holds bit patterns: reduce in float32
        return scatter_reduce(input.float(), dim, index, src.float(), reduce, include_self=include_self).to(input.dtype)
    if reduce == "prod" and is_grad_enabled() and (input.requires_grad or src.requires_grad):
        return _scatter_prod(input, dim, to_host(index._data), src, include_self)
    # Which positions count their own value, how many elements each group holds and which of
    # them tie with the result are constants of the gradient (piecewise constant in the values):
    # they are computed on the host, and only the ops a gradient flows through are recorded.
    # Composed of tensor ops throughout, the amax of 40 edges into 10 nodes ran 20 ops and took
    # 6.5x PyTorch's time forward and backward.
    key = _scatter_key(to_host(index._data), dim)
    own = np.ones(tuple(input.shape), dtype=to_host(input._data).dtype)
    if not include_self:
        own[key] = 0
    if reduce in ("sum", "mean"):
        total = indexing.scatter_add(input if include_self else arithmetic.mul(input, _constant(own, input)), dim, index, src)
        if reduce == "sum":
            return total
        count = own.copy()
        np.add.at(count, key, 1)
        mean = arithmetic.floor_divide if not input.is_floating_point() else arithmetic.div
        return selection.where(_constant(count == 0, input), input, mean(total, _constant(np.where(count == 0, 1, count), input)))
    result = _host_reduce(input, dim, index, src, reduce, include_self)
    if reduce == "prod" or not (is_grad_enabled() and (input.requires_grad or src.requires_grad)):
        return result
    # Each element equal to the result shares its gradient with the other ties.
    values, sent, reduced = to_host(input._data), to_host(src._data), to_host(result._data)
    own_ties = (values == reduced) & (own != 0)
    src_ties = sent == np.take_along_axis(reduced, to_host(index._data), axis=dim)
    count = own_ties.astype(values.dtype)
    np.add.at(count, key, src_ties.astype(values.dtype))
    safe = np.where(count == 0, 1, count)
    share = indexing.scatter_add(
        arithmetic.div(selection.where(_constant(own_ties, input), input, 0), _constant(safe, input)), dim, index,
        arithmetic.div(selection.where(_constant(src_ties, src), src, 0), _constant(np.take_along_axis(safe, to_host(index._data), axis=dim), src)),
    )  # fmt: skip
    return selection.where(_constant(count == 0, input), result, share)  # NaNs: no element equals the result


def _constant(host: np.ndarray, like: Tensor) -> Tensor:
    """A host array as a tensor on `like`'s device, outside any graph."""
    return Tensor._wrap(like_host(np.ascontiguousarray(host), like._data), None, None)


INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def index_reduce(
    input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """A copy of `input` where slice ``index[i]`` along `dim` holds the `reduce` ("prod", "mean",
    "amax", "amin") of the source slices ``i`` sent there, and of its own value when `include_self`.
    Gradients as scatter_reduce's and PyTorch's (an index_reduce is a scatter_reduce whose index is
    `index` broadcast along the other dims of source): the mean's, and the maximum's and minimum's
    split evenly among ties; the product's is the product of the other factors (zeros included),
    from each position's factors gathered and multiplied out (`_scatter_prod`).

    >>> x = numdiff.ones(3, 2)
    >>> x.index_reduce(0, numdiff.tensor([0, 0, 2]), numdiff.tensor([[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]), "prod")
    tensor([[ 8., 15.],
            [ 1.,  1.],
            [ 6.,  7.]])
    """
    input, source = ensure_tensor("index_reduce", input), ensure_tensor("index_reduce", source, "source")
    index = ensure_tensor("index_reduce", index, "index")
    if vmapped(input, index, source):  # the host reads below see one example of a batched tensor
        return per_example(
            "index_reduce", lambda x, i, s: index_reduce(x, dim, i, s, reduce, include_self=include_self), input, index, source
        )
    if reduce not in INDEX_REDUCTIONS:
        raise ValueError(f"index_reduce: reduce must be one of {INDEX_REDUCTIONS}, got {reduce!r}")
    if index.dtype not in (_dtype.int64, _dtype.int32):
        raise TypeError(f"index_reduce: index must be an int64 or int32 tensor, got {index.dtype}")
    if index.ndim > 1:
        raise ValueError(f"index_reduce: index must be a vector (at most 1-D), got shape {tuple(index.shape)}")
    if source.dtype is not input.dtype:
        raise TypeError(f"index_reduce: source is {source.dtype} but input is {input.dtype}; they must have the same dtype")
    if input.ndim == 0:
        raise ValueError("index_reduce: input must have at least one dimension, got a 0-d tensor")
    dim = normalize_dim("index_reduce", dim, input.ndim)
    n = int(index.numel())
    expected = list(input.shape)
    expected[dim] = n
    if tuple(source.shape) != tuple(expected):
        raise ValueError(
            f"index_reduce: source shape {tuple(source.shape)} must be input's shape {tuple(input.shape)} "
            f"with dim {dim} of size {n} (index's length)"
        )
    values = to_host(index._data).reshape(-1)
    bad = (values < 0) | (values >= input.shape[dim])
    if bad.any():
        raise IndexError(
            f"index_reduce: index {int(values[bad][0])} is out of range for dim {dim} of size {input.shape[dim]} "
            f"(input shape {tuple(input.shape)})"
        )
    # index along dim, broadcast over the other dims: a scatter_reduce index of source's shape.
    along = [1] * input.ndim
    along[dim] = n
    full = index.reshape(tuple(along)).expand(tuple(source.shape))
    return scatter_reduce(input, dim, full, source, reduce, include_self=include_self)


def _scatter_prod(input: Tensor, dim: int, index: np.ndarray, src: Tensor, include_self: bool) -> Tensor:
    """scatter_reduce's product as differentiable ops. Each position an index names gets a row of
    its factors: its own value first when `include_self`, then the src elements sent there in
    index order (the order the host reduction multiplies them in), padded with ones to the
    longest row. prod multiplies the rows out; its gradient is the product of the other factors,
    zeros included, as PyTorch's. Positions no index names keep input's value (gradient 1).
    `src` has index's shape."""
    size, count = int(input.numel()), int(index.size)
    if count == 0:
        return input.clone()
    targets = np.ravel_multi_index(_scatter_key(index, dim), tuple(input.shape)).reshape(-1)
    order = np.argsort(targets, kind="stable")  # each position's src elements in index order
    touched, starts, sizes = np.unique(targets[order], return_index=True, return_counts=True)
    own = 1 if include_self else 0
    padding = count + size  # the one appended after src's and input's elements
    picks = np.full((len(touched), own + int(sizes.max())), padding, dtype=np.int64)
    if include_self:
        picks[:, 0] = count + touched
    column = np.arange(count) - np.repeat(starts, sizes)  # each element's place in its row
    picks[np.repeat(np.arange(len(touched)), sizes), own + column] = order
    flat_input = shape.reshape(input, (size,))
    one = creation.ones((1,), dtype=input.dtype, device=input.device)
    factors = joining.cat([shape.reshape(src, (count,)), flat_input, one], 0)
    rows = indexing.index_select(factors, 0, _constant(picks.reshape(-1), input))
    product = reduction.prod(shape.reshape(rows, picks.shape), 1)
    row_of = np.zeros(size, dtype=np.int64)
    row_of[touched] = np.arange(len(touched))
    named = np.zeros(size, dtype=bool)
    named[touched] = True
    placed = indexing.index_select(product, 0, _constant(row_of, input))
    return shape.reshape(selection.where(_constant(named, input), placed, flat_input), tuple(input.shape))


def _host_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool) -> Tensor:
    ufunc = {"amax": np.maximum, "amin": np.minimum, "prod": np.multiply}[reduce]
    values = to_host(input._data).copy()
    key = _scatter_key(to_host(index._data), dim)
    if not include_self:
        identity = {"amax": -np.inf, "amin": np.inf, "prod": 1}[reduce]
        if values.dtype.kind in "iu" and reduce != "prod":
            info = np.iinfo(values.dtype)
            identity = info.min if reduce == "amax" else info.max
        values[key] = identity
    ufunc.at(values, key, to_host(src._data))
    return Tensor._wrap(like_host(values, input._data), None, None)
