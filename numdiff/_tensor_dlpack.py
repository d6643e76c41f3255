"""Tensor's side of DLPack: ``t.__dlpack__()`` and ``t.__dlpack_device__()`` (numdiff.utils.dlpack reads).

Exchange is zero-copy in both directions: a tensor made by ``from_dlpack`` shares memory with
the producer's array, and a consumer of ``t.__dlpack__()`` writes into ``t``. A tensor made from a
capsule is a new leaf that wants no gradient, like any tensor made from data; a tensor that
requires grad refuses to export, as in PyTorch (export ``t.detach()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numdiff import _dlpack
from numdiff.backend import backend_for

if TYPE_CHECKING:
    from numdiff.tensor import Tensor


def dlpack_device(self: Tensor) -> tuple[int, int]:
    """(DLPack device type, device index): (1, 0) for the CPU, (2, i) for CUDA device i."""
    if backend_for(self._data).name == "cuda":
        return (_dlpack.CUDA, self._data.device.index or 0)
    return (_dlpack.CPU, 0)


def dlpack(self: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """A DLPack capsule sharing this tensor's memory (the array API standard's ``__dlpack__``).

    >>> import numpy as np
    >>> t = numdiff.arange(3.)
    >>> np.from_dlpack(t)
    array([0., 1., 2.], dtype=float32)
    """
    if self._requires_grad:
        raise RuntimeError(
            "__dlpack__: can't export a tensor that requires grad (the consumer would write past "
            "autograd); export t.detach() instead"
        )
    own = dlpack_device(self)
    if dl_device is not None and tuple(dl_device) != own:
        raise BufferError(f"__dlpack__: the tensor is on DLPack device {own}, not {tuple(dl_device)}; move it first")
    if copy is True:
        array = self.clone()._data
    else:
        array = self._data
    versioned = max_version is not None and max_version[0] >= 1
    if own[0] == _dlpack.CUDA:
        return _dlpack.export_array(array, array.data_pointer, array.shape, array.strides, array.dtype,
                                    own, versioned)
    read_only = not array.flags.writeable
    if read_only and not versioned:
        raise BufferError("__dlpack__: a read-only tensor can be exported only to DLPack 1.x consumers, which "
                          "see the read-only flag; pass max_version=(1, 0) or copy=True")
    pointer = array.ctypes.data if array.size else 0
    return _dlpack.export_array(array, pointer, array.shape, array.strides, array.dtype, own, versioned, read_only)
