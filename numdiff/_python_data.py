"""Python data as NumPy arrays for tensor(), with PyTorch's dtype rules: the dtype a Python number
or nested list gets, and the Python numbers refused because they do not fit it."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._scalar_convert import ScalarOverflowError
from numdiff.backend import is_numpy, to_host
from numdiff.tensor import Tensor


def as_array(data: Any, dtype: Any) -> np.ndarray:
    """A fresh NumPy array from Python data, arrays or tensors, with PyTorch's dtype defaults.

    Python numbers are checked as PyTorch checks them: an int beyond int64 where the result is
    integer, or a value outside an explicit integer dtype's range, is refused (ScalarOverflowError)
    instead of wrapping or silently becoming a float."""
    target = None if dtype is None else _dtype.to_dtype(dtype)
    python_data = not (is_numpy(data) or isinstance(data, (np.generic, Tensor)))
    if isinstance(data, Tensor):
        array = np.array(to_host(data._data))
    elif isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        array = _array_of_tensors(data)
        python_data = False
    else:
        array = _python_array(data, target) if python_data else np.array(data)
    if target is None and python_data and isinstance(data, (list, tuple)):
        numpy_items = _dtype_of_numpy_items(data)
        if numpy_items is not None:
            return array if array.dtype == numpy_items.numpy else _dtype.cast_array(array, numpy_items)
    if target is not None:
        if python_data:
            _check_python_values("tensor", array, target)
        return array if array.dtype == target.numpy else _dtype.cast_array(array, target)
    kind = array.dtype.kind
    if kind == "f" and python_data:
        return array.astype(_dtype.get_default_dtype().numpy)  # float32 unless set_default_dtype
    if kind in "iu" and python_data:
        return array.astype(np.int64)
    if kind in "US" or array.dtype == object:
        raise TypeError(f"tensor: could not build a numeric tensor from {type(data).__name__} data of dtype {array.dtype}")
    _dtype.from_numpy(array.dtype)  # refuses uint32, complex etc. with the supported list
    return array


def _array_of_tensors(data: list | tuple) -> np.ndarray:
    """A list holding tensors (``tensor([t0, t1])``): their values in their promoted dtype, as in
    PyTorch (float32 and int64 elements give float32, where NumPy would make float64)."""
    leaves = list(_flat(data))
    if all(isinstance(x, Tensor) for x in leaves):
        target = functools.reduce(_dtype.promote, (x.dtype for x in leaves))
        values = np.array(_host_values_nested(data))
        return values if values.dtype == target.numpy else _dtype.cast_array(values, target)
    return np.array([as_array(x, None) for x in data])


def _dtype_of_numpy_items(data: list | tuple) -> _dtype.dtype | None:
    """The dtype of a list that holds NumPy scalars or arrays, None if it holds none: PyTorch
    promotes the items' own dtypes, a Python float counting as the default float dtype
    (``[np.float64(0.1), 2.0]`` is float64, ``[np.float32(1)]`` float32 even under a float64
    default, ``[np.int16(1), 2]`` int64), where NumPy's values alone would give the default."""
    items = list(_flat(data))
    if not any(isinstance(x, np.generic) or is_numpy(x) for x in items):
        return None
    dtypes = (_dtype.from_numpy(x.dtype) if is_numpy(x) else number_dtype("tensor", x) for x in items)
    return functools.reduce(_dtype.promote, dtypes)


def _host_values_nested(data: Any) -> Any:
    if isinstance(data, Tensor):
        return data._host_values()  # bfloat16 widened exactly, to be cast back with the rest
    return [_host_values_nested(x) for x in data]


def _python_array(data: Any, target: _dtype.dtype | None) -> np.ndarray:
    """np.array(data) for Python numbers, where NumPy's own inference would hide an int beyond
    int64: it makes [2**63] uint64, [1, 2**63] float64 and [2**64] an object array. PyTorch
    refuses such ints unless the result is floating."""
    array = np.array(data)
    kind = array.dtype.kind
    # fmax skips NaNs as nanmax does, without nanmax's warning for numdiff.tensor(float("nan")).
    if kind == "f" and not (array.size and np.fmax.reduce(np.abs(array), axis=None, initial=0.0) >= 2.0**63):
        return array
    if kind not in "Ouf":
        return array
    items = list(_flat(data)) if isinstance(data, (list, tuple)) else [data]
    integral = all(isinstance(x, (int, np.integer)) for x in items)
    if integral and (target is None or not target.is_floating_point):
        big = next((int(x) for x in items if not -(1 << 63) <= int(x) < (1 << 63)), None)
        if big is not None:
            raise ScalarOverflowError(
                f"tensor: the Python int {big} does not fit int64, the largest integer dtype "
                "(PyTorch: 'Overflow when unpacking long long'); pass dtype=numdiff.float64 to store it as a float"
            )
    if kind in "Ou" and all(isinstance(x, (int, float, np.number)) for x in items):
        return array.astype(np.float64)  # an int beyond int64 among floats, or for a float dtype
    return array


def _check_python_values(op: str, array: np.ndarray, target: _dtype.dtype) -> None:
    """Refuse Python numbers that do not fit an explicit integer dtype (PyTorch's checked rule,
    see numdiff._scalar_convert): 300 or -0.5 into uint8, 1e20 into int64, NaN into an integer."""
    if target.numpy.kind not in "iu" or array.dtype.kind not in "iuf" or array.size == 0 or array.dtype == target.numpy:
        return  # (ints NumPy stored in the target's own dtype fit it)
    info = np.iinfo(target.numpy)
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array) | (array < info.min) | (array > info.max)
    else:
        low = -int(info.max) if target.numpy.kind == "u" else int(info.min)
        bad = (array < low) | (array > info.max)
    if bad.any():
        value = array[bad].flat[0].item()
        raise ScalarOverflowError(f"{op}: value {value!r} cannot be converted to type {target.name} without overflow")


def _flat(data: Any):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def number_dtype(op: str, value: Any) -> _dtype.dtype:
    """The dtype PyTorch gives a Python number: bool, int64 or the default float dtype."""
    if isinstance(value, (bool, np.bool_)):
        return _dtype.bool_
    if isinstance(value, np.generic):
        return _dtype.from_numpy(value.dtype)
    if isinstance(value, int):
        return _dtype.int64
    if isinstance(value, float):
        return _dtype.get_default_dtype()
    raise TypeError(f"{op}: expected a number, got {type(value).__name__}")
