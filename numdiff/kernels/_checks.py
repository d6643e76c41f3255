"""Argument checks run in Python before a compiled kernel touches memory.

A Numba kernel that indexes out of bounds corrupts memory instead of raising, so every public
kernel validates dtypes, layout and shapes here first. Errors name the kernel, the argument and
the values involved.
"""

from __future__ import annotations

import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_float_arrays(op: str, **arrays: np.ndarray) -> None:
    """Require C-contiguous float32/float64 ndarrays that all share one dtype.

    >>> check_float_arrays("k", x=np.zeros(2), y=np.zeros(3))
    """
    dtype = None
    for name, arr in arrays.items():
        if type(arr) is not np.ndarray and not isinstance(arr, np.ndarray):
            raise TypeError(f"{op}: {name} must be a numpy.ndarray, got {type(arr).__name__}")
        arr_dtype = arr.dtype
        if arr_dtype is dtype:  # the usual case after the first array: nothing more to compare
            pass
        elif dtype is None:
            if arr_dtype not in FLOAT_DTYPES:
                raise TypeError(f"{op}: {name} must be float32 or float64, got {arr_dtype}")
            dtype = arr_dtype
        elif arr_dtype != dtype:
            if arr_dtype not in FLOAT_DTYPES:
                raise TypeError(f"{op}: {name} must be float32 or float64, got {arr_dtype}")
            names = ", ".join(f"{n}={a.dtype}" for n, a in arrays.items())
            raise TypeError(f"{op}: all arrays must share one dtype, got {names}")
        if not arr.flags.c_contiguous:
            raise ValueError(
                f"{op}: {name} must be C-contiguous (strides {arr.strides}, shape {arr.shape}); "
                "pass np.ascontiguousarray(...)"
            )


def check_index_array(op: str, name: str, arr: np.ndarray) -> None:
    """Require a C-contiguous int64 ndarray (pooling argmax indices).

    >>> check_index_array("k", "idx", np.zeros(2, np.int64))
    """
    if not isinstance(arr, np.ndarray) or arr.dtype != np.int64:
        got = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
        raise TypeError(f"{op}: {name} must be an int64 ndarray, got {got}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{op}: {name} must be C-contiguous, got strides {arr.strides}")


def check_shape(op: str, name: str, arr: np.ndarray, expected: tuple[int | None, ...]) -> None:
    """Require ``arr.shape`` to match ``expected``, where None matches any size.

    >>> check_shape("k", "x", np.zeros((2, 3)), (2, None))
    """
    shape = arr.shape
    if len(shape) == len(expected):
        for want, size in zip(expected, shape):
            if want is not None and want != size:
                break
        else:
            return
    want = "(" + ", ".join("*" if e is None else str(e) for e in expected) + ")"
    raise ValueError(f"{op}: {name} must have shape {want}, got {arr.shape}")


def check_disjoint(op: str, written: dict[str, np.ndarray], read: dict[str, np.ndarray | None]) -> None:
    """Refuse an output that shares memory with an input or with another output: the kernels read
    their inputs while writing, so an overlap would silently compute garbage.

    >>> a = np.zeros((2, 2))
    >>> check_disjoint("k", {"out": np.zeros((2, 2))}, {"a": a})
    """
    items = list(written.items())
    for i, (name, array) in enumerate(items):
        owner = _owner(array)
        for other_name, other in items[i + 1 :] + list(read.items()):
            if other is None:
                continue
            if owner is not None:
                other_owner = _owner(other)
                if other_owner is not None and other_owner is not owner:
                    continue  # parts of two separate allocations
            if np.may_share_memory(array, other):
                raise ValueError(
                    f"{op}: {name} {array.shape} overlaps {other_name} {other.shape} in memory; "
                    "pass a separate output array"
                )


def _owner(array: np.ndarray) -> np.ndarray | None:
    """The array that allocated `array`'s memory (itself, or the base NumPy's views point to),
    or None where that is not known (memory from a buffer, Numba's or another library's).

    Two different owners hold separate allocations, so their arrays cannot overlap: a test by
    identity, which costs a tenth of np.may_share_memory's bounds check on every kernel call.
    """
    base = array.base
    if base is None:
        return array if array.flags.owndata else None
    if type(base) is np.ndarray and base.base is None and base.flags.owndata:
        return base
    return None
