"""Broadcasting arithmetic: + - * / ** and negation, forward and backward side by side.

Backward returns gradients in the broadcast output shape; the tape sums them back to each input's
shape. Every backward is written with numdiff ops, so it can be differentiated again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.autograd.function import Function
from numdiff.ops._util import batch_nondifferentiable, data_of, operands, vmapped
from numdiff.ops.registry import register
from numdiff.tensor import Tensor


@register("add")
class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


@register("sub")
class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def backward(ctx, grad):
        return grad, -grad if ctx.needs_input_grad[1] else None


@register("mul")
class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (
            grad * b if ctx.needs_input_grad[0] else None,
            grad * a if ctx.needs_input_grad[1] else None,
        )


@register("div")
class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad / b if ctx.needs_input_grad[0] else None
        grad_b = -grad * a / (b * b) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


@register("neg")
class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return -a

    @staticmethod
    def backward(ctx, grad):
        return (-grad,)


@register("pow")
class Pow(Function):
    """a ** b for tensors; d/da = b a^(b-1), d/db = a^b log(a) (0 where a == 0 and b >= 0)."""

    @staticmethod
    def forward(ctx, a, b):
        out = a**b
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        from numdiff.ops.selection import where

        a, b, out = ctx.saved_tensors
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = where(b == 0, 0.0, grad * b * a ** (b - 1))
        if ctx.needs_input_grad[1]:
            safe_log = where((a == 0) & (b >= 0), 0.0, a.log())
            grad_b = grad * out * safe_log
        return grad_a, grad_b


def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    return Add.apply(*operands("add", input, other))


def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    return Sub.apply(*operands("sub", input, other))


def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product with broadcasting."""
    return Mul.apply(*operands("mul", input, other))


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """Elementwise true division (``rounding_mode`` "floor"/"trunc" give non-differentiable results)."""
    a, b = operands("div", input, other)
    if rounding_mode is None:
        if np.result_type(data_of(a), data_of(b)).kind != "f":
            a = a.float() if isinstance(a, Tensor) else float(a)
            b = b.float() if isinstance(b, Tensor) else float(b)
        return Div.apply(a, b)
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
    if vmapped(a, b):
        return batch_nondifferentiable(lambda x, y: div(x, y, rounding_mode=rounding_mode), a, b)
    da, db = data_of(a), data_of(b)
    quotient = np.floor_divide(da, db) if rounding_mode == "floor" else np.trunc(da / db).astype(np.result_type(da, db))
    return Tensor._wrap(quotient, None, None)


def neg(input: Tensor) -> Tensor:
    """Elementwise negation."""
    return Neg.apply(input)


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - PyTorch's name
    """``input ** exponent`` with broadcasting; either side may be a Python number."""
    a, b = operands("pow", input, exponent)
    base_kind = a._data.dtype.kind if isinstance(a, Tensor) else type(a).__name__[0]
    exponent_data = b._data if isinstance(b, Tensor) else np.asarray(b)
    if base_kind in "ib" and exponent_data.dtype.kind in "iu" and (exponent_data < 0).any():
        raise ValueError("pow: integers to negative integer powers are not allowed")
    return Pow.apply(a, b)
