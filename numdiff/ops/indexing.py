"""Indexing: __getitem__, index_put (__setitem__), gather, scatter_add, index_select.

Each scatter is the backward of a gather and the other way round, so both directions stay
differentiable. Repeated indices accumulate (np.add.at), as PyTorch's index backward does.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from numdiff._batched import physical
from numdiff._vmap_level import per_example
from numdiff.autograd.engine import sum_to_shape
from numdiff.autograd.function import Function
from numdiff.autograd.transform_state import vmap_active
from numdiff.backend import backend_for, holds_values, is_numpy, to_host
from numdiff.ops._index_order import torch_position
from numdiff.ops._util import normalize_dim, scalar_like, vmapped
from numdiff.ops.registry import register
from numdiff.ops.shape import _as_view
from numdiff.tensor import Tensor


def _is_basic(key: tuple) -> bool:
    # The set test first: a key of plain ints, slices, None and Ellipsis, without a generator.
    return _PLAIN.issuperset(map(type, key)) or all(
        k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key
    )


# Index parts that need no conversion: a key of only these is checked by NumPy and returned as
# it is (bool is not among them: True indexes as a mask, not as 1).
_PLAIN = frozenset((int, slice, type(None), type(Ellipsis)))


def normalize_key(op: str, key: Any, shape: tuple) -> tuple:
    """An index as a tuple of ints, slices, None, Ellipsis and validated integer/bool arrays."""
    if type(key) in _PLAIN:
        key = (key,)
    if type(key) is tuple and _PLAIN.issuperset(map(type, key)):
        # x[1:5], x[:, -1], x[..., None]: the common case, on every slice of a training loop.
        try:
            np.empty(shape, dtype=_NO_BYTES)[key]
        except IndexError as error:
            raise IndexError(f"{op}: index {_describe(key)} is invalid for a tensor of shape {tuple(shape)}: {error}") from None
        return key
    if isinstance(key, list) and any(isinstance(k, (Tensor, list, tuple, range, slice)) or k is None or k is Ellipsis for k in key):
        key = tuple(key)  # PyTorch reads such a list as a tuple: x[[rows, cols]] is x[rows, cols]
    if not isinstance(key, tuple):
        key = (key,)
    parts = []
    for k in key:
        if isinstance(k, range):
            k = np.arange(k.start, k.stop, k.step, dtype=np.int64)  # a range indexes like its list
        if isinstance(k, Tensor):
            k = to_host(k._data) if holds_values(k._data) else k._data  # a meta index: its shape only
            if k.dtype.kind not in "iub":
                raise IndexError(f"{op}: tensors used as indices must be long, int or bool, got {k.dtype}")
            if k.dtype == np.uint8:  # a uint8 tensor is a mask in PyTorch, not a list of indices
                warnings.warn(
                    f"{op}: indexing with a uint8 tensor is deprecated, as in PyTorch, which reads it as "
                    "a bool mask (so does numdiff); use a bool tensor instead", UserWarning, stacklevel=3,
                )
                k = k.astype(np.bool_)
        elif isinstance(k, list) or is_numpy(k):
            k = np.asarray(k)
            if k.dtype.kind not in "iub" and k.size:
                raise IndexError(f"{op}: arrays used as indices must be integer or bool, got {k.dtype}")
            if k.size == 0:
                k = k.astype(np.int64)
        elif isinstance(k, (bool, np.bool_)):
            k = np.asarray(k)
        elif isinstance(k, np.integer):
            k = int(k)
        elif not (k is None or k is Ellipsis or isinstance(k, (int, slice))):
            raise IndexError(f"{op}: unsupported index {k!r} of type {type(k).__name__}")
        parts.append(k)
    key = tuple(parts)
    try:
        # Let NumPy check ranges and shapes before any real work, on a stand-in of a zero-byte dtype:
        # neither it nor the result of indexing it takes memory, however large.
        np.empty(shape, dtype=_NO_BYTES)[tuple(k if holds_values(k) else _stand_in(op, k) for k in key)]
    except IndexError as error:
        raise IndexError(f"{op}: index {_describe(key)} is invalid for a tensor of shape {tuple(shape)}: {error}") from None
    return key


_NO_BYTES = np.dtype([])


def _stand_in(op: str, index: Any) -> np.ndarray:
    """A meta index array's shape as host indices of no memory; a meta mask is refused, since what
    it selects (and so the result's shape) depends on values it does not have."""
    if index.dtype == np.bool_:
        raise NotImplementedError(
            f"{op}: a meta tensor used as a mask (shape {index.shape}) selects a number of elements that "
            "depends on its values, which a meta tensor does not have"
        )
    return np.broadcast_to(np.zeros((), np.intp), index.shape)


def _describe(key: tuple) -> str:
    return "[" + ", ".join(
        f"array(shape={k.shape}, dtype={k.dtype})" if is_numpy(k) else repr(k) for k in key
    ) + "]"


@register("getitem", compile="call", view=True)
class GetItem(Function):
    @staticmethod
    def forward(ctx, x, *, key):
        ctx.key = key
        ctx.input_shape = x.shape
        out = x[key]
        if _is_basic(key):
            if isinstance(out, np.generic):
                # One element by integers: NumPy hands back a scalar copy; the Ellipsis makes it a
                # 0-d view, so y[0].mul_(3) writes into y, as in PyTorch.
                return x[key + (Ellipsis,)]
            return out
        if isinstance(out, np.generic):
            # An all-integer advanced index picks one element, and NumPy hands back a scalar.
            return np.asarray(out)
        # ascontiguousarray promotes 0-d to 1-d; a 0-d advanced-index result is a fresh copy already.
        return out if out.ndim == 0 else np.ascontiguousarray(out, like=out)

    @staticmethod
    def backward(ctx, grad):
        return (IndexAddIntoZeros.apply(grad, key=ctx.key, shape=ctx.input_shape),)

    @staticmethod
    def backward_into(ctx, grad, buffer):
        """First order on host arrays: `grad` added into x's gradient `buffer` at the key (a zero
        buffer when None), so the pieces of a split write one array (numdiff.autograd._grad_buffers)."""
        key = ctx.key
        if _is_basic(key):  # a basic key reaches each element once: the first piece is assigned
            if buffer is None:
                buffer = np.zeros(ctx.input_shape, dtype=grad.dtype)
                buffer[key] = grad
            else:
                buffer[key] += grad
        else:
            if buffer is None:
                buffer = np.zeros(ctx.input_shape, dtype=grad.dtype)
            backend_for(buffer).add_at(buffer, key, grad)
        return buffer


@register("index_add_into_zeros", compile="call", launchers=("add_at",))
class IndexAddIntoZeros(Function):
    """zeros(shape) with `grad` added at `key` (repeats accumulate): the transpose of getitem."""

    @staticmethod
    def forward(ctx, grad, *, key, shape):
        ctx.key = key
        out = np.zeros(shape, dtype=grad.dtype, like=grad)
        if _is_basic(key):
            out[key] = grad
        else:
            backend_for(out).add_at(out, key, grad)
        return out

    @staticmethod
    def backward(ctx, grad):
        # GetItem, not grad[key]: the key is NumPy's reading, without getitem's move to PyTorch's order
        return (GetItem.apply(grad, key=ctx.key),)


@register("index_put", compile="call")
class IndexPut(Function):
    """A copy of `x` with `x[key] = value`: gradient to x is masked at key, to value it is grad[key]."""

    @staticmethod
    def forward(ctx, x, value, *, key):
        ctx.key = key
        ctx.value_shape = value.shape
        out = x.copy()
        out[key] = value
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_x = grad_value = None
        if ctx.needs_input_grad[0]:
            grad_x = IndexPut.apply(grad, scalar_like(0, grad), key=ctx.key)
        if ctx.needs_input_grad[1]:
            grad_value = sum_to_shape(GetItem.apply(grad, key=ctx.key), ctx.value_shape)
        return grad_x, grad_value


@register("gather", compile="call")
class Gather(Function):
    @staticmethod
    def forward(ctx, x, index, *, dim):
        ctx.dim = dim
        ctx.input_shape = x.shape
        ctx.save_for_backward(index)
        return np.take_along_axis(x, index, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        # A broadcast zero: scatter_add's copy of it only writes (np.zeros and a copy of it did both).
        zero = np.zeros((), dtype=grad._data.dtype, like=grad._data)
        zeros = Tensor._wrap(np.broadcast_to(zero, ctx.input_shape), None, None)
        return scatter_add(zeros, ctx.dim, index, grad), None


@register("scatter_add", compile="call", launchers=("add_at",))
class ScatterAdd(Function):
    """x with src added at positions index along dim (repeats accumulate)."""

    @staticmethod
    def forward(ctx, x, index, src, *, dim):
        ctx.dim = dim
        ctx.src_shape = src.shape
        ctx.save_for_backward(index)
        out = x.copy()
        backend_for(out).add_at(out, _scatter_key(index, dim), src[tuple(slice(0, n) for n in index.shape)])
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        grad_src = None
        if ctx.needs_input_grad[2]:
            grad_src = gather(grad, ctx.dim, index)
            if grad_src.shape != ctx.src_shape:
                # src may be larger than index: the elements past index's shape were not used.
                corner = tuple(slice(0, n) for n in index.shape)
                grad_src = IndexAddIntoZeros.apply(grad_src, key=corner, shape=ctx.src_shape)
        return grad, None, grad_src


def _scatter_key(index: np.ndarray, dim: int) -> tuple:
    grids = list(np.ogrid[tuple(slice(0, n) for n in index.shape)])  # NumPy 2 returns a tuple
    grids[dim] = index
    return tuple(grids)


def _zero_dim_pair(input: Tensor, index: Any) -> bool:
    """A 0-d input or index beside a 0-d or 1-d other: PyTorch reads a 0-d tensor as one element
    along dim 0 here (a transform's `zeros(10).scatter_(0, tensor(y), value=1)`), so the pair is
    lifted to 1-d; the checks below index the input's shape by dim, which a 0-d input has none of."""
    return isinstance(index, Tensor) and min(input.ndim, index.ndim) == 0 and max(input.ndim, index.ndim) <= 1


def _lift(value: Any) -> Any:
    return value.reshape(1) if isinstance(value, Tensor) and value.ndim == 0 else value


def _check_index_tensor(op: str, input: Tensor, dim: int, index: Tensor) -> None:
    if not isinstance(index, Tensor) or index._data.dtype.kind not in "iu":
        raise TypeError(f"{op}: index must be an integer Tensor, got {getattr(index, 'dtype', type(index).__name__)}")
    if index.ndim != input.ndim:
        raise ValueError(f"{op}: index has {index.ndim} dims (shape {tuple(index.shape)}) but input has {input.ndim} (shape {tuple(input.shape)})")
    # Every example's indices under vmap (a batched tensor's own array is its first example only):
    # a kernel reached with an unchecked index would read or write out of bounds.

    data = physical(index)[0]._data
    if holds_values(data) and data.size and (data.min() < 0 or data.max() >= input.shape[dim]):
        raise IndexError(
            f"{op}: index values must be in [0, {input.shape[dim]}) for dimension {dim} of input "
            f"shape {tuple(input.shape)}; got values in [{data.min()}, {data.max()}]"
        )


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """out[i][j] = input[index[i][j]][j] (for dim=0), PyTorch's gather."""
    dim = normalize_dim("gather", dim, input.ndim)
    if _zero_dim_pair(input, index):
        return gather(_lift(input), 0, _lift(index)).reshape(tuple(index.shape))
    _check_index_tensor("gather", input, dim, index)
    for d, (a, b) in enumerate(zip(index.shape, input.shape)):
        if d != dim and a > b:
            raise ValueError(f"gather: index shape {tuple(index.shape)} is larger than input shape {tuple(input.shape)} in dimension {d}")
    if any(a != b for d, (a, b) in enumerate(zip(index.shape, input.shape)) if d != dim):
        input = input[tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(index.shape))]
    return Gather.apply(input, index, dim=dim)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `input` with `src` values added at `index` along `dim` (PyTorch's scatter_add)."""
    dim = normalize_dim("scatter_add", dim, input.ndim)
    if _zero_dim_pair(input, index) and isinstance(src, Tensor):
        return scatter_add(_lift(input), 0, _lift(index), _lift(src)).reshape(tuple(input.shape))
    _check_index_tensor("scatter_add", input, dim, index)
    if any(a > b for a, b in zip(index.shape, src.shape)):
        raise ValueError(f"scatter_add: index shape {tuple(index.shape)} exceeds src shape {tuple(src.shape)}")
    for d, (a, b) in enumerate(zip(index.shape, input.shape)):
        if d != dim and a > b:
            raise ValueError(f"scatter_add: index shape {tuple(index.shape)} exceeds input shape {tuple(input.shape)} in dimension {d}")
    return ScatterAdd.apply(input, index, src, dim=dim)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Entries of `input` along `dim` at the positions in the 1-D `index`."""
    dim = normalize_dim("index_select", dim, input.ndim)
    if not isinstance(index, Tensor) or index.ndim > 1 or index._data.dtype.kind not in "iu":
        raise TypeError(f"index_select: index must be a 1-D integer Tensor, got {index!r}")
    return input[(slice(None),) * dim + (index.reshape(-1),)]


def _key_parts(key: Any) -> tuple:
    """The parts of an index, as normalize_key reads them (a list holding tensors is a tuple)."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and any(isinstance(k, Tensor) for k in key):
        return tuple(key)
    return (key,)


def _batched_index(key: Any) -> bool:
    """Whether an index tensor in `key` is batched by numdiff.func.vmap: its values differ per
    example, so the index cannot be turned into one array (a batched tensor's own array is its
    first example only)."""
    return vmap_active() and vmapped(*(k for k in _key_parts(key) if isinstance(k, Tensor)))


def _per_example_index(op: str, compute: Any, input: Tensor, key: Any, *rest: Any) -> Tensor:
    """compute(input, key, *rest) one vmap example at a time (numdiff._vmap_level.per_example)."""
    parts = _key_parts(key)
    where = [i for i, k in enumerate(parts) if isinstance(k, Tensor)]

    def one(example_input: Tensor, *tensors: Any) -> Tensor:
        example_key = list(parts)
        for i, t in zip(where, tensors):
            example_key[i] = t
        return compute(example_input, tuple(example_key), *tensors[len(where):])

    return per_example(op, one, input, *(parts[i] for i in where), *rest)


def getitem(input: Tensor, key: Any) -> Tensor:
    """``input[key]`` with ints, slices, None, Ellipsis, integer and bool tensors."""
    shape = input._data.shape
    if type(key) is int and shape and -shape[0] <= key < shape[0]:
        key = (key,)  # x[t] in a time loop: in bounds, so normalize_key would return it as is
    elif _batched_index(key):
        return _per_example_index("getitem", getitem, input, key)
    else:
        key = normalize_key("index", key, shape)

    out = GetItem.apply(input, key=key)
    if _is_basic(key):
        return _as_view(out, input, GetItem, {"key": key})
    moved = torch_position(key, len(shape))
    if moved is not None:  # x[0, :, [1, 3]]: the index's dims where PyTorch puts them
        position, rest = moved
        count = out.ndim - rest
        out = out.movedim(tuple(range(count)), tuple(range(position, position + count)))
    return out


def index_put(input: Tensor, key: Any, value: Any) -> Tensor:
    """Out-of-place ``input[key] = value``; the engine of __setitem__."""
    if _batched_index(key):
        return _per_example_index("index_put", index_put, input, key, value if isinstance(value, Tensor) else scalar_like(value, input))
    key, value = put_operands(input, key, value)
    return IndexPut.apply(input, value, key=key)


def put_operands(input: Tensor, key: Any, value: Any) -> tuple[tuple, Tensor]:
    """The checked key and value of ``input[key] = value``: the key normalized, the value a tensor
    of input's dtype whose shape broadcasts to the indexed one."""
    key = normalize_key("index_put", key, input._data.shape)
    if not isinstance(value, Tensor):
        value = scalar_like(value, input)
    elif value.dtype is not input.dtype:
        value = value.to(input.dtype)
    if value._data.ndim:  # a 0-d value broadcasts to any indexed shape
        target_shape = np.empty(input._data.shape, dtype=_NO_BYTES)[key].shape
        moved = torch_position(key, input._data.ndim)
        if moved is not None:  # the value comes in PyTorch's order of the indexed dims
            position, rest = moved
            count = len(target_shape) - rest
            torch_shape = target_shape[count : count + position] + target_shape[:count] + target_shape[count + position :]
            _check_broadcast(value, torch_shape, input)
            value = value.expand(torch_shape).movedim(tuple(range(position, position + count)), tuple(range(count)))
        _check_broadcast(value, target_shape, input)
    return key, value


def _check_broadcast(value: Tensor, target_shape: tuple, input: Tensor) -> None:
    try:
        np.broadcast_shapes(value._data.shape, target_shape)
    except ValueError:
        raise ValueError(
            f"index_put: value of shape {tuple(value.shape)} cannot be broadcast to the indexed "
            f"shape {target_shape} of a tensor of shape {tuple(input.shape)}"
        ) from None
