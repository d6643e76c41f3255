"""finfo and iinfo: the numeric limits of a dtype, with PyTorch's attribute names."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype


class finfo:  # noqa: N801 - PyTorch's name
    """Limits of a floating dtype: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``),
    ``resolution``.

    >>> numdiff.finfo(numdiff.float32).eps
    1.1920928955078125e-07
    """

    def __init__(self, type: Any = None) -> None:  # noqa: A002 - PyTorch's argument name
        self.dtype = _dtype.get_default_dtype() if type is None else _dtype.to_dtype(type)
        if not self.dtype.is_floating_point:
            raise TypeError(f"finfo: {self.dtype!r} is not a floating point dtype; use iinfo for integers")
        if self.dtype is _dtype.bfloat16:
            # NumPy has no bfloat16: 8 exponent bits (float32's range) and 7 stored mantissa bits.
            self.bits, self.eps, self.resolution = 16, 2.0**-7, 0.01
            self.max = float(np.float32((2 - 2.0**-7) * 2.0**127))
            self.tiny = self.smallest_normal = 2.0**-126
        else:
            info = np.finfo(self.dtype.numpy)
            self.bits, self.eps, self.resolution = info.bits, float(info.eps), 10.0**-info.precision
            self.max = float(info.max)
            self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.min = -self.max

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype.name})")


class iinfo:  # noqa: N801 - PyTorch's name
    """Limits of an integer dtype: ``bits``, ``max``, ``min``.

    >>> numdiff.iinfo(numdiff.int8).max
    127
    """

    def __init__(self, type: Any) -> None:  # noqa: A002
        self.dtype = _dtype.to_dtype(type)
        if self.dtype.is_floating_point:
            raise TypeError(f"iinfo: {self.dtype!r} is a floating point dtype; use finfo")
        if self.dtype is _dtype.bool_:
            raise TypeError("iinfo: bool has no integer limits")
        info = np.iinfo(self.dtype.numpy)
        self.bits, self.max, self.min = info.bits, int(info.max), int(info.min)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype.name})"
