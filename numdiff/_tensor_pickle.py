"""Pickling of tensors and Parameters (pickle, copy, multiprocessing, whole-object checkpoints).

A tensor pickles as its host array, dtype, device and requires_grad, and unpickles as a leaf,
as in PyTorch: its graph, gradient accumulator and hooks are process-local and are not carried
(a non-leaf comes back as a leaf that requires grad; its ``.grad`` is not pickled). A CUDA
tensor comes back on the same device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._device import device
from numdiff.backend import backend_for
from numdiff.tensor import Tensor


def rebuild_tensor(array: np.ndarray, dtype_name: str, where: str, requires_grad: bool, parameter: bool) -> Tensor:
    """The tensor that `Tensor.__reduce_ex__` describes (see the module docstring)."""
    dtype = _dtype.to_dtype(dtype_name)
    data = np.asarray(array)
    if data.dtype != dtype.numpy:
        data = _dtype.cast_array(data, dtype)
    target = device(where)
    if target.type != "cpu":
        from numdiff.cuda import move_array

        data = move_array(data, target)
    if parameter:
        from numdiff.nn.parameter import Parameter

        return Parameter(Tensor._wrap(data, None, None), requires_grad=requires_grad)
    t = Tensor._wrap(data, None, None)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor_reduce_ex(self: Tensor, protocol: int) -> tuple[Any, tuple[Any, ...]]:
    from numdiff.nn.parameter import Parameter

    host = np.array(backend_for(self._data).to_host(self._data))  # a copy: pickling takes a snapshot
    args = (host, self.dtype.name, str(self.device), bool(self._requires_grad), isinstance(self, Parameter))
    return rebuild_tensor, args


PICKLE_METHODS = {"__reduce_ex__": tensor_reduce_ex}
