"""Comparisons and logical ops: no gradient, bool results."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._host_functions import host_function
from numdiff.ops._util import as_result, data_of, operands, vmapped
from numdiff.overrides import ForeignOperandError, dispatch, honours_protocol
from numdiff.tensor import Tensor


def _compare(op: str, ufunc):
    def compare(input: Any, other: Any) -> Tensor:
        try:
            a, b = operands(op, input, other)
        except ForeignOperandError:  # a protocol operand (numdiff.overrides) takes the call over
            return dispatch(public, (input, other), {})
        return Tensor._wrap(as_result(ufunc(data_of(a), data_of(b))), None, None)

    compare.__name__ = op
    compare.__doc__ = f"Elementwise `{op}` comparison with broadcasting; a bool tensor with no gradient."
    public = honours_protocol(host_function(compare, elementwise=True))
    return public


eq = _compare("eq", np.equal)
ne = _compare("ne", np.not_equal)
lt = _compare("lt", np.less)
le = _compare("le", np.less_equal)
gt = _compare("gt", np.greater)
ge = _compare("ge", np.greater_equal)
logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)
logical_xor = _compare("logical_xor", np.logical_xor)


def _logical(op: str, ufunc):
    def combine(input: Any, other: Any) -> Tensor:
        try:
            a, b = operands(op, input, other)
        except ForeignOperandError:  # a protocol operand (numdiff.overrides) takes the call over
            return dispatch(public, (input, other), {})
        da, db = data_of(a), data_of(b)
        if np.result_type(da, db).kind not in "biu":
            raise TypeError(f"{op}: expected bool or integer operands, got {np.result_type(da, db)}")
        return Tensor._wrap(as_result(ufunc(da, db)), None, None)

    combine.__name__ = op
    combine.__doc__ = f"Elementwise `{op}` of bool or integer tensors (or one and a Python int), with broadcasting."
    public = honours_protocol(host_function(combine, elementwise=True))
    return public


def _shift_left(x: Any, shift: Any) -> Any:
    """PyTorch's <<: bits shifted out are lost (int8 1 << 7 is -128); a shift below 0 or past the
    width gives 0 (NumPy's, like C's, is undefined there)."""
    x = np.asarray(x)
    bits = 8 * x.dtype.itemsize
    valid = (shift >= 0) & (shift < bits)
    shifted = np.left_shift(x, np.where(valid, shift, 0).astype(x.dtype))
    return np.where(valid, shifted, 0).astype(x.dtype)


def _shift_right(x: Any, shift: Any) -> Any:
    """PyTorch's >>: arithmetic for signed dtypes; a shift below 0 or past the width gives the
    sign fill (-1 or 0)."""
    x = np.asarray(x)
    bits = 8 * x.dtype.itemsize
    valid = (shift >= 0) & (shift < bits)
    shifted = np.right_shift(x, np.where(valid, shift, 0).astype(x.dtype))
    fill = np.right_shift(x, bits - 1) if x.dtype.kind == "i" else np.zeros_like(x)
    return np.where(valid, shifted, fill).astype(x.dtype)


def _shift(op: str, shift_array):
    def shift(input: Any, other: Any) -> Tensor:
        try:
            a, b = operands(op, input, other)
        except ForeignOperandError:  # a protocol operand (numdiff.overrides) takes the call over
            return dispatch(public, (input, other), {})
        da, db = data_of(a), data_of(b)
        kind = np.result_type(da, db).kind
        if kind not in "iu":
            what = "bool" if kind == "b" else str(np.result_type(da, db))
            raise TypeError(f"{op}: not implemented for {what} operands; shifts take integer tensors")
        if not isinstance(a, Tensor):  # a Python int shifted by a tensor: shift in the tensor's dtype
            da = np.asarray(da, dtype=db.dtype)
        return Tensor._wrap(as_result(shift_array(da, db)), None, None)

    shift.__name__ = op
    shift.__doc__ = f"Elementwise `{op}` of integer tensors, with PyTorch's results for out-of-range shifts."
    public = honours_protocol(host_function(shift, elementwise=True))
    return public


bitwise_left_shift = _shift("bitwise_left_shift", _shift_left)
bitwise_right_shift = _shift("bitwise_right_shift", _shift_right)
bitwise_and = _logical("bitwise_and", np.bitwise_and)
bitwise_or = _logical("bitwise_or", np.bitwise_or)
bitwise_xor = _logical("bitwise_xor", np.bitwise_xor)


@host_function(elementwise=True)
def logical_not(input: Tensor) -> Tensor:
    """Elementwise not (nonzero counts as True)."""
    return Tensor._wrap(as_result(np.logical_not(data_of(input))), None, None)


@host_function(elementwise=True)
def bitwise_not(input: Tensor) -> Tensor:
    """~x: logical not for bool tensors, bitwise for integers."""
    if input._data.dtype.kind not in "biu":
        raise TypeError(f"bitwise_not (~): expected a bool or integer tensor, got {input.dtype!r}")
    return Tensor._wrap(as_result(np.invert(input._data)), None, None)


@host_function(elementwise=True)
def isfinite(input: Tensor) -> Tensor:
    """True where an element is neither inf nor NaN (integers and bools: everywhere)."""
    return Tensor._wrap(as_result(np.isfinite(data_of(input))), None, None)


@host_function(elementwise=True)
def isnan(input: Tensor) -> Tensor:
    """True where an element is NaN."""
    return Tensor._wrap(as_result(np.isnan(data_of(input))), None, None)


@host_function(elementwise=True)
def isinf(input: Tensor) -> Tensor:
    """True where an element is +inf or -inf."""
    return Tensor._wrap(as_result(np.isinf(data_of(input))), None, None)


@host_function(elementwise=True)
def isposinf(input: Tensor) -> Tensor:
    """True where an element is +inf."""
    return Tensor._wrap(as_result(np.isposinf(data_of(input))), None, None)


@host_function(elementwise=True)
def isneginf(input: Tensor) -> Tensor:
    """True where an element is -inf."""
    return Tensor._wrap(as_result(np.isneginf(data_of(input))), None, None)


@host_function(elementwise=True)
def isreal(input: Tensor) -> Tensor:
    """True everywhere: numdiff's tensors are real."""
    return Tensor._wrap(as_result(np.isreal(data_of(input))), None, None)


@host_function(elementwise=True)
def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set: negative numbers, -0.0 and NaNs with the bit."""
    return Tensor._wrap(as_result(np.signbit(data_of(input))), None, None)


@host_function
def all(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where all elements (along `dim`) are nonzero."""
    if vmapped(input):
        return ~_any_under_vmap(input == 0, dim, keepdim)
    return Tensor._wrap(_as_uint8_for_uint8(np.all(data_of(input), axis=dim, keepdims=keepdim), input), None, None)


@host_function
def any(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where any element (along `dim`) is nonzero."""
    if vmapped(input):
        return _any_under_vmap(input, dim, keepdim)
    return Tensor._wrap(_as_uint8_for_uint8(np.any(data_of(input), axis=dim, keepdims=keepdim), input), None, None)


def _as_uint8_for_uint8(result: Any, input: Tensor) -> Any:
    """all and any of a uint8 tensor are uint8 in PyTorch (a leftover of masks before bool)."""
    result = as_result(result)
    return result.astype(np.uint8) if input._data.dtype == np.uint8 else result


def _any_under_vmap(input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """any() for a vmap-batched tensor, through ops that have batching rules."""
    nonzero = (input != 0).to(_dtype.float32)
    return nonzero.amax(() if dim is None else dim, keepdim) > 0


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    """True if all elements are close: |input - other| <= atol + rtol * |other|."""
    return bool(np.allclose(input._host_values(), other._host_values(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements."""
    return input.shape == other.shape and bool(np.array_equal(input._host_values(), other._host_values()))
