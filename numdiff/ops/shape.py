"""Shape ops. reshape, permute, expand and flip are primitives; the rest are composed (cat and stack are in joining.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.autograd.engine import sum_to_shape
from numdiff.autograd.function import Function
from numdiff.backend import is_host
from numdiff.kernels import layout_copy
from numdiff.ops._util import (
    int_sequence,
    inverse_permutation,
    normalize_dim,
    normalize_dims,
)
from numdiff.ops.registry import register
from numdiff.overrides import dispatch_call, honours_protocol, is_overridable
from numdiff.tensor import Tensor


def _as_view(out: Tensor, base: Tensor, function: Any = None, attrs: dict | None = None) -> Tensor:
    """Share `base`'s version counter when `out` aliases its memory, so in-place edits are seen,
    and remember the base's history at this point (see `check_view_is_current`).

    ``function.apply(base, **attrs)`` is the view op that made `out`: with it the view records how
    to be made again from its root base (`_view_replay`, the ops from the root outwards), so that
    after an in-place op on the base it takes the base's new history, as PyTorch's views do."""
    if _shares_memory(out._data, base._data):
        out._version_counter = base._version_counter
        root = base._base
        if root is None:
            out._view_replay = None if function is None else ((function, attrs),)
            root = base
        else:
            inner = base._view_replay
            out._view_replay = None if function is None or inner is None else inner + ((function, attrs),)
        out._base = root
        out._base_node = root._grad_fn
    return out


def _shares_memory(data: Any, base_data: Any) -> bool:
    """np.may_share_memory(data, base_data), answered first by identity for the usual case: a
    non-empty host view whose NumPy base is `base_data` itself (`base_data` owns the memory the view
    points into). The bounds check costs ~1 us a view op; the identity ~0.05."""
    if is_host(data) and data.base is base_data and data.size:
        return True
    return np.may_share_memory(data, base_data)


@register("reshape", compile="call", view=True)
class Reshape(Function):
    @staticmethod
    def forward(ctx, x, *, shape):
        ctx.input_shape = x.shape
        return layout_copy.reshaped(x, shape)

    @staticmethod
    def backward(ctx, grad):
        # The op directly, not reshape(): the input's shape needs none of its argument checks.
        return (_as_view(Reshape.apply(grad, shape=ctx.input_shape), grad),)


@register("permute", compile="call", view=True)
class Permute(Function):
    @staticmethod
    def forward(ctx, x, *, dims):
        ctx.inverse = inverse_permutation(dims)
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        # The op directly, not permute(): the inverse of a checked permutation needs no checks.
        inverse = ctx.inverse
        return (_as_view(Permute.apply(grad, dims=inverse), grad, Permute, {"dims": inverse}),)


@register("expand", compile="call", view=True)
class Expand(Function):
    @staticmethod
    def forward(ctx, x, *, shape):
        ctx.input_shape = x.shape
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, grad):
        return (sum_to_shape(grad, ctx.input_shape),)


@register("flip", compile="call")
class Flip(Function):
    @staticmethod
    def forward(ctx, x, *, dims):
        ctx.dims = dims
        return np.flip(x, dims).copy()

    @staticmethod
    def backward(ctx, grad):
        return (grad.flip(ctx.dims),)


def _shape_arg(shape: Sequence[Any], op: str = "reshape") -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    if all(type(s) is int for s in shape):  # the common call, without the checks' cost
        return tuple(shape)
    return int_sequence(op, "shape", shape)


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """Same elements in a new shape (one dim may be -1); a view when the layout allows."""
    shape = _shape_arg(shape)
    numel = input._data.size
    known = math.prod([s for s in shape if s != -1])  # Python ints: exact, and cheap for a few dims
    if shape.count(-1) > 1 or any(s < -1 for s in shape) or (
        numel != known if -1 not in shape else (known == 0 or numel % known)
    ):
        raise ValueError(f"reshape: shape {list(shape)} is invalid for input of size {numel} (shape {tuple(input.shape)})")
    if -1 in shape:
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if shape == input._data.shape:
        return input
    return _as_view(Reshape.apply(input, shape=shape), input, Reshape, {"shape": shape})


def _view_as_dtype(input: Tensor, dtype: _dtype.dtype) -> Tensor:
    """The same memory read as `dtype` (PyTorch's ``Tensor.view(dtype)``): a write to either shows
    in the other. With another element size the last dimension scales, so it must be contiguous and
    its bytes divisible by the new size. No gradient flows through it, as in PyTorch."""
    data = input._data
    if not is_host(data) and data.dtype.itemsize != dtype.itemsize:
        raise NotImplementedError(f"view: viewing a {data.__class__.__name__} of {input.dtype} as {dtype} needs the same element size; .cpu() it first")
    old, new = data.dtype.itemsize, dtype.itemsize
    if old != new:
        names = f"to view {input.dtype} as {dtype} (different element sizes)"
        if data.ndim == 0:
            raise RuntimeError(f"view: self.dim() cannot be 0 {names}")
        if data.size == 0:  # no memory to share, and NumPy refuses the zero strides it may have
            shape = data.shape[:-1] + (data.shape[-1] * old // new,)
            return Tensor._wrap(np.empty(shape, dtype.numpy), None, input._version_counter)
        if data.shape[-1] != 1 and data.strides[-1] != old:
            raise RuntimeError(f"view: self.stride(-1) must be 1 {names}, but got {data.strides[-1] // old}")
        if data.shape[-1] * old % new:
            raise RuntimeError(f"view: self.size(-1) must be divisible by {new // old} {names}, but got {data.shape[-1]}")
    return Tensor._wrap(data.view(dtype.numpy), None, input._version_counter)


def view(input: Tensor, *shape: Any, dtype: Any = None) -> Tensor:
    """Like reshape, but refuses layouts that would need a copy (as PyTorch's view); with a dtype,
    the same memory read as that dtype."""
    if dtype is not None or len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        target = shape[0] if dtype is None else dtype
        if not isinstance(target, _dtype.dtype) or dtype is not None and shape:
            raise TypeError(f"view: expected a shape or one dtype, got shape {shape} and dtype {dtype!r}")
        return _view_as_dtype(input, target)
    _shape_arg(shape, "view")  # a bad size names view, not the reshape it calls
    out = reshape(input, *shape)
    if out is not input and not _shares_memory(out._data, input._data):
        raise RuntimeError(
            f"view size {list(_shape_arg(shape))} is not compatible with input tensor's size and "
            f"stride (shape {tuple(input.shape)}, strides {input._data.strides}); use .reshape(...) instead"
        )
    return out


def permute(input: Tensor, *dims: Any) -> Tensor:
    """Reorder dimensions."""
    dims = _shape_arg(dims, "permute")
    if len(dims) != input.ndim:
        raise ValueError(f"permute: got {len(dims)} dims {list(dims)} for a tensor with {input.ndim} dimensions")
    dims = tuple(normalize_dim("permute", d, input.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise ValueError(f"permute: dims {list(dims)} repeat a dimension")
    return _as_view(Permute.apply(input, dims=dims), input, Permute, {"dims": dims})


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions."""
    dims = list(range(input.ndim))
    a, b = normalize_dim("transpose", dim0, input.ndim), normalize_dim("transpose", dim1, input.ndim)
    if input.ndim < 2:
        return input
    dims[a], dims[b] = dims[b], dims[a]
    dims = tuple(dims)  # a permutation by construction: the op directly, without permute()'s checks
    return _as_view(Permute.apply(input, dims=dims), input, Permute, {"dims": dims})


def transposed_matrix(input: Tensor) -> Tensor:
    """``input.mT`` for a tensor known to have at least 2 dims (a backward formula's operand):
    the Permute op as a view of `input`, without transpose()'s dim normalisation."""
    ndim = input._data.ndim
    dims = tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)
    return _as_view(Permute.apply(input, dims=dims), input, Permute, {"dims": dims})


def t(input: Tensor) -> Tensor:
    """Transpose of a tensor with at most 2 dims."""
    if input.ndim > 2:
        raise ValueError(f"t: expects a tensor with <= 2 dimensions, but got {input.ndim}D (shape {tuple(input.shape)})")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to a larger shape without copying (-1 keeps a dimension)."""
    sizes = _shape_arg(sizes, "expand")
    shape = input.shape
    if len(sizes) < len(shape):
        raise ValueError(f"expand: the number of sizes provided ({len(sizes)}) must be at least the number of dimensions ({len(shape)})")
    lead = len(sizes) - len(shape)
    target = []
    for i, size in enumerate(sizes):
        own = shape[i - lead] if i >= lead else None
        if size == -1:
            if own is None:
                raise ValueError(f"expand: -1 is not allowed in a new leading dimension (sizes {list(sizes)})")
            size = own
        if own is not None and own != size and own != 1:
            raise ValueError(f"expand: the expanded size {size} must match the existing size {own} at dimension {i} (shape {tuple(shape)} to {list(sizes)})")
        target.append(size)
    target = tuple(target)
    if target == tuple(shape):
        return input
    return _as_view(Expand.apply(input, shape=target), input, Expand, {"shape": target})


def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    """expand to `shape`."""
    return expand(input, tuple(shape))


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Drop size-1 dimensions (all of them, or those in `dim`)."""
    if dim is None:
        shape = tuple(n for n in input.shape if n != 1)
    else:
        dims = normalize_dims("squeeze", dim, input.ndim)
        shape = tuple(n for i, n in enumerate(input.shape) if not (i in dims and n == 1))
    return reshape(input, shape)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at `dim`."""
    dim = normalize_dim("unsqueeze", dim, input.ndim + 1)
    shape = list(input.shape)
    shape.insert(dim, 1)
    return reshape(input, shape)


@honours_protocol
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(flatten, locals())
    if input.ndim == 0:
        return reshape(input, (1,))
    start = normalize_dim("flatten", start_dim, input.ndim)
    end = normalize_dim("flatten", end_dim, input.ndim)
    if start > end:
        raise ValueError(f"flatten: start_dim {start_dim} cannot come after end_dim {end_dim}")
    shape = input.shape
    merged = math.prod(shape[start : end + 1])
    return reshape(input, shape[:start] + (merged,) + shape[end + 1 :])


@honours_protocol
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dimension `dim` into `sizes` (one may be -1)."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(unflatten, locals())
    dim = normalize_dim("unflatten", dim, input.ndim)
    sizes = tuple(sizes)
    known = int(np.prod([s for s in sizes if s != -1], dtype=np.int64))
    length = input.shape[dim]
    if -1 in sizes:
        sizes = tuple(length // known if s == -1 else s for s in sizes)
        known = int(np.prod(sizes, dtype=np.int64))
    if known != length:
        raise ValueError(f"unflatten: sizes {list(sizes)} do not multiply to the size {length} of dimension {dim}")
    shape = input.shape
    return reshape(input, shape[:dim] + sizes + shape[dim + 1 :])


def flip(input: Tensor, dims: Any) -> Tensor:
    """Reverse the order of elements along `dims`."""
    dims = normalize_dims("flip", dims, input.ndim)
    return Flip.apply(input, dims=dims)
