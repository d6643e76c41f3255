"""Tensor.new_zeros, new_ones, new_full, new_empty, new_tensor and type_as: factories and casts that
take their dtype and device from an existing tensor, as in PyTorch."""

from __future__ import annotations

from typing import Any

from numdiff import creation
from numdiff.tensor import Tensor


def _sized(factory):
    def method(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
        return factory(
            *size, dtype=self.dtype if dtype is None else dtype, device=self.device if device is None else device,
            requires_grad=requires_grad,
        )

    method.__name__ = f"new_{factory.__name__}"
    method.__doc__ = f"``{factory.__name__}(*size)`` with this tensor's dtype and device unless given."
    return method


new_zeros = _sized(creation.zeros)
new_ones = _sized(creation.ones)
new_empty = _sized(creation.empty)


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``full(size, fill_value)`` with this tensor's dtype and device unless given."""
    return creation.full(size, fill_value, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device, requires_grad=requires_grad)


def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new leaf holding a copy of `data`, with this tensor's dtype and device unless given."""
    if isinstance(data, Tensor):
        data = data.detach()
    return creation.tensor(data, dtype=self.dtype if dtype is None else dtype,
                           device=self.device if device is None else device, requires_grad=requires_grad)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor converted to `other`'s dtype (and device), as ``self.type(other.type())``."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as: expected a Tensor, got {type(other).__name__}")
    return self.to(dtype=other.dtype, device=other.device)
