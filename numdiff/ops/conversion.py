"""Copies and conversions that gradient flows through: dtype casts, device moves, clone."""

from __future__ import annotations

from numdiff import _dtype
from numdiff._device import device
from numdiff.autograd.function import Function
from numdiff.backend import backend_for, move_array
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
        return x.copy()

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


def device_of(array: object) -> device:
    return backend_for(array).device_of(array)


def to_dtype_op(x: Tensor, dtype: _dtype.dtype) -> Tensor:
    return ToDtype.apply(x, dtype=dtype)


def to_device_op(x: Tensor, target: device) -> Tensor:
    return ToDevice.apply(x, device=target)


def clone(input: Tensor) -> Tensor:
    """A copy with its own storage; gradient flows back to `input`."""
    return Clone.apply(input)


def contiguous(input: Tensor) -> Tensor:
    """`input` itself if C-contiguous, else a contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return Clone.apply(input)
