"""numdiff's dtypes: thin named wrappers over NumPy dtypes, printed the way PyTorch prints them."""

from __future__ import annotations

import builtins

import numpy as np


class dtype:  # noqa: N801 - lowercase to match PyTorch's `torch.dtype`
    """A tensor element type, e.g. ``numdiff.float32``."""

    __slots__ = ("name", "numpy", "is_floating_point")

    def __init__(self, name: str, numpy_dtype: np.dtype, is_floating_point: builtins.bool) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = is_floating_point

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    def __repr__(self) -> str:
        return f"numdiff.{self.name}"

    def __reduce__(self) -> str:
        return self.name


float32 = dtype("float32", np.float32, True)
float64 = dtype("float64", np.float64, True)
int32 = dtype("int32", np.int32, False)
int64 = dtype("int64", np.int64, False)
bool_ = dtype("bool", np.bool_, False)

ALL_DTYPES = (float32, float64, int32, int64, bool_)
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES}
_ALIASES = {
    builtins.float: float32,
    builtins.int: int64,
    builtins.bool: bool_,
    "float": float32,
    "double": float64,
    "long": int64,
    "int": int32,
}


def to_dtype(value: object) -> dtype:
    """Resolve a numdiff dtype, NumPy dtype, Python type or name to a numdiff dtype."""
    if isinstance(value, dtype):
        return value
    if value in _ALIASES:
        return _ALIASES[value]
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a numdiff dtype") from None
    return from_numpy(np_dtype)


def from_numpy(np_dtype: np.dtype) -> dtype:
    """The numdiff dtype of a NumPy dtype; float16, uint8 etc. are refused with the supported list."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        names = ", ".join(d.name for d in ALL_DTYPES)
        raise TypeError(f"numdiff does not support NumPy dtype {np_dtype}; supported: {names}") from None


def promote(a: dtype, b: dtype) -> dtype:
    """PyTorch's type promotion between two tensor dtypes (bool < integers < floating)."""
    if a is b:
        return a
    rank = {bool_: 0, int32: 1, int64: 2, float32: 3, float64: 4}
    return a if rank[a] >= rank[b] else b
