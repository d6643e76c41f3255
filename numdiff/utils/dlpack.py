"""numdiff.utils.dlpack: zero-copy exchange with NumPy, PyTorch, JAX and CuPy (``torch.utils.dlpack``).

``from_dlpack`` takes any object with ``__dlpack__`` (a NumPy array, a torch or JAX tensor, a CuPy
array) or a DLPack capsule and returns a tensor sharing its memory: a new leaf that wants no
gradient. ``to_dlpack`` and ``Tensor.__dlpack__`` go the other way. Every numdiff dtype crosses,
bfloat16 included; CUDA tensors cross as device memory.
"""

from __future__ import annotations

from typing import Any

from numdiff import _dlpack, _tensor_dlpack
from numdiff._device import device
from numdiff.tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing memory with `ext_tensor` (anything with ``__dlpack__``, or a DLPack capsule).

    >>> import numpy as np
    >>> a = np.zeros(3, dtype=np.float32)
    >>> t = numdiff.from_dlpack(a); t[0] = 5.
    >>> a
    array([5., 0., 0.], dtype=float32)
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach()
    capsule = ext_tensor
    if hasattr(ext_tensor, "__dlpack__"):
        try:
            capsule = ext_tensor.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer from before DLPack 1.0 takes no max_version
            capsule = ext_tensor.__dlpack__()
    (device_type, index), interface, owner = _dlpack.read_capsule(capsule)
    if device_type in (_dlpack.CPU, _dlpack.CUDA_HOST):
        array = _dlpack.host_array(interface, owner)
    elif device_type in (_dlpack.CUDA, _dlpack.CUDA_MANAGED):
        from numdiff.cuda.array import CudaArray

        array = CudaArray.from_interface(interface, owner, device(f"cuda:{index}"))
    else:
        raise BufferError(f"from_dlpack: DLPack device type {device_type} is neither the CPU nor CUDA")
    return Tensor._wrap(array, None, None)


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule of `tensor` (``torch.utils.dlpack.to_dlpack``): read it once with from_dlpack."""
    return _tensor_dlpack.dlpack(tensor)


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
