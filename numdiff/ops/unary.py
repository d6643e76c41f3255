"""Elementwise unary functions, each with its derivative beside it.

Where the derivative is cheapest in terms of the result (exp, sqrt, tanh, sigmoid), the op saves
its output instead of its input.
"""

from __future__ import annotations

import math

import numpy as np

from numdiff._dtype import check_computable
from numdiff.autograd.function import Function
from numdiff.ops.registry import register
from numdiff.tensor import Tensor


def _float_input(op: str, x: Tensor) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x._data.dtype.kind != "f":
        check_computable(op, x._data)  # bfloat16 would pass as float32 here, silently
        return x.float()
    return x


@register("exp")
class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        out = np.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad * out,)


@register("log")
class Log(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad / x,)


@register("log1p")
class Log1p(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log1p(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad / (x + 1),)


@register("expm1")
class Expm1(Function):
    @staticmethod
    def forward(ctx, x):
        out = np.expm1(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad * (out + 1),)


@register("sqrt")
class Sqrt(Function):
    @staticmethod
    def forward(ctx, x):
        out = np.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad / (2 * out),)


@register("rsqrt")
class Rsqrt(Function):
    @staticmethod
    def forward(ctx, x):
        out = 1 / np.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad * -0.5 * out * out * out,)


@register("abs")
class Abs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad * x.sign(),)


@register("sign")
class Sign(Function):
    """sign(x); its derivative is zero wherever it exists, as in PyTorch."""

    @staticmethod
    def forward(ctx, x):
        return np.sign(x)

    @staticmethod
    def backward(ctx, grad):
        return (grad * 0,)


@register("sin")
class Sin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad * x.cos(),)


@register("cos")
class Cos(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.cos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (-grad * x.sin(),)


@register("tanh")
class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        out = np.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad * (1 - out * out),)


@register("sigmoid")
class Sigmoid(Function):
    @staticmethod
    def forward(ctx, x):
        # exp of a non-positive number never overflows, whichever sign x has.
        z = np.exp(-np.abs(x))
        out = np.where(x >= 0, 1 / (1 + z), z / (1 + z)).astype(x.dtype, copy=False)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad * out * (1 - out),)


@register("erf")
class Erf(Function):
    @staticmethod
    def forward(ctx, x):
        from numdiff.backend import backend_for

        ctx.save_for_backward(x)
        return backend_for(x).erf(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad * (2 / math.sqrt(math.pi)) * (-(x * x)).exp(),)


def _unary(op: type[Function]):
    def function(input: Tensor) -> Tensor:
        return op.apply(_float_input(op.op_name, input))

    function.__name__ = op.op_name
    function.__doc__ = f"Elementwise {op.op_name} (integer inputs are converted to float32)."
    return function


exp = _unary(Exp)
log = _unary(Log)
log1p = _unary(Log1p)
expm1 = _unary(Expm1)
sqrt = _unary(Sqrt)
rsqrt = _unary(Rsqrt)
sin = _unary(Sin)
cos = _unary(Cos)
tanh = _unary(Tanh)
sigmoid = _unary(Sigmoid)
erf = _unary(Erf)


def abs(input: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """Elementwise absolute value (keeps integer dtypes)."""
    return Abs.apply(input)


def sign(input: Tensor) -> Tensor:
    """Elementwise sign: -1, 0 or 1 (keeps integer dtypes)."""
    return Sign.apply(input)
