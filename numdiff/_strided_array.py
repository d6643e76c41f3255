"""StridedArray: what numdiff's own device arrays (numdiff.cuda's CudaArray, numdiff.meta's
MetaArray) share with each other and with NumPy's ndarray.

A subclass holds ``shape``, ``dtype`` and ``_strides`` (in elements) and defines
``_strided(shape, strides)``, a view of its memory with other shape and strides from where it starts,
``reshape`` and ``item``. From those this class gives NumPy's
metadata (ndim, size, nbytes, strides in bytes, flags), the views that are stride arithmetic alone
(transpose, swapaxes, broadcast_to, T), reductions as methods and Python's operators, both of which
go through NumPy's protocols (NEP 13/18) to the subclass's ``__array_ufunc__`` and
``__array_function__``: a device array never gains a second path for the same operation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def c_strides(shape: tuple) -> tuple:
    """C-order strides of `shape`, in elements (an axis of length 0 counts as 1, as NumPy's)."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def shape_tuple(shape: Any) -> tuple:
    """`shape` (an int or a sequence of ints) as a tuple of Python ints."""
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)


class Flags:
    """The one flag numdiff reads of an array's ``flags``."""

    __slots__ = ("c_contiguous",)

    def __init__(self, c_contiguous: bool) -> None:
        self.c_contiguous = c_contiguous


class StridedArray:
    """Base of an n-d array type over element strides; see the module's docstring."""

    __slots__ = ()
    shape: tuple
    dtype: np.dtype
    _strides: tuple

    # ----------------------------------------------------------------- metadata
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def strides(self) -> tuple:
        """Strides in bytes, as NumPy reports them."""
        return tuple(s * self.itemsize for s in self._strides)

    @property
    def flags(self) -> Flags:
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self._strides)):
            if n != 1 and s != expected:
                return Flags(self.size <= 1)
            expected *= n
        return Flags(True)

    @property
    def T(self) -> StridedArray:  # noqa: N802 - NumPy's name
        return self.transpose()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    # ----------------------------------------------------------------- views by stride arithmetic
    def transpose(self, *axes: Any) -> StridedArray:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        order = tuple(int(a) % max(self.ndim, 1) for a in axes) if axes else tuple(reversed(range(self.ndim)))
        if sorted(order) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} don't match an array of shape {self.shape}")
        return self._strided(tuple(self.shape[a] for a in order), tuple(self._strides[a] for a in order))

    def swapaxes(self, axis1: int, axis2: int) -> StridedArray:
        order = list(range(self.ndim))
        order[axis1], order[axis2] = order[axis2], order[axis1]
        return self.transpose(order)

    def broadcast_to(self, shape: Any) -> StridedArray:
        """A read-only-by-convention view with stride 0 along the broadcast axes."""
        shape = shape_tuple(shape)
        np.broadcast_to(np.empty(self.shape, np.dtype([])), shape)  # NumPy's check and message
        lead = len(shape) - self.ndim
        strides = (0,) * lead + tuple(
            0 if n == 1 and t != 1 else s for n, t, s in zip(self.shape, shape[lead:], self._strides)
        )
        return self._strided(shape, strides)

    def ravel(self, order: str = "C") -> StridedArray:
        return self.reshape(-1)

    # ----------------------------------------------------------------- through NumPy's protocols
    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def max(self, axis: Any = None, keepdims: bool = False) -> StridedArray:
        return np.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> StridedArray:
        return np.min(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> StridedArray:
        return np.any(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> StridedArray:
        return np.all(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis: Any = None, keepdims: bool = False) -> StridedArray:
        return np.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: Any = None, keepdims: bool = False) -> StridedArray:
        return np.argmin(self, axis=axis, keepdims=keepdims)

    __hash__ = None

    def __neg__(self) -> StridedArray:
        return np.negative(self)

    def __abs__(self) -> StridedArray:
        return np.absolute(self)

    def __invert__(self) -> StridedArray:
        return np.invert(self)


def install_operators(cls: type, ufuncs: dict[str, np.ufunc], reflected_and_augmented: bool = True) -> None:
    """Give `cls` Python's binary operator `__name__` for each (name, ufunc), with its reflected
    form (`__rname__`) and, with `reflected_and_augmented`, its augmented one (`__iname__`, written into self)."""
    for name, ufunc in ufuncs.items():
        setattr(cls, f"__{name}__", _operator(ufunc))
        if reflected_and_augmented:
            setattr(cls, f"__r{name}__", _operator(ufunc, reflected=True))
            setattr(cls, f"__i{name}__", _augmented(ufunc))


def _operator(ufunc: np.ufunc, reflected: bool = False) -> Any:
    if reflected:
        return lambda self, other: ufunc(other, self)
    return lambda self, other: ufunc(self, other)


def _augmented(ufunc: np.ufunc) -> Any:
    def operate(self: StridedArray, other: Any) -> StridedArray:
        return ufunc(self, other, out=(self,))

    return operate


ARITHMETIC = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide, "floordiv": np.floor_divide,
    "pow": np.power, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}  # fmt: skip
"""The binary operators every StridedArray has (with reflected and augmented forms)."""

COMPARISONS = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}  # fmt: skip
"""The comparison operators every StridedArray has."""

install_operators(StridedArray, ARITHMETIC)
install_operators(StridedArray, COMPARISONS, reflected_and_augmented=False)
