"""Tensor's secondary queries of size, layout, dtype and device, PyTorch's names for them
(element_size, nbytes, stride, is_contiguous, get_device, is_floating_point, ``in``, ...).

Written here and bound in numdiff/tensor.py as Tensor's own methods and properties (as
numdiff/_tensor_conversion.py's are); the core ones (shape, dtype, device) stay in the class.
`self` is a Tensor, typed Any: importing numdiff.tensor here would close an import cycle.
"""

from __future__ import annotations

from typing import Any

from numdiff import _memory_format

__all__ = ["contains", "element_size", "get_device", "is_complex", "is_contiguous", "is_cpu", "is_cuda", "is_floating_point", "itemsize", "nbytes", "ndimension", "nelement", "stride"]


def element_size(self: Any) -> int:
    return self._data.dtype.itemsize


def itemsize(self: Any) -> int:
    return self._data.dtype.itemsize


def nbytes(self: Any) -> int:
    return int(self._data.size) * self._data.dtype.itemsize


def nelement(self: Any) -> int:
    return int(self._data.size)


def ndimension(self: Any) -> int:
    return self._data.ndim


def stride(self: Any, dim: int | None = None) -> tuple[int, ...] | int:
    """The step in elements between neighbours along each dimension (or along `dim`)."""
    steps = tuple(s // self._data.dtype.itemsize for s in self._data.strides)
    return steps if dim is None else steps[dim]


def is_complex(self: Any) -> bool:
    return False  # numdiff has no complex dtypes


def is_cpu(self: Any) -> bool:
    return self.device.type == "cpu"


def get_device(self: Any) -> int:
    """The CUDA device index, or -1 for the CPU (PyTorch's convention)."""
    where = self.device
    return -1 if where.type == "cpu" else (where.index or 0)


def contains(self: Any, element: Any) -> bool:
    """``element in t``: whether any element equals it (a number or a tensor that broadcasts)."""
    return bool((self == element).any())


def is_cuda(self: Any) -> bool:
    return self.device.type == "cuda"


def is_floating_point(self: Any) -> bool:
    return self.dtype.is_floating_point


def is_contiguous(self: Any, memory_format: Any = None) -> bool:
    """Whether the data is laid out densely in `memory_format` (row-major by default)."""
    if memory_format is None or memory_format is _memory_format.contiguous_format:
        return bool(self._data.flags.c_contiguous)
    fmt = _memory_format.checked(memory_format, "is_contiguous")
    return _memory_format.is_contiguous_in(tuple(self._data.shape), self.stride(), fmt)
