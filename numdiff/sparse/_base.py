"""What a sparse tensor of either layout (COO, CSR) is besides its structure: values that carry the
gradient, a shape, and everything worked out from those two alone.

A layout's class holds ``_value_tensor`` and ``_shape`` and defines ``_with_values(values)`` (the same
structure over other values, on their device) and ``__add__``; this base gives the metadata, the
gradient, conversions that move or detach the values, scalar arithmetic and the products' aliases.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.autograd.grad_mode import no_grad
from numdiff.tensor import Size, Tensor


class SparseBase:
    """Base of SparseTensor (COO) and SparseCsrTensor; see the module's docstring."""

    _value_tensor: Tensor
    _shape: Size
    _name = "sparse"
    """How error messages name the layout's ops ("sparse mul", "sparse CSR mul")."""

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return self._shape

    def size(self, dim: int | None = None) -> Any:
        return self._shape if dim is None else self._shape[dim]

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self) -> _dtype.dtype:
        return self._value_tensor.dtype

    @property
    def device(self) -> Any:
        return self._value_tensor.device

    @property
    def is_cuda(self) -> bool:
        return self._value_tensor.is_cuda

    @property
    def requires_grad(self) -> bool:
        return self._value_tensor.requires_grad

    def requires_grad_(self, flag: bool = True) -> SparseBase:
        self._value_tensor.requires_grad_(flag)
        return self

    @property
    def grad(self) -> Any:
        """The gradient of the values, as a sparse tensor of this structure (None before backward)."""
        g = self._value_tensor.grad
        return None if g is None else self._with_values(g)

    def _nnz(self) -> int:
        return int(self._value_tensor.shape[0])

    def __len__(self) -> int:
        return self._shape[0]

    # ------------------------------------------------------------------ conversions
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """NumPy sees the dense values (``dense + sparse`` is dense, as in PyTorch)."""
        with no_grad():
            array = self.to_dense().cpu().numpy()
        return array if dtype is None else array.astype(dtype)

    def to(self, *args: Any, **kwargs: Any) -> SparseBase:
        """The values converted as Tensor.to converts them; the structure follows them to their device."""
        return self._with_values(self._value_tensor.to(*args, **kwargs))

    def cpu(self) -> SparseBase:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> SparseBase:
        return self.to("cuda" if device is None else device)

    def float(self) -> SparseBase:
        return self.to(_dtype.float32)

    def double(self) -> SparseBase:
        return self.to(_dtype.float64)

    def detach(self) -> SparseBase:
        return self._with_values(self._value_tensor.detach())

    # ------------------------------------------------------------------ arithmetic
    def mm(self, other: Any) -> Any:
        return self @ other

    def matmul(self, other: Any) -> Any:
        return self @ other

    def __radd__(self, other: Any) -> Any:
        return self + other

    def __neg__(self) -> SparseBase:
        return self._with_values(-self._value_tensor)

    def __mul__(self, other: Any) -> SparseBase:
        if isinstance(other, (int, float)) or (isinstance(other, Tensor) and other.ndim == 0):
            return self._with_values(self._value_tensor * other)
        raise TypeError(f"{self._name} mul: only a scalar multiplies a sparse tensor here; use to_dense() for more")

    __rmul__ = __mul__

    def mul_(self, other: Any) -> SparseBase:
        """Scale the values by a scalar in place (the structure stays); clip_grad_norm_ uses it."""
        self._value_tensor = (self * other)._value_tensor
        return self

    def __truediv__(self, other: Any) -> SparseBase:
        return self * (1.0 / other)
