"""Copies and conversions that gradient flows through: dtype casts, device moves, clone."""

from __future__ import annotations

from typing import Any

from numdiff import _dtype, _memory_format
from numdiff._device import device
from numdiff.autograd.function import Function
from numdiff.backend import backend_for, move_array
from numdiff.kernels import layout_copy
from numdiff.ops.registry import register
from numdiff.tensor import Tensor


@register("to_dtype", compile="call")
class ToDtype(Function):
    """Cast; the gradient is cast back to the input's dtype."""

    @staticmethod
    def forward(ctx, x, *, dtype):
        ctx.input_dtype = _dtype.from_numpy(x.dtype)
        return _dtype.cast_array(x, dtype)

    @staticmethod
    def backward(ctx, grad):
        return (grad.to(ctx.input_dtype),)


@register("to_device", compile="call")
class ToDevice(Function):
    """Move to another device; the gradient moves back."""

    @staticmethod
    def forward(ctx, x, *, device):
        ctx.input_device = device_of(x)
        return move_array(x, device)

    @staticmethod
    def backward(ctx, grad):
        return (grad.to(ctx.input_device),)


@register("clone", compile="call")
class Clone(Function):
    @staticmethod
    def forward(ctx, x):
        return layout_copy.contiguous_copy(x)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


def device_of(array: object) -> device:
    return backend_for(array).device_of(array)


def to_dtype_op(x: Tensor, dtype: _dtype.dtype) -> Tensor:
    return ToDtype.apply(x, dtype=dtype)


def to_device_op(x: Tensor, target: device) -> Tensor:
    return ToDevice.apply(x, device=target)


def clone(input: Tensor, *, memory_format: Any = _memory_format.preserve_format) -> Tensor:
    """A copy with its own storage; gradient flows back to `input`. The copy keeps `input`'s
    layout (channels_last stays so), or takes `memory_format`'s."""
    fmt = _memory_format.checked(memory_format, "clone")
    if fmt is _memory_format.preserve_format:
        fmt = _memory_format.layout_of(tuple(input.shape), input.stride())
    if fmt is _memory_format.contiguous_format:
        return Clone.apply(input)
    _memory_format.check_rank(fmt, input.ndim, "clone")
    return Clone.apply(input.permute(*fmt.order)).permute(*_inverse(fmt.order))


def contiguous(input: Tensor, memory_format: Any = _memory_format.contiguous_format) -> Tensor:
    """`input` itself if laid out densely in `memory_format` (row-major by default), else a copy
    that is (channels_last: the same shape, with NHWC strides)."""
    fmt = _memory_format.checked(memory_format, "contiguous")
    if fmt is _memory_format.contiguous_format:
        if input._data.flags.c_contiguous:
            return input
        return Clone.apply(input)
    if fmt is _memory_format.preserve_format:
        raise RuntimeError("contiguous: memory_format=preserve_format is not a layout to make; use clone()")
    _memory_format.check_rank(fmt, input.ndim, "contiguous")
    if _memory_format.is_contiguous_in(tuple(input.shape), input.stride(), fmt):
        return input
    return Clone.apply(input.permute(*fmt.order)).permute(*_inverse(fmt.order))


def _inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(order)
    for position, dim in enumerate(order):
        inverse[dim] = position
    return tuple(inverse)
