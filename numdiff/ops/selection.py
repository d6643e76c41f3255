"""Ops that pick between values: where, clamp, masked_fill (maximum and minimum are scalar rules)."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.autograd.function import Function
from numdiff.creation import tensor, zeros
from numdiff.ops._util import (
    _scalar_operand,
    broadcast_shape,
    check_integer_scalar_fits,
    check_same_device,
    operands,
    scalar_like,
)
from numdiff.ops.registry import register
from numdiff.ops.search import nonzero
from numdiff.tensor import Tensor


@register("where", compile="fused")
class Where(Function):
    """where(condition, a, b); condition is a constant bool tensor (first input, no gradient)."""

    @staticmethod
    def forward(ctx, condition, a, b):
        ctx.save_for_backward(condition)
        return np.where(condition, a, b)

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        # A true zero, not grad * 0: a NaN or inf reaching the branch not taken must not pass into it
        # (a fully masked softmax row behind masked_fill), as PyTorch's where gives 0 there.
        zero = zeros((), dtype=grad.dtype, device=grad.device)
        return (
            None,
            where(condition, grad, zero) if ctx.needs_input_grad[1] else None,
            where(condition, zero, grad) if ctx.needs_input_grad[2] else None,
        )


@register("clamp", compile="call")
class Clamp(Function):
    """clamp(x, lo, hi) with scalar bounds; gradient passes where lo <= x <= hi."""

    @staticmethod
    def forward(ctx, x, *, min, max):  # noqa: A002 - PyTorch's argument names
        ctx.save_for_backward(x)
        ctx.min, ctx.max = min, max
        out = x
        if min is not None:
            out = np.maximum(out, np.asarray(min, dtype=x.dtype))
        if max is not None:
            out = np.minimum(out, np.asarray(max, dtype=x.dtype))
        return out if out is not x else x.copy()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        inside = None
        if ctx.min is not None:
            inside = x >= ctx.min
        if ctx.max is not None:
            below = x <= ctx.max
            inside = below if inside is None else inside & below
        return (where(inside, grad, zeros((), dtype=grad.dtype, device=grad.device)) if inside is not None else grad,)


_UNSET: Any = object()


def where(condition: Any, input: Any = _UNSET, other: Any = _UNSET) -> Tensor:
    """Elements of `input` where `condition` holds, else of `other` (scalars allowed). With the
    condition alone, as in PyTorch, ``nonzero(condition, as_tuple=True)``: the indices of its
    true elements, one tensor per dimension."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a bool Tensor, got {type(condition).__name__}")
    if input is _UNSET and other is _UNSET:
        return nonzero(condition, as_tuple=True)
    if input is _UNSET or other is _UNSET:
        raise TypeError("where: pass both input and other, or the condition alone (the indices where it holds)")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):  # two scalars, as torch allows

        input = tensor(input, device=condition.device)
    if condition._data.dtype.kind != "b":
        condition = condition != 0
    if isinstance(input, Tensor) != isinstance(other, Tensor):
        check_integer_scalar_fits("where", other if isinstance(input, Tensor) else input,
                                  input if isinstance(input, Tensor) else other)
    a, b = operands("where", input, other)
    tensors = [t for t in (condition, a, b) if isinstance(t, Tensor)]
    check_same_device("where", *tensors)
    broadcast_shape("where", *(t.shape for t in tensors))
    return Where.apply(condition, a, b)


def maximum(input: Any, other: Any) -> Tensor:
    """Elementwise maximum with broadcasting (a rule of numdiff/_ground/scalar_rules.py)."""
    from numdiff.ops.elementwise import PUBLIC

    return PUBLIC["maximum"](input, other)


def minimum(input: Any, other: Any) -> Tensor:
    """Elementwise minimum with broadcasting (a rule of numdiff/_ground/scalar_rules.py)."""
    from numdiff.ops.elementwise import PUBLIC

    return PUBLIC["minimum"](input, other)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Limit values to [min, max]; tensor bounds broadcast (composed from maximum/minimum)."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_by_tensors(input, min, max)
    bounds = []
    for bound in (min, max):
        if bound is not None:  # a float bound makes an integer input float, as in PyTorch
            check_integer_scalar_fits("clamp", bound, input)
            bound, input = _scalar_operand("clamp", bound, input)  # -3 for uint8 is 253, as in PyTorch
        bounds.append(bound)
    return Clamp.apply(input, min=bounds[0], max=bounds[1])


clip = clamp


def _clamp_by_tensors(input: Tensor, low: Any, high: Any) -> Tensor:
    """clamp with a tensor bound. The value is maximum/minimum's (NaN wherever an operand is NaN);
    the gradient goes whole to the one operand the value is, as for scalar bounds and in PyTorch:
    to input where low <= input <= high (ties included), to low where input < low < high, to high
    where input > high or high < low, and to none where the value is NaN. maximum and minimum
    alone would halve it between input and a bound they tie with, and give it to both where the
    input is NaN."""
    value = input
    if low is not None:
        value = maximum(value, low)
    if high is not None:
        value = minimum(value, high)
    inside = takes_low = takes_high = None  # bool masks: comparisons record nothing
    if low is not None:
        inside = input >= low
        takes_low = input < low if high is None else (input < low) & (low < high)
    if high is not None:
        below = input <= high
        inside = below if inside is None else inside & below
        crosses = input > high if low is None else (input > high) | (high < low)
        takes_high = crosses & ~value.isnan()
    out = value.detach()
    if takes_high is not None:
        out = where(takes_high, high, out)
    if takes_low is not None:
        out = where(takes_low, low, out)
    return where(inside, input, out)


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002 - PyTorch's name
    """``clamp(input, min=min)``."""
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002 - PyTorch's name
    """``clamp(input, max=max)``."""
    return clamp(input, max=max)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """`input` with `value` written where the bool `mask` is True (mask broadcasts)."""
    if not isinstance(mask, Tensor) or mask._data.dtype.kind != "b":
        raise TypeError(f"masked_fill: mask must be a bool Tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"masked_fill: value must be a number or a 0-d tensor, got shape {tuple(value.shape)}")
    else:
        value = scalar_like(value, input, "masked_fill")
    shape = broadcast_shape("masked_fill", input.shape, mask.shape)
    if tuple(shape) != tuple(input.shape):
        raise ValueError(
            f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast to the input's "
            f"shape {tuple(input.shape)}"
        )
    out = where(mask, value, input)
    # The input's dtype, as in PyTorch: the value is cast to it (2.5 into an int tensor is 2).
    return out if out._data.dtype == input._data.dtype else out.to(input.dtype)
