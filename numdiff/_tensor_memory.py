"""Tensor methods about memory that PyTorch programs use: ``data_ptr()``, ``storage_offset()`` and
``untyped_storage()`` (to tell whether two tensors share memory, and how much), ``resize_``/
``resize_as_``, and the CPU helpers ``apply_`` and ``map_`` that run a Python function on every
element."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff import _inplace
from numdiff._ground.args import is_int
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import is_host, like_host, to_host
from numdiff.tensor import Tensor


def _address(array: Any) -> int:
    interface = getattr(array, "__array_interface__", None) or getattr(array, "__cuda_array_interface__", None)
    return int(interface["data"][0]) if interface else 0


def data_ptr(self: Tensor) -> int:
    """The address of the tensor's first element (equal for tensors that start at the same memory)."""
    return _address(self._data)


def storage_offset(self: Tensor) -> int:
    """How many elements into its base tensor's memory this view starts (0 for a tensor that owns it)."""
    base = self._base
    while base is not None and base._base is not None:
        base = base._base
    if base is None or self._data.size == 0:
        return 0
    return (_address(self._data) - _address(base._data)) // self._data.dtype.itemsize


class UntypedStorage:
    """The memory a tensor and its views share, seen as bytes, as PyTorch's ``untyped_storage()``:
    the tensor that owns it (the root of the view chain) spans it, so views of one tensor report
    the same ``data_ptr()`` and ``nbytes()``. It reads the memory; it does not resize or move it."""

    def __init__(self, owner: Tensor) -> None:
        self._owner = owner

    def data_ptr(self) -> int:
        return _address(self._owner._data)

    def nbytes(self) -> int:
        data = self._owner._data
        return int(data.size) * data.dtype.itemsize

    size = nbytes

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def device(self) -> Any:
        return self._owner.device

    @property
    def is_cuda(self) -> bool:
        return not is_host(self._owner._data)

    def is_shared(self) -> bool:
        return False

    def _bytes(self) -> np.ndarray:
        return np.ascontiguousarray(to_host(self._owner._data)).reshape(-1).view(np.uint8)

    def tolist(self) -> list[int]:
        return self._bytes().tolist()

    def __getitem__(self, index: Any) -> int:
        if not is_int(index):
            raise TypeError(f"untyped_storage: only an int index reads a byte, got {type(index).__name__}")
        if not -len(self) <= index < len(self):
            raise IndexError(f"untyped_storage: index {index} out of range for storage of size {len(self)}")
        return int(self._bytes()[index])

    def __repr__(self) -> str:
        values = "".join(f" {b}\n" for b in self.tolist())
        return f"{values}[numdiff.UntypedStorage(device={self.device}) of size {len(self)}]"


def untyped_storage(self: Tensor) -> UntypedStorage:
    """The bytes this tensor's memory lives in, shared by all views of the tensor that owns it."""
    owner = self
    while owner._base is not None:
        owner = owner._base
    return UntypedStorage(owner)


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Give the tensor the shape `sizes`, keeping its leading values in order; new elements are
    zeros. Refused for a tensor that requires grad and for a view, as PyTorch refuses them."""
    shape = tuple(sizes[0]) if len(sizes) == 1 and not is_int(sizes[0]) else tuple(sizes)
    if any(not is_int(n) or n < 0 for n in shape):
        raise ValueError(f"resize_: sizes must be non-negative ints, got {shape}")
    if self.requires_grad and is_grad_enabled():
        raise RuntimeError("resize_: cannot resize a tensor that requires grad; use reshape or detach() first")
    if self._base is not None:
        raise RuntimeError("resize_: cannot resize a view of another tensor; clone() it first")
    if tuple(self._data.shape) == shape:
        return self
    old = to_host(self._data).reshape(-1)
    fresh = np.zeros(int(np.prod(shape)), dtype=old.dtype)
    kept = min(old.size, fresh.size)
    fresh[:kept] = old[:kept]
    self._data = like_host(fresh.reshape(shape), self._data)
    self._version_counter[0] += 1
    return self


def resize_as_(self: Tensor, other: Tensor, memory_format: Any = None) -> Tensor:
    """resize_ to `other`'s shape."""
    return resize_(self, tuple(other.shape))


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002 - PyTorch's name
    """Replace every element x by callable(x), in place (CPU tensors only, as in PyTorch)."""
    _check_host("apply_", self)
    values = to_host(self._data)
    mapped = np.vectorize(callable, otypes=[values.dtype])(values) if values.size else values
    return _inplace.apply_inplace(self, "apply_", lambda old: Tensor._wrap(mapped.astype(values.dtype), None, None))


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
    """Replace every element x by callable(x, y) with y the element of `tensor` (broadcast), in place."""
    _check_host("map_", self)
    values = to_host(self._data)
    other = np.broadcast_to(to_host(tensor._data), values.shape)
    mapped = np.vectorize(callable, otypes=[values.dtype])(values, other) if values.size else values
    return _inplace.apply_inplace(self, "map_", lambda old: Tensor._wrap(mapped.astype(values.dtype), None, None))


def _check_host(op: str, tensor: Tensor) -> None:
    if not is_host(tensor._data):
        raise TypeError(f"{op}: only CPU tensors run a Python function per element; move it with .cpu() first")


METHODS = {
    "data_ptr": data_ptr, "storage_offset": storage_offset, "untyped_storage": untyped_storage, "resize_": resize_, "resize_as_": resize_as_,
    "apply_": apply_, "map_": map_,
}  # fmt: skip
