"""Broadcasting arithmetic: + - * / ** // % and negation, fmod and lerp.

The ops themselves (forward, derivatives, kernels) are rows of the scalar rule table
(numdiff/_ground/scalar_rules.py); this module adds PyTorch's extra arguments (``alpha``,
``rounding_mode``) and pow's integer check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._dtype import bfloat16, cast_array
from numdiff._host_functions import host_function
from numdiff.autograd.function import Function
from numdiff.backend import is_host
from numdiff.ops import _elementwise_eager as elementwise_eager
from numdiff.ops._util import (
    as_result,
    batch_nondifferentiable,
    check_integer_scalar_fits,
    data_of,
    float_operand,
    operands,
    vmapped,
)
from numdiff.ops.elementwise import FUNCTIONS, PUBLIC
from numdiff.ops.registry import register
from numdiff.ops.selection import where
from numdiff.overrides import ForeignOperandError, dispatch, honours_protocol, is_overridable
from numdiff.tensor import Tensor

Add, Sub, Div, Pow = FUNCTIONS["add"], FUNCTIONS["sub"], FUNCTIONS["div"], FUNCTIONS["pow"]

mul = PUBLIC["mul"]
neg = PUBLIC["neg"]


def _add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting.

    >>> numdiff.add(numdiff.tensor([1.0, 2.0]), 1.0, alpha=2)  # doctest: +SKIP
    tensor([3., 4.])
    """
    if alpha != 1 and (is_overridable(input) or is_overridable(other)):  # before mul takes it over
        return dispatch(add, (input, other), {"alpha": alpha})
    try:  # free unless raised: a protocol operand (numdiff.overrides) takes the call over
        return Add.apply(*operands("add", input, other if alpha == 1 else mul(other, alpha)))
    except ForeignOperandError:
        return dispatch(add, (input, other), {} if alpha == 1 else {"alpha": alpha})


def _sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting; a bool operand is refused, as in PyTorch."""
    if _is_bool(input) or _is_bool(other):
        raise BoolOperandError(
            "sub: subtraction, the `-` operator, with a bool tensor is not supported (got "
            f"{_describe(input)} - {_describe(other)}); to invert a mask, use the `~` operator or logical_not()"
        )
    if alpha != 1 and (is_overridable(input) or is_overridable(other)):
        return dispatch(sub, (input, other), {"alpha": alpha})
    try:
        return Sub.apply(*operands("sub", input, other if alpha == 1 else mul(other, alpha)))
    except ForeignOperandError:
        return dispatch(sub, (input, other), {} if alpha == 1 else {"alpha": alpha})


def _div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """Elementwise true division (``rounding_mode`` "floor"/"trunc" give non-differentiable results)."""
    if rounding_mode is None:
        # A Python int divides as a number, not wrapped into an integer tensor's dtype (int8 / 300).
        input, other = (float(x) if isinstance(x, (int, np.integer)) else x for x in (input, other))
    try:
        a, b = operands("div", input, other)
    except ForeignOperandError:
        return dispatch(div, (input, other), {} if rounding_mode is None else {"rounding_mode": rounding_mode})
    if rounding_mode is None:
        if np.result_type(data_of(a), data_of(b)).kind != "f":
            a, b = float_operand(input, a), float_operand(other, b)
        return Div.apply(a, b)
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
    refuse_bool_result(f"div (rounding_mode={rounding_mode!r})", a, b)
    _check_integer_divisor(f"div (rounding_mode={rounding_mode!r})", a, b)
    if vmapped(a, b):
        return batch_nondifferentiable(lambda x, y: div(x, y, rounding_mode=rounding_mode), a, b)
    da, db = data_of(a), data_of(b)
    quotient = np.floor_divide(da, db) if rounding_mode == "floor" else np.trunc(da / db).astype(np.result_type(da, db))
    if bfloat16 in (getattr(a, "dtype", None), getattr(b, "dtype", None)):
        quotient = cast_array(np.asarray(quotient), bfloat16)  # computed in float32, rounded once
    # as_result: NumPy gives a scalar, not a 0-d array, for two 0-d operands.
    return Tensor._wrap(as_result(quotient), None, None)


def _eager(name: str, function: type[Function], ufunc: Any, general: Any) -> Any:
    """`general` with the elementwise eager fast path in front (ops/_elementwise_eager.py), exported
    as `name`; a call with alpha or rounding_mode goes to `general`."""
    fast = honours_protocol(elementwise_eager.binary(function, ufunc, general))
    fast.__name__ = fast.__qualname__ = name
    return fast


add = _eager("add", Add, np.add, _add)
sub = _eager("sub", Sub, np.subtract, _sub)
# Traced as a host call under numdiff.compile and vmap (host_function), inside the general path.
div = _eager("div", Div, np.true_divide, host_function(_div))


def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other``, rounded toward minus infinity (no gradient), as Python and PyTorch."""
    refuse_bool_result("floor_divide", input, other)
    _check_integer_divisor("floor_divide", input, other)
    return div(input, other, rounding_mode="floor")


def _check_integer_divisor(op: str, input: Any, other: Any) -> None:
    """An integer division by zero is an error, as in PyTorch (floats give inf or NaN)."""
    a, b = data_of(input), data_of(other)
    if not all(np.broadcast_shapes(np.shape(a), np.shape(b))):
        return  # an empty result divides nothing, whatever the divisor holds (PyTorch returns it)
    if np.result_type(a, b).kind in "iub" and (b == 0 if is_host(b) else np.asarray(b == 0)).any():
        raise ZeroDivisionError(f"{op}: integer division by zero")


class _Modulo(Function):
    """fmod and remainder: d/dinput = 1, d/dother = -(input / other rounded as the op rounds)."""

    rounding = ""
    ufunc: Any = None

    @classmethod
    def forward(cls, ctx, x, y):
        ctx.save_for_backward(x, y)
        return cls.ufunc(x, y)

    @classmethod
    def backward(cls, ctx, grad):
        x, y = ctx.saved_tensors
        grad_x = grad if ctx.needs_input_grad[0] else None
        grad_y = -grad * div(x, y, rounding_mode=cls.rounding) if ctx.needs_input_grad[1] else None
        return grad_x, grad_y


@register("fmod", compile="call")
class Fmod(_Modulo):
    """C's fmod: the remainder of division rounded toward zero, with the dividend's sign."""

    rounding, ufunc = "trunc", np.fmod


def _python_modulo(x: Any, y: Any) -> Any:
    """fmod moved by one divisor where the signs differ: PyTorch's remainder, -0.0 included
    (NumPy's np.remainder gives +0.0 for -7.5 % 0.5)."""
    m = np.fmod(x, y)
    return np.where((m != 0) & ((y < 0) != (m < 0)), m + y, m)


@register("remainder", compile="call")
class Remainder(_Modulo):
    """Python's modulo: the remainder of floor division, with the divisor's sign."""

    rounding, ufunc = "floor", staticmethod(_python_modulo)


def _modulo(op: str, function: type[Function], input: Any, other: Any) -> Tensor:
    try:
        a, b = operands(op, input, other)
    except ForeignOperandError:
        return dispatch(fmod if op == "fmod" else remainder, (input, other), {})
    refuse_bool_result(op, a, b)
    _check_integer_divisor(op, a, b)
    return function.apply(a, b)


@honours_protocol
def fmod(input: Any, other: Any) -> Tensor:
    """Elementwise C fmod (sign of `input`); gradient 1 for input, -trunc(input / other) for other."""
    return _modulo("fmod", Fmod, input, other)


@honours_protocol
def remainder(input: Any, other: Any) -> Tensor:
    """Elementwise Python modulo, ``input % other`` (sign of `other`); gradient 1 for input,
    -floor(input / other) for other."""
    return _modulo("remainder", Remainder, input, other)


@honours_protocol
def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - PyTorch's name
    """``input ** exponent`` with broadcasting; either side may be a Python number. Integers to
    negative integer powers follow PyTorch: an error for a Python exponent, and for a tensor
    exponent 1 ** n = 1, (-1) ** n = +-1 and 0 for every other base."""
    if isinstance(input, Tensor) and input._data.dtype.kind == "b" and isinstance(exponent, (bool, np.bool_)):
        # PyTorch's shortcut, kept for parity: x ** True is x, x ** False is ones, both bool.
        return input.clone() if exponent else input.new_ones(tuple(input.shape))
    if isinstance(input, Tensor) and input._data.dtype.kind in "iub" and isinstance(exponent, (int, np.integer)):
        if exponent < 0:
            raise ValueError(f"pow: integers to negative integer powers are not allowed (exponent {exponent})")
        check_integer_scalar_fits("pow", exponent, input)  # the exponent is not wrapped: uint8 ** 300 is refused
    try:
        a, b = operands("pow", input, exponent)
    except ForeignOperandError:
        return dispatch(pow, (input, exponent), {})
    refuse_bool_result("pow", a, b)
    base_data, exponent_data = data_of(a), data_of(b)
    integral = np.result_type(base_data, exponent_data).kind in "iub"
    if integral and isinstance(b, Tensor) and (exponent_data < 0).any():
        if vmapped(a, b):
            return batch_nondifferentiable(pow, a, b)
        return Tensor._wrap(as_result(_integer_power(base_data, exponent_data)), None, None)
    return Pow.apply(a, b)


def _integer_power(base: Any, exponent: Any) -> Any:
    """Integer ``base ** exponent`` where some exponents are negative: 1 ** n = 1, (-1) ** n is
    -1 for odd n, and every other base gives 0 (the integer part of 1 / base ** |n|)."""
    positive = np.power(base, np.maximum(exponent, 0))
    odd = (exponent % 2) != 0
    reciprocal = np.where(base == 1, 1, np.where(base == -1, np.where(odd, -1, 1), 0))
    return np.where(exponent < 0, reciprocal, positive).astype(positive.dtype)


class BoolOperandError(RuntimeError):
    """Arithmetic that PyTorch does not define on bool tensors: subtraction, and floor division,
    remainder and pow whose operands are all bool."""


class BoolResultError(BoolOperandError, NotImplementedError):
    """floor division, remainder, fmod or pow with a bool result (PyTorch: not implemented for 'Bool')."""


def _is_bool(x: Any) -> bool:
    return isinstance(x, (bool, np.bool_)) or (isinstance(x, Tensor) and x._data.dtype.kind == "b")


def _describe(x: Any) -> str:
    return f"a {x.dtype!r} tensor" if isinstance(x, Tensor) else f"{type(x).__name__} {x!r}"


def refuse_bool_result(op: str, a: Any, b: Any) -> None:
    """Refuse `op` when both operands (promoted) are bool: PyTorch has no bool kernel for it."""
    if _is_bool(a) and _is_bool(b):
        raise BoolResultError(
            f"{op}: not implemented for bool operands ({_describe(a)} and {_describe(b)}); "
            "convert one to an integer dtype first, e.g. x.long()"
        )


def lerp(input: Any, end: Any, weight: Any) -> Tensor:
    """``input + weight * (end - input)``, computed as PyTorch does: from `end` where |weight| >= 0.5,
    ``end - (end - input) * (1 - weight)``, so a weight of 1 gives `end` exactly. `weight` is a number
    or a tensor; all three broadcast."""
    if not isinstance(input, Tensor):
        raise TypeError(f"lerp: input must be a Tensor, got {type(input).__name__}")
    difference = sub(end, input)
    if isinstance(weight, Tensor):
        near_start = weight.abs() < 0.5
        return where(near_start, add(input, mul(weight, difference)), sub(end, mul(difference, sub(1.0, weight))))
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise TypeError(f"lerp: weight must be a number or a Tensor, got {type(weight).__name__}")
    if abs(weight) < 0.5:
        return add(input, mul(difference, float(weight)))
    return sub(end, mul(difference, 1.0 - weight))


# PyTorch's other names for the same functions.
multiply = mul
subtract = sub
divide = div
true_divide = div
negative = neg
