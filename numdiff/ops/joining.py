"""Joining and splitting along a dimension: cat, stack, split and chunk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._ground.args import is_int
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import _state as _grad_state
from numdiff.backend import is_host
from numdiff.ops._util import check_same_device, int_sequence, normalize_dim
from numdiff.ops.registry import register
from numdiff.ops.shape import Reshape, unsqueeze
from numdiff.overrides import dispatch_call, honours_protocol, is_overridable
from numdiff.tensor import Tensor


@register("cat", compile="call")
class Cat(Function):
    """Concatenate along `dim`; the gradient is sliced back into the pieces."""

    @staticmethod
    def forward(ctx, *tensors, dim):
        ctx.dim = dim
        ctx.sizes = [t.shape[dim] for t in tensors]
        return np.concatenate(tensors, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        # First order: the pieces are views of the gradient's array, as getitem's forward would
        # give, without an op call each (the engine copies a view before it writes into one).
        recorded = _grad_state.enabled
        data = grad._data
        grads = []
        start = 0
        for size, needed in zip(ctx.sizes, ctx.needs_input_grad):
            if needed:
                index = (slice(None),) * ctx.dim + (slice(start, start + size),)
                grads.append(grad[index] if recorded else Tensor._wrap(data[index], None, None))
            else:
                grads.append(None)
            start += size
        return tuple(grads)


@honours_protocol
def _legacy_empty(tensors: tuple) -> bool:
    """Whether some but not all of `tensors` are 1-D and empty: PyTorch's cat skips those."""
    empty = sum(isinstance(t, Tensor) and t._data.shape == (0,) for t in tensors)
    return 0 < empty < len(tensors)


def _cat_skipping_legacy_empty(tensors: tuple, dim: int) -> Tensor:
    """cat of the tensors that are not of shape (0,), in the dtype all of them promote to, as PyTorch
    concatenates onto an empty accumulator (`torch.cat([torch.tensor([]), x2d])`)."""
    target = tensors[0].dtype
    for t in tensors[1:]:
        target = _dtype.promote(target, t.dtype)
    return cat([t.to(target) for t in tensors if t._data.shape != (0,)], dim)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors of equal shape except along `dim`."""
    if (type(tensors) not in (list, tuple) and is_overridable(tensors)) or (type(dim) is not int and is_overridable(dim)):
        return dispatch_call(cat, locals())  # a Proxy (numdiff.overrides)
    if type(tensors) is not tuple:
        tensors = tuple(tensors)  # a list or a generator: Cat.apply takes them unpacked either way
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    first = tensors[0]
    first_shape = first._data.shape if isinstance(first, Tensor) else None
    requested_dim = dim
    if first_shape:
        dim = normalize_dim("cat", dim, len(first_shape))
        before, after, dtype = first_shape[:dim], first_shape[dim + 1 :], first._data.dtype
    # One pass checks each tensor's type, rank, sizes off `dim`, dtype and host-ness: split into
    # passes (and a per-size generator) they cost more than the copy of a batch-1 RNN's cat.
    mixed = on_device = False
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            if is_overridable(t):  # a Proxy (numdiff.overrides)
                return dispatch_call(cat, {"tensors": list(tensors), "dim": dim})
            raise TypeError(f"cat: expected a Tensor as element {i} of tensors, got {type(t).__name__}")
        data = t._data
        shape = data.shape
        if not shape:  # else the size checks below index its empty shape
            raise ValueError(f"cat: tensor {i} is zero-dimensional and cannot be concatenated; stack() the tensors, or reshape it to (1,)")
        if len(shape) != len(first_shape) or shape[:dim] != before or shape[dim + 1 :] != after:
            if _legacy_empty(tensors):
                return _cat_skipping_legacy_empty(tensors, requested_dim)
            raise ValueError(
                f"cat: sizes of tensors must match except in dimension {dim}: tensor 0 has shape "
                f"{tuple(first.shape)} but tensor {i} has shape {tuple(t.shape)}"
            )
        if data.dtype != dtype:
            mixed = True
        if not is_host(data):
            on_device = True
    if on_device:
        check_same_device("cat", *tensors)
    if mixed:
        target = first.dtype
        for t_ in tensors[1:]:
            target = _dtype.promote(target, t_.dtype)
        tensors = [t_.to(target) for t_ in tensors]
    return Cat.apply(*tensors, dim=dim)


concat = cat


@honours_protocol
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join equal-shaped tensors along a new dimension."""
    if type(tensors) not in (list, tuple) and is_overridable(tensors):
        return dispatch_call(stack, locals())  # a Proxy (numdiff.overrides)
    tensors = list(tensors)
    for value in (*tensors, dim):
        if type(value) is not Tensor and type(value) is not int and is_overridable(value):  # a Proxy
            return dispatch_call(stack, {"tensors": tensors, "dim": dim})
    if not tensors:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    for i, other in enumerate(tensors[1:], 1):
        if other.shape != tensors[0].shape:
            raise ValueError(
                f"stack: expects each tensor to be equal size, but got {tuple(tensors[0].shape)} at "
                f"entry 0 and {tuple(other.shape)} at entry {i}"
            )
    ndim = tensors[0].ndim
    dim = normalize_dim("stack", dim, ndim + 1)
    if dim == ndim:  # a new last dimension: no existing one to concatenate along
        return cat([unsqueeze(t_, dim) for t_ in tensors], dim)
    # Joined along `dim`, the k pieces of size n lie one after another: splitting it into (k, n) is
    # the stack in two ops, not k unsqueezes and a cat. Reshape directly: the joined array is new
    # memory no one else holds, so the result is no view (as PyTorch's) and needs no checks.
    shape = tensors[0]._data.shape
    return Reshape.apply(cat(tensors, dim), shape=shape[:dim] + (len(tensors), shape[dim]) + shape[dim + 1 :])


def split(input: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into chunks of a given size, or of the listed sizes, along `dim`."""
    dim = normalize_dim("split", dim, input.ndim)
    length = input.shape[dim]
    if is_int(split_size_or_sections):
        split_size_or_sections = int(split_size_or_sections)
        if split_size_or_sections <= 0:
            raise ValueError(f"split: split_size must be positive, got {split_size_or_sections}")
        sizes = [split_size_or_sections] * (length // split_size_or_sections)
        if length % split_size_or_sections:
            sizes.append(length % split_size_or_sections)
    else:
        sizes = list(int_sequence("split", "split_size_or_sections", split_size_or_sections))
        if sum(sizes) != length:
            raise ValueError(f"split: sections {sizes} do not sum to the size {length} of dimension {dim}")
    pieces = []
    start = 0
    for size in sizes:
        pieces.append(input[(slice(None),) * dim + (slice(start, start + size),)])
        start += size
    return tuple(pieces)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into `chunks` pieces of (nearly) equal size along `dim`."""
    if not is_int(chunks):
        raise TypeError(f"chunk: chunks must be an int, got {chunks!r} ({type(chunks).__name__})")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    dim = normalize_dim("chunk", dim, input.ndim)
    size = -(-input.shape[dim] // chunks) if input.shape[dim] else 1
    return split(input, size, dim)
