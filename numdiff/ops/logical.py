"""Comparisons and logical ops: no gradient, bool results."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._host_functions import host_function
from numdiff.ops._util import as_result, data_of, operands, vmapped
from numdiff.tensor import Tensor


def _compare(op: str, ufunc):
    def compare(input: Any, other: Any) -> Tensor:
        a, b = operands(op, input, other)
        return Tensor._wrap(as_result(ufunc(data_of(a), data_of(b))), None, None)

    compare.__name__ = op
    compare.__doc__ = f"Elementwise `{op}` comparison with broadcasting; a bool tensor with no gradient."
    return host_function(compare, elementwise=True)


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
        a, b = operands(op, input, other)
        da, db = data_of(a), data_of(b)
        if np.result_type(da, db).kind not in "biu":
            raise TypeError(f"{op}: expected bool or integer operands, got {np.result_type(da, db)}")
        return Tensor._wrap(as_result(ufunc(da, db)), None, None)

    combine.__name__ = op
    return host_function(combine, elementwise=True)


bitwise_and = _logical("bitwise_and", np.bitwise_and)
bitwise_or = _logical("bitwise_or", np.bitwise_or)
bitwise_xor = _logical("bitwise_xor", np.bitwise_xor)


@host_function(elementwise=True)
def logical_not(input: Tensor) -> Tensor:
    """Elementwise not (nonzero counts as True)."""
    return Tensor._wrap(as_result(np.logical_not(input._data)), None, None)


@host_function(elementwise=True)
def bitwise_not(input: Tensor) -> Tensor:
    """~x: logical not for bool tensors, bitwise for integers."""
    if input._data.dtype.kind not in "biu":
        raise TypeError(f"bitwise_not (~): expected a bool or integer tensor, got {input.dtype!r}")
    return Tensor._wrap(as_result(np.invert(input._data)), None, None)


@host_function(elementwise=True)
def isfinite(input: Tensor) -> Tensor:
    """True where an element is neither inf nor NaN (integers and bools: everywhere)."""
    return Tensor._wrap(as_result(np.isfinite(input._data)), None, None)


@host_function(elementwise=True)
def isnan(input: Tensor) -> Tensor:
    """True where an element is NaN."""
    return Tensor._wrap(as_result(np.isnan(input._data)), None, None)


@host_function(elementwise=True)
def isinf(input: Tensor) -> Tensor:
    """True where an element is +inf or -inf."""
    return Tensor._wrap(as_result(np.isinf(input._data)), None, None)


@host_function
def all(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where all elements (along `dim`) are nonzero."""
    if vmapped(input):
        return ~_any_under_vmap(input == 0, dim, keepdim)
    return Tensor._wrap(as_result(np.all(input._data, axis=dim, keepdims=keepdim)), None, None)


@host_function
def any(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where any element (along `dim`) is nonzero."""
    if vmapped(input):
        return _any_under_vmap(input, dim, keepdim)
    return Tensor._wrap(as_result(np.any(input._data, axis=dim, keepdims=keepdim)), None, None)


def _any_under_vmap(input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """any() for a vmap-batched tensor, through ops that have batching rules."""
    nonzero = (input != 0).to(_dtype.float32)
    return nonzero.amax(() if dim is None else dim, keepdim) > 0


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    """True if all elements are close: |input - other| <= atol + rtol * |other|."""
    return bool(np.allclose(input.detach().cpu().numpy(), other.detach().cpu().numpy(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements."""
    return input.shape == other.shape and bool(np.array_equal(input.detach().cpu().numpy(), other.detach().cpu().numpy()))
