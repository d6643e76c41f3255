"""Integer arguments of conv and pooling (kernel_size, stride, padding, dilation, output_size),
checked once for every layer that takes them: the ops (numdiff.ops.conv, numdiff.ops.pool) and
the CPU and CUDA kernels.

Every value is bounded by :data:`GEOMETRY_LIMIT` (PyTorch's own pooling limit, the int32 range)
so that no index arithmetic in a compiled kernel can overflow int64: a padded extent is an
array size plus two values of at most 2**31, and the largest product a kernel forms (an average
pool's padded window area) is two such values. Bools, floats, None and nested sequences are a
TypeError; a wrong length or a value out of range is a ValueError; both name the op, the
argument and the value.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "GEOMETRY_LIMIT",
    "MAX_OUTPUT_ELEMENTS",
    "check_output_elements",
    "int_tuple",
    "is_int",
    "remember_checks",
]

_Check = TypeVar("_Check", bound=Callable[..., Any])

GEOMETRY_LIMIT = 2**31 - 1
"""Largest kernel size, stride, padding, dilation or adaptive output size accepted."""

MAX_OUTPUT_ELEMENTS = 2**36
"""Largest number of elements a conv or pooling output may have (256 GiB in float32): far past
any real layer, and refused before an allocation that would only fail or swap."""


def is_int(value: Any) -> bool:
    """True for a Python or NumPy integer (bool excluded).

    >>> is_int(3), is_int(True), is_int(2.0)
    (True, False, False)
    """
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return not hasattr(value, "dtype") or getattr(value, "ndim", 0) == 0


def int_tuple(
    op: str,
    name: str,
    value: Any,
    n: int,
    minimum: int,
    *,
    expand: bool = False,
    maximum: int = GEOMETRY_LIMIT,
) -> tuple[int, ...]:
    """`value` as a tuple of `n` Python ints, each in ``[minimum, maximum]``.

    With ``expand=True`` (PyTorch's functional API) an int or a 1-sequence is repeated n times;
    otherwise (the kernels) exactly n ints are required.

    >>> int_tuple("max_pool2d", "stride", 2, 2, 1, expand=True)
    (2, 2)
    >>> int_tuple("conv2d", "padding", (0, 1, 2, 3), 4, 0)
    (0, 1, 2, 3)
    """
    if expand and type(value) is int and minimum <= value <= maximum:
        return (value,) * n  # a layer's plain int argument (MaxPool2d(2)), likewise
    if type(value) is tuple and len(value) == n:
        # The common call, from an op to its kernel: already n plain ints (bool is not `int`
        # by type). Checked here without the general path's conversions, which cost more than
        # a small convolution's Python work otherwise.
        for v in value:
            if type(v) is not int or v < minimum or v > maximum:
                break
        else:
            return value
    shape = f"an int or {n} ints" if expand else f"{n} ints"
    if expand and is_int(value):
        values: tuple = (value,) * n
    elif isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{op}: {name} must be {shape}, got {value!r} ({type(value).__name__})")
    else:
        values = tuple(value)
        if expand and len(values) == 1:
            values = values * n
    bad = [v for v in values if not is_int(v)]
    if bad:
        raise TypeError(f"{op}: {name} must be {shape}, got {value!r} (holding {type(bad[0]).__name__})")
    if len(values) != n:
        raise ValueError(f"{op}: {name} must be {shape}, got {value!r}")
    ints = tuple(operator.index(v) for v in values)
    for v in ints:
        if v < minimum:
            bound = {1: "positive", 0: "non-negative"}.get(minimum, f"at least {minimum}")
            raise ValueError(f"{op}: {name} must be {bound}, got {value!r}")
        if v > maximum:
            raise ValueError(f"{op}: {name} must be at most {maximum}, got {value!r}")
    return ints


def check_output_elements(op: str, shape: tuple[int, ...]) -> None:
    """Refuse an output of more than :data:`MAX_OUTPUT_ELEMENTS` elements before allocating it.
    Zero sizes count as 1: NumPy cannot make even an empty array whose other sizes overflow.

    >>> check_output_elements("conv2d", (0, 1, 4, 4))
    """
    count = 1
    for s in shape:
        count *= max(int(s), 1)
    if count > MAX_OUTPUT_ELEMENTS:
        raise ValueError(
            f"{op}: the output would have shape {tuple(shape)} ({count} elements, more than "
            f"{MAX_OUTPUT_ELEMENTS}); check padding, stride and output_size"
        )


def remember_checks(check: _Check) -> _Check:
    """`check` (a pure function that validates and sizes a layer's configuration, returning a
    result or raising) remembering its results for plain arguments: ints, bools, strings, None,
    and tuples of ints, as shapes and normalised strides and paddings are.

    Other arguments are checked afresh on every call. Inside a tuple only ints count as plain:
    1.0 and True compare (and hash) equal to 1, so remembering ``(1.0, 1)`` would let it reuse the
    result of ``(1, 1)`` instead of raising. Top-level arguments are remembered by type as well
    as value (``lru_cache(typed=True)``), so ``stride=True`` is never taken for ``stride=1``.
    Errors are never remembered (lru_cache keeps only returns). A small convolution's or pooling's
    Python checks cost more than its kernel without this.

    >>> calls = []
    >>> @remember_checks
    ... def double(n): calls.append(n); return 2 * n
    >>> double(3), double(3), double(True), double(3.0), len(calls)
    (6, 6, 2, 6.0, 3)
    """
    remembered = functools.lru_cache(maxsize=1024, typed=True)(check)

    @functools.wraps(check)
    def call(*args: Any) -> Any:
        for arg in args:
            kind = type(arg)
            if kind is tuple:
                for item in arg:
                    if type(item) is not int:
                        return check(*args)
            elif kind is not int and kind is not str and kind is not bool and arg is not None:
                return check(*args)
        return remembered(*args)

    call.cache_clear = remembered.cache_clear  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]
