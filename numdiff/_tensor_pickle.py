"""Pickling of tensors (pickle, copy, multiprocessing, whole-object checkpoints).

A tensor pickles as its host array, dtype, device and requires_grad, and unpickles as a leaf,
as in PyTorch: its graph, gradient accumulator and hooks are process-local and are not carried
(a non-leaf comes back as a leaf that requires grad; its ``.grad`` is not pickled). A CUDA
tensor comes back on the same device; a meta tensor pickles its shape only (an array of a zero-byte
dtype) and comes back a meta tensor. Parameter pickles the same way (numdiff.nn.parameter).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._device import device
from numdiff.backend import backend_for, holds_values
from numdiff.meta.array import NO_BYTES, MetaArray
from numdiff.tensor import Tensor


def rebuild_tensor(array: np.ndarray, dtype_name: str, where: str, requires_grad: bool) -> Tensor:
    """The tensor that `tensor_reduce_ex` describes (see the module docstring)."""
    dtype = _dtype.to_dtype(dtype_name)
    if where == "meta":
        t = Tensor._wrap(MetaArray(np.shape(array), dtype.numpy), None, None)
        return t.requires_grad_(True) if requires_grad else t
    data = np.asarray(array)
    if data.dtype != dtype.numpy:
        data = _dtype.cast_array(data, dtype)
    t = Tensor._wrap(data, None, None)
    target = device(where)
    if target.type != "cpu":
        t = t.to(target)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_args(t: Tensor) -> tuple[np.ndarray, str, str, bool]:
    """rebuild_tensor's arguments for `t`: a host copy (pickling takes a snapshot) and metadata."""
    if not holds_values(t._data):
        return np.empty(tuple(t.shape), NO_BYTES), t.dtype.name, "meta", bool(t._requires_grad)
    host = np.array(backend_for(t._data).to_host(t._data))
    return host, t.dtype.name, str(t.device), bool(t._requires_grad)


def tensor_reduce_ex(self: Tensor, protocol: int) -> tuple[Any, tuple[Any, ...]]:
    return rebuild_tensor, reduce_args(self)


PICKLE_METHODS = {"__reduce_ex__": tensor_reduce_ex}
