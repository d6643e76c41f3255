"""DLPack capsules, made and read with ctypes: zero-copy exchange with NumPy, PyTorch, JAX and CuPy.

A capsule carries a ``DLManagedTensor`` (name ``"dltensor"``) or, for consumers that ask for
DLPack 1.x, a ``DLManagedTensorVersioned`` (``"dltensor_versioned"``). The structs below are the
DLPack header's, field for field. numdiff writes its own capsules instead of handing NumPy's on
because NumPy cannot export bfloat16 (numdiff's 2-byte opaque storage) and cannot read a capsule
of it; one mechanism serves every dtype.

Lifetime, as the standard sets it: the producer keeps the exported array alive until the consumer
calls the capsule's ``deleter``; a capsule that nobody consumed calls it when it is collected.
A consumer renames the capsule to ``"used_dltensor"`` so the deleter runs exactly once, when the
array made from it is collected.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from numdiff import _dtype

__all__ = ["CPU", "CUDA", "CUDA_HOST", "export_array", "read_capsule"]

CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL = 0, 1, 2, 4, 6
_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
_USED = {_LEGACY: b"used_dltensor", _VERSIONED: b"used_dltensor_versioned"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _Version),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _Tensor),
    ]


_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The destructor gets the dying capsule as a bare address: these two take it without touching its refcount.
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_raw_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))

# What each exported capsule keeps alive (the array, the struct, its shape and strides), by the
# struct's address, until its deleter runs. A lock, since consumers may free from any thread.
_exported: dict[int, tuple] = {}
_exported_lock = threading.Lock()


@_Deleter
def _delete_exported(address: int) -> None:
    with _exported_lock:
        _exported.pop(address, None)


_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CapsuleDestructor
def _destroy_capsule(capsule: int) -> None:
    # A capsule collected while still named "dltensor" was never consumed: free what it holds.
    for name in (_LEGACY, _VERSIONED):
        if _is_valid(capsule, name):
            _delete_exported(_raw_pointer(capsule, name))
            return


def _dl_dtype(dtype: np.dtype) -> tuple[int, int]:
    if dtype == _dtype.BFLOAT16_STORAGE:
        return _BFLOAT, 16
    codes = {"b": _BOOL, "i": _INT, "u": _UINT, "f": _FLOAT}
    if dtype.kind not in codes:
        raise BufferError(f"__dlpack__: DLPack has no form for dtype {dtype}")
    return codes[dtype.kind], dtype.itemsize * 8


def _np_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    if lanes != 1:
        raise BufferError(f"from_dlpack: vector dtypes (lanes={lanes}) are not supported")
    if (code, bits) == (_BFLOAT, 16):
        return _dtype.BFLOAT16_STORAGE
    kinds = {_BOOL: "b", _INT: "i", _UINT: "u", _FLOAT: "f"}
    if code not in kinds or bits % 8:
        raise BufferError(f"from_dlpack: DLPack dtype (code {code}, bits {bits}) has no numdiff dtype")
    dtype = np.dtype(f"{kinds[code]}{bits // 8}")
    _dtype.from_numpy(dtype)  # refuses uint16/uint32/... with the list numdiff supports
    return dtype


def export_array(owner: Any, pointer: int, shape: tuple, strides_bytes: tuple, dtype: np.dtype,
                 device: tuple[int, int], versioned: bool, read_only: bool = False) -> Any:
    """A new DLPack capsule over `pointer` (the first element), keeping `owner` alive until freed."""
    code, bits = _dl_dtype(dtype)
    itemsize = dtype.itemsize
    if any(s % itemsize for s in strides_bytes):
        raise BufferError(f"__dlpack__: strides {strides_bytes} are not multiples of the item size {itemsize}")
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*(s // itemsize for s in strides_bytes))
    managed = _ManagedVersioned() if versioned else _Managed()
    tensor = managed.dl_tensor
    tensor.data = pointer
    tensor.device = _Device(*device)
    tensor.ndim = ndim
    tensor.dtype = _DataType(code, bits, 1)
    tensor.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    managed.deleter = _delete_exported
    if versioned:
        managed.version = _Version(1, 0)
        managed.flags = _READ_ONLY if read_only else 0
    address = ctypes.addressof(managed)
    managed.manager_ctx = address
    with _exported_lock:
        _exported[address] = (owner, managed, shape_arr, strides_arr)
    name = _VERSIONED if versioned else _LEGACY
    return _api.PyCapsule_New(address, name, ctypes.cast(_destroy_capsule, ctypes.c_void_p))


class _Imported:
    """Owns one consumed capsule's memory: calls its deleter when the last array over it goes."""

    def __init__(self, managed_address: int, deleter: Any) -> None:
        self._address = managed_address
        self._deleter = deleter
        self.__array_interface__: dict = {}

    def __del__(self) -> None:
        if self._deleter:
            self._deleter(self._address)


def read_capsule(capsule: Any) -> tuple[tuple[int, int], dict, Any]:
    """Consume a DLPack capsule: (device (type, id), an array-interface dict, the memory's owner).

    The dict has NumPy's ``__array_interface__`` keys (``data``, ``shape``, ``strides``, ``typestr``
    plus ``descr``); CUDA consumers read the same keys as a CUDA Array Interface. The owner must be
    kept alive as long as the memory is used: dropping it runs the producer's deleter.
    """
    if type(capsule).__name__ != "PyCapsule":
        raise TypeError(f"from_dlpack expects an object with __dlpack__ or a DLPack capsule, got {type(capsule).__name__}")
    name = _api.PyCapsule_GetName(capsule)
    if name not in _USED:
        raise BufferError(
            f"from_dlpack: a capsule named {name!r} is no DLPack tensor"
            + (" (already consumed: a capsule can be read once)" if name and name.startswith(b"used_") else "")
        )
    address = _api.PyCapsule_GetPointer(capsule, name)
    managed = (_ManagedVersioned if name == _VERSIONED else _Managed).from_address(address)
    read_only = name == _VERSIONED and bool(managed.flags & _READ_ONLY)
    if name == _VERSIONED and managed.version.major > 1:
        raise BufferError(f"from_dlpack: DLPack version {managed.version.major}.{managed.version.minor} is newer than 1.x")
    tensor = managed.dl_tensor
    dtype = _np_dtype(tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides and tensor.ndim:
        strides = tuple(tensor.strides[i] * dtype.itemsize for i in range(tensor.ndim))
    else:
        strides = None  # compact row-major
    data = (tensor.data or 0) + tensor.byte_offset
    interface = {
        "version": 3,
        "shape": shape,
        "strides": strides,
        "typestr": dtype.str,
        "descr": [("", dtype.str)],
        "data": (data, read_only),
    }
    device = (tensor.device.device_type, tensor.device.device_id)
    deleter = managed.deleter
    _api.PyCapsule_SetName(capsule, _USED[name])
    return device, interface, _Imported(address, deleter if ctypes.cast(deleter, ctypes.c_void_p).value else None)


def host_array(interface: dict, owner: _Imported) -> np.ndarray:
    """A NumPy array over host memory described by `interface`, keeping `owner` alive."""
    shape = interface["shape"]
    dtype = np.dtype(interface["typestr"])
    if 0 in shape:
        return np.empty(shape, dtype)
    owner.__array_interface__ = interface
    array = np.asarray(owner)  # its base is `owner`, so the memory lives as long as the array
    return array.view(dtype) if array.dtype != dtype else array
