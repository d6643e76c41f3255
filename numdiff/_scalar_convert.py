"""Python numbers into tensor dtypes, by PyTorch's two rules.

- Written into a tensor (``tensor(300, dtype=uint8)``, ``full``, ``fill_``, ``t[0] = v``,
  ``masked_fill``, ``where``, ``clamp``): the value must fit, or it is an error. A float must lie
  within the integer range (NaN and inf never do); an int must lie within a signed dtype's range,
  or within [-max, max] for uint8 (PyTorch's c10::checked_convert lets -1 through as 255).
- An operand of arithmetic (``int8_tensor + 300``, ``uint8_tensor < -3``): the int is wrapped
  into the tensor's dtype, two's complement, as PyTorch's kernels cast it; ints beyond
  [-2**63, 2**64) cannot be held by any of them and are refused.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from numdiff import _dtype


class ScalarOverflowError(RuntimeError, ValueError):
    """A Python number does not fit the dtype it is written into (PyTorch raises RuntimeError for
    a checked conversion and ValueError for an int beyond int64; this is both)."""


def _overflow(op: str, value: Any, target: _dtype.dtype) -> ScalarOverflowError:
    return ScalarOverflowError(
        f"{op}: value {value!r} cannot be converted to type {target.name} without overflow"
        + (f" (its range is [{np.iinfo(target.numpy).min}, {np.iinfo(target.numpy).max}])"
           if target.numpy.kind in "iu" else "")
    )


def fits(value: Any, target: _dtype.dtype, *, float_range: bool = False) -> bool:
    """Whether the Python number `value` converts to `target` by PyTorch's checked rule.
    `float_range`: also refuse finite floats beyond a floating dtype's largest value (``fill_``)."""
    kind = target.numpy.kind
    if kind == "b" or isinstance(value, (bool, np.bool_)):
        return True
    if kind in "iu":
        info = _iinfo(target.numpy)
        if isinstance(value, (int, np.integer)):
            low = -int(info.max) if kind == "u" else int(info.min)
            return low <= int(value) <= int(info.max)
        value = float(value)
        return math.isfinite(value) and info.min <= value <= info.max
    if float_range and isinstance(value, (float, np.floating)) and math.isfinite(value):
        largest = _dtype_max(target)
        return abs(float(value)) <= largest
    return True


@functools.cache
def _iinfo(dtype: np.dtype) -> np.iinfo:
    """np.iinfo, made once per dtype (NumPy builds a new one on every call)."""
    return np.iinfo(dtype)


def _dtype_max(target: _dtype.dtype) -> float:
    if target is _dtype.bfloat16:
        return float(np.float32((2 - 2.0**-7) * 2.0**127))
    return float(np.finfo(target.numpy).max)


def checked_array(op: str, value: Any, target: _dtype.dtype, *, float_range: bool = False) -> np.ndarray:
    """The Python number `value` as a 0-d array in `target`'s storage, or ScalarOverflowError
    naming `op` when it does not fit (see the module docstring)."""
    if not fits(value, target, float_range=float_range):
        raise _overflow(op, value, target)
    if target.numpy.kind == "u" and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = int(value) % (1 << (8 * target.itemsize))  # -1 -> 255, as in PyTorch
    if target is _dtype.bfloat16:
        return _dtype.cast_array(np.asarray(value, dtype=np.float32), target)
    if target.numpy.kind in "iu" and isinstance(value, (float, np.floating)):
        value = math.trunc(value)
    return np.asarray(value, dtype=target.numpy)


_INT_RANGES = {
    np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
    for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)
}


def wrapped_int(op: str, value: int, target: np.dtype) -> int:
    """The Python int `value` wrapped into the integer dtype `target` (two's complement), as
    PyTorch's kernels cast an integer operand: ``int8 + 300`` adds 44."""
    low, high = _INT_RANGES[target]
    if low <= value <= high:  # the common case: nothing to wrap
        return value
    if not -(1 << 63) <= value < (1 << 64):
        raise OverflowError(f"{op}: the Python int {value} is too big to convert to any tensor dtype")
    bits = 8 * target.itemsize
    wrapped = value % (1 << bits)
    if target.kind == "i" and wrapped >= 1 << (bits - 1):
        wrapped -= 1 << bits
    return wrapped
