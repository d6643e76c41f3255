"""Tensor methods that recurrent and language-model programs reach for: the ``new_*`` factories
(a tensor with this one's dtype and device, as in ``weight.new_zeros(layers, batch, hidden)``)
and ``narrow`` (a slice of `length` elements from `start` along `dim`)."""

from __future__ import annotations

from typing import Any

from numdiff import creation
from numdiff._ground.args import is_int
from numdiff.ops._util import normalize_dim
from numdiff.tensor import Tensor


def _factory(name: str, make):
    def method(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
        return make(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    method.__name__ = name
    method.__doc__ = f"A tensor from ``numdiff.{name[4:]}`` with this tensor's dtype and device unless given."
    return method


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value`, with this tensor's dtype and device unless given."""
    return creation.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new leaf holding a copy of `data`, with this tensor's dtype and device unless given."""
    return creation.tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def narrow(self: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """The view of elements start .. start + length - 1 along `dim` (a negative start counts from
    the end; start may be a 0-d integer tensor).

    >>> numdiff.arange(6).narrow(0, 2, 3)
    tensor([2, 3, 4])
    """
    if isinstance(start, Tensor):
        if start.ndim != 0 or start._data.dtype.kind not in "iu":
            raise TypeError(f"narrow: start must be an integer or a 0-d integer tensor, got {start!r}")
        start = int(start.item())
    for name, value in (("start", start), ("length", length)):
        if not is_int(value):
            raise TypeError(f"narrow: {name} must be an int, got {value!r} ({type(value).__name__})")
    start, length = int(start), int(length)
    if self.ndim == 0:
        raise IndexError("narrow: cannot narrow a 0-d tensor")
    dim = normalize_dim("narrow", dim, self.ndim)
    size = self.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"narrow: start {start} is out of range for dimension {dim} of size {size} (shape {tuple(self.shape)})")
    start %= size if size else 1
    if length < 0 or start + length > size:
        raise ValueError(f"narrow: start ({start}) + length ({length}) exceeds the size {size} of dimension {dim} (shape {tuple(self.shape)})")
    return self[(slice(None),) * dim + (slice(start, start + length),)]


EXTRA_METHODS = {
    "new_zeros": _factory("new_zeros", creation.zeros),
    "new_ones": _factory("new_ones", creation.ones),
    "new_empty": _factory("new_empty", creation.empty),
    "new_full": new_full,
    "new_tensor": new_tensor,
    "narrow": narrow,
}
