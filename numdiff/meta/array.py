"""MetaArray: numdiff's array type on the meta device: a shape, a dtype and strides, no storage.

Ops run on meta arrays exactly as on host or CUDA arrays: NumPy calls reach numdiff.meta._numpy
through NEP 13/18 and work out the result's shape and dtype only, and the meta backend's kernel
launchers (numdiff.meta.kernels) write nothing. Shapes of structural NumPy calls (indexing,
concatenate, take_along_axis, ...) are read from stand-ins of a zero-byte dtype, so no call
allocates or reads memory in proportion to a meta array's size. Reading values out (``np.asarray``,
``item``, a copy to the host) raises :class:`MetaTensorDataError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._device import device as device_type
from numdiff._strided_array import StridedArray, c_strides, install_operators, shape_tuple

META = device_type("meta")

NO_BYTES = np.dtype([])
"""A dtype of zero bytes: arrays of it have any shape and no memory (shape stand-ins)."""


class MetaTensorDataError(NotImplementedError):
    """Values were asked of a meta tensor, which has none (NotImplementedError, as PyTorch's)."""


def _is_basic_key(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(
        p is None or p is Ellipsis or isinstance(p, slice) or (isinstance(p, (int, np.integer)) and not isinstance(p, bool))
        for p in parts
    )


class MetaArray(StridedArray):
    """An n-d array with no data: ``MetaArray.empty((2, 3), np.float32)``."""

    __slots__ = ("shape", "_strides", "dtype", "storage")
    device = META

    def __init__(self, shape: tuple, dtype: Any, strides: tuple | None = None, storage: Any = None) -> None:
        self.shape = shape_tuple(shape)
        self.dtype = np.dtype(dtype)
        self._strides = c_strides(self.shape) if strides is None else tuple(int(s) for s in strides)
        # Views share their base's storage token, so np.may_share_memory answers as for real arrays.
        self.storage = _Storage() if storage is None else storage

    @classmethod
    def empty(cls, shape: Any, dtype: Any) -> MetaArray:
        if any(n < 0 for n in shape_tuple(shape)):
            raise ValueError(f"negative dimensions are not allowed, got shape {shape_tuple(shape)}")
        return cls(shape, dtype)

    def probe(self) -> np.ndarray:
        """A zero-byte NumPy stand-in of this shape, for NumPy to work out result shapes on."""
        return np.empty(self.shape, NO_BYTES)

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    # ----------------------------------------------------------------- views and copies
    def _strided(self, shape: tuple, strides: tuple) -> MetaArray:
        return MetaArray(shape, self.dtype, strides, self.storage)

    def reshape(self, *shape: Any, order: str = "C") -> MetaArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        target = self.probe().reshape(shape_tuple(shape)).shape  # NumPy's -1 and size checks
        if self.flags.c_contiguous:
            return self._strided(target, c_strides(target))  # a view, as NumPy's
        return MetaArray(target, self.dtype)  # a copy

    def copy(self, order: str = "C") -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    def astype(self, dtype: Any, copy: bool = True, **kwargs: Any) -> MetaArray:
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        return MetaArray(self.shape, dtype)

    def view(self, dtype: Any = None) -> MetaArray:
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self._strided(self.shape, self._strides)
        if np.dtype(dtype).itemsize != self.itemsize:
            raise ValueError(f"a meta array view as {np.dtype(dtype)} needs items of {self.itemsize} bytes")
        return MetaArray(self.shape, dtype, self._strides, self.storage)

    flatten = StridedArray.ravel

    def squeeze(self, axis: Any = None) -> MetaArray:
        axes = [d for d, n in enumerate(self.shape) if n == 1] if axis is None else [
            int(a) % self.ndim for a in ((axis,) if isinstance(axis, (int, np.integer)) else axis)]
        np.squeeze(self.probe(), axis)  # NumPy's check that each squeezed axis has length 1
        return self[tuple(0 if d in axes else slice(None) for d in range(self.ndim))]

    def fill(self, value: Any) -> None:
        """Nothing to fill: a meta array has no values."""

    def __getitem__(self, key: Any) -> MetaArray:
        key = _host_key(key)
        if _is_basic_key(key):
            # A basic index is a view: its strides come from NumPy on a one-byte stand-in that has
            # this array's strides; NumPy computes the view's layout and never reads the memory.
            stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), self.shape, self._strides)
            view = stand_in[key]
            return self._strided(view.shape, view.strides)
        return MetaArray(self.probe()[key].shape, self.dtype)

    def __setitem__(self, key: Any, value: Any) -> None:
        target = self.probe()[_host_key(key)]
        shape = value.shape if hasattr(value, "shape") else np.shape(value)
        np.broadcast_to(np.empty(shape, NO_BYTES), target.shape)  # NumPy's check; nothing is written

    # ----------------------------------------------------------------- no values to read
    def to_host(self) -> np.ndarray:
        raise self._no_data()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise self._no_data()

    def _no_data(self) -> MetaTensorDataError:
        return MetaTensorDataError(
            f"Cannot copy out of meta tensor; no data! (shape {self.shape}, dtype {self.dtype}). A meta "
            "tensor holds a shape and a dtype only: give a module storage with module.to_empty(device=...) "
            "and then initialise or load its parameters"
        )

    def item(self) -> Any:
        raise MetaTensorDataError(f"Tensor.item() cannot be called on meta tensors (shape {self.shape}): they hold no values")

    def tolist(self) -> Any:
        raise MetaTensorDataError(f"tolist() cannot be called on meta tensors (shape {self.shape}): they hold no values")

    def __bool__(self) -> bool:
        raise MetaTensorDataError(
            f"the truth value of a meta tensor (shape {self.shape}) is unknown: it holds no values"
        )

    def from_host(self, host: Any) -> MetaArray:
        """A meta array of `host`'s shape and dtype (the values are dropped)."""
        host = np.asarray(host)
        return MetaArray(host.shape, host.dtype)

    # ----------------------------------------------------------------- NumPy protocols
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _numpy_rules().ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        return _numpy_rules().function(func, args, kwargs)

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> MetaArray:
        return np.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> MetaArray:
        return np.mean(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> MetaArray:
        return np.prod(self, axis=axis, dtype=dtype, keepdims=keepdims)


class _Storage:
    """The identity of a meta array's (absent) memory, shared by its views."""

    __slots__ = ()


def _numpy_rules() -> Any:
    """numdiff.meta._numpy, which builds on this class (so it imports this module, not the reverse)."""
    from numdiff.meta import _numpy

    return _numpy


def _host_key(key: Any) -> Any:
    """An index with its meta index arrays replaced by zero-byte stand-ins of their shapes (integer
    or bool): NumPy then works out the result's shape without reading any index."""
    parts = key if isinstance(key, tuple) else (key,)
    converted = tuple(
        np.broadcast_to(np.zeros((), np.bool_ if p.dtype == np.bool_ else np.intp), p.shape) if isinstance(p, MetaArray)
        else p
        for p in parts
    )
    return converted if isinstance(key, tuple) else converted[0]


install_operators(MetaArray, {"mod": np.remainder, "matmul": np.matmul})
"""Two operators more than a CUDA array has: the meta device works out any NumPy call's shape."""
