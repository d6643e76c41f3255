"""CudaArray: numdiff's array type on a CUDA device, a strided view over a numba device buffer.

The storage is a 1-D numba device array; a CudaArray adds shape, strides and offset (in elements),
so reshape of contiguous data, transpose, basic slicing, flip and broadcast_to are views, as in
NumPy. NumPy calls on CudaArrays (np.exp, np.sum, np.where ...) reach numdiff.cuda._ufuncs and
numdiff.cuda._functions through NEP 13/18, which launch @cuda.jit kernels: nothing in an op's
forward or backward goes through the host.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda

from numdiff._device import device as device_type
from numdiff._strided_array import StridedArray, c_strides


class HostConversionError(TypeError):
    """A CudaArray was handed to code that needs host memory (np.asarray and friends)."""


def _allocate(size: int, dtype: np.dtype, where: device_type) -> Any:
    with cuda.gpus[where.index]:
        return cuda.device_array(size, dtype=dtype)


def _upload(values: np.ndarray, where: device_type) -> Any:
    with cuda.gpus[where.index]:
        return cuda.to_device(values)


class CudaArray(StridedArray):
    """An n-d array on a CUDA device: ``CudaArray.empty((2, 3), np.float32, device("cuda"))``."""

    __slots__ = ("_buffer", "shape", "_strides", "_offset", "dtype", "device")

    def __init__(self, buffer: Any, shape: tuple, strides: tuple, offset: int, where: device_type) -> None:
        self._buffer = buffer
        self.shape = tuple(int(n) for n in shape)
        self._strides = tuple(int(s) for s in strides)
        self._offset = int(offset)
        self.dtype = np.dtype(buffer.dtype)
        self.device = where

    # ----------------------------------------------------------------- construction
    @classmethod
    def empty(cls, shape: tuple, dtype: Any, where: device_type) -> CudaArray:
        shape = tuple(int(n) for n in shape)
        size = math.prod(shape)
        return cls(_allocate(size, np.dtype(dtype), where), shape, c_strides(shape), 0, where)

    @classmethod
    def from_numpy(cls, host: np.ndarray, where: device_type) -> CudaArray:
        shape = host.shape  # np.ascontiguousarray makes a 0-d array 1-d; keep the shape
        flat = np.ascontiguousarray(host).reshape(-1)
        return cls(_upload(flat, where), shape, c_strides(shape), 0, where)

    def from_host(self, host: Any) -> CudaArray:
        """A copy of the host array (or number) `host` on this array's device."""
        return CudaArray.from_numpy(np.asarray(host), self.device)

    def to_host(self) -> np.ndarray:
        """A NumPy copy of the data (the only way data leaves the device)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        source = self if self.flags.c_contiguous else self.copy()
        start = source._offset
        return source._buffer[start : start + source.size].copy_to_host().reshape(self.shape)

    def __repr__(self) -> str:
        return f"CudaArray(shape={self.shape}, dtype={self.dtype}, device='{self.device}')"

    def meta(self, shape: tuple) -> Any:
        """Device vector [offset, strides...] reading this array broadcast to `shape` (checked)."""
        lead = len(shape) - self.ndim
        strides = [0] * lead
        for n, target, s in zip(self.shape, shape[lead:], self._strides):
            if n == target:
                strides.append(s if n != 1 else 0)
            elif n == 1:
                strides.append(0)
            else:
                raise ValueError(f"array of shape {self.shape} cannot be broadcast to {tuple(shape)}")
        return _upload(np.array([self._offset] + (strides or [0]), dtype=np.int64), self.device)

    def shape_vector(self, shape: tuple | None = None) -> Any:
        """`shape` (default: this array's) as a device vector; a 0-d shape reads as (1,)."""
        shape = self.shape if shape is None else tuple(shape)
        return _upload(np.array(shape or (1,), dtype=np.int64), self.device)

    def _upload_index(self, host: np.ndarray) -> Any:
        """A raw int64 device vector on this array's device (offsets for the gather/scatter kernels)."""
        return _upload(np.ascontiguousarray(host, dtype=np.int64), self.device)

    def host_offsets(self) -> np.ndarray:
        """Buffer offsets of every element, as a host int64 array of this shape (index bookkeeping)."""
        offsets = np.full(self.shape, self._offset, dtype=np.int64)
        for d, (n, s) in enumerate(zip(self.shape, self._strides)):
            axis = [1] * self.ndim
            axis[d] = n
            offsets = offsets + (np.arange(n, dtype=np.int64) * s).reshape(axis)
        return offsets

    @property
    def data_pointer(self) -> int:
        """The device address of this array's first element (for DLPack and other zero-copy exchange)."""
        try:
            base = self._buffer.__cuda_array_interface__["data"][0] or 0
        except AttributeError as error:  # Numba's CUDA simulator keeps device arrays as host arrays
            raise BufferError(
                "this CUDA array has no device address (Numba's CUDA simulator has no device memory): "
                "DLPack exchange of CUDA tensors needs a GPU"
            ) from error
        return base + self._offset * self.itemsize

    @classmethod
    def from_interface(cls, interface: dict, owner: Any, where: device_type) -> CudaArray:
        """A CudaArray over foreign device memory described by a CUDA Array Interface dict (no copy).

        `owner` is kept alive with the memory. Strides must be non-negative multiples of the item size.
        """
        dtype = np.dtype(interface["typestr"])
        shape = tuple(int(n) for n in interface["shape"])
        strides_bytes = interface.get("strides") or tuple(s * dtype.itemsize for s in c_strides(shape))
        if any(s < 0 or s % dtype.itemsize for s in strides_bytes):
            raise BufferError(f"from_dlpack: device strides {strides_bytes} are negative or not whole items")
        strides = tuple(s // dtype.itemsize for s in strides_bytes)
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if math.prod(shape) else 0
        flat = {"shape": (span,), "strides": None, "typestr": dtype.str, "data": interface["data"], "version": 3}
        buffer = cuda.from_cuda_array_interface(flat, owner=owner, sync=False)
        return cls(buffer, shape, strides, 0, where)

    def as_numba(self) -> Any:
        """This (C-contiguous) array as a numba device array, for kernels written outside numdiff."""
        if not self.flags.c_contiguous:
            raise ValueError(
                f"as_numba needs a C-contiguous array, got shape {self.shape} strides {self.strides}"
            )
        return self._buffer[self._offset : self._offset + self.size].reshape(self.shape)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface (v3) of a C-contiguous array, so other GPU libraries can read it."""
        return self.as_numba().__cuda_array_interface__

    def _view(self, shape: tuple, strides: tuple, offset: int) -> CudaArray:
        return CudaArray(self._buffer, shape, strides, offset, self.device)

    def _strided(self, shape: tuple, strides: tuple) -> CudaArray:
        return self._view(shape, strides, self._offset)

    def as_strided(self, shape: tuple, strides: tuple, offset: int) -> CudaArray:
        """A view of this array's buffer with `shape` and element `strides`, starting `offset`
        elements past this array's first (the caller checked that it stays inside this array)."""
        return self._view(tuple(shape), tuple(strides), self._offset + int(offset))

    # ----------------------------------------------------------------- views and copies
    def reshape(self, *shape: Any) -> CudaArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(n) for n in shape)
        if -1 in shape:
            known = math.prod(n for n in shape if n != -1)
            shape = tuple(self.size // known if n == -1 and known else n for n in shape)
        if math.prod(shape) != self.size:
            raise ValueError(
                f"cannot reshape array of size {self.size} (shape {self.shape}) into shape {shape}"
            )
        source = self if self.flags.c_contiguous else self.copy()
        return source._view(shape, c_strides(shape), source._offset)

    def flip(self, axes: tuple) -> CudaArray:
        strides = list(self._strides)
        offset = self._offset
        for a in axes:
            if self.shape[a] > 0:
                offset += (self.shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
        return self._view(self.shape, tuple(strides), offset)

    def copy(self) -> CudaArray:
        return self.astype(self.dtype, copy=True)

    def astype(self, dtype: Any, copy: bool = True) -> CudaArray:
        from numdiff.cuda.kernels.elementwise import launch_map

        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        out = CudaArray.empty(self.shape, dtype, self.device)
        launch_map("copy", out, (self,))
        return out

    def __getitem__(self, key: Any) -> CudaArray:
        from numdiff.cuda import _indexing

        return _indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        from numdiff.cuda import _indexing

        _indexing.setitem(self, key, value)

    # ----------------------------------------------------------------- host conversions
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise HostConversionError(
            f"a CUDA array (shape {self.shape}, dtype {self.dtype}, on {self.device}) cannot be used "
            "where host memory is needed; copy it explicitly with .to_host() (Tensor.cpu())"
        )

    def item(self) -> Any:
        if self.size != 1:
            raise ValueError(
                f"can only convert an array of size 1 to a Python scalar, not shape {self.shape}"
            )
        return self.to_host().reshape(()).item()

    def tolist(self) -> Any:
        return self.to_host().tolist()

    # ----------------------------------------------------------------- NumPy protocols
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from numdiff.cuda import _ufuncs

        return _ufuncs.dispatch(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        from numdiff.cuda import _functions

        return _functions.dispatch(func, args, kwargs, self)

    # reductions as methods, through the same dispatch as np.sum(...)
    def sum(self, axis: Any = None, keepdims: bool = False) -> CudaArray:
        return np.sum(self, axis=axis, keepdims=keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> CudaArray:
        return np.prod(self, axis=axis, keepdims=keepdims)
