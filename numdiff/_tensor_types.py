"""PyTorch's legacy tensor types: ``numdiff.FloatTensor([1, 2])``, ``numdiff.LongTensor(2, 3)``,
``isinstance(t, numdiff.FloatTensor)`` and ``t.type(numdiff.LongTensor)``.

Each is a class whose calls build a CPU tensor of its dtype and whose isinstance checks a tensor's
dtype and device; it is never the class of a tensor (that is always numdiff.Tensor).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.backend import is_numpy
from numdiff.creation import empty, tensor
from numdiff.tensor import Tensor


class TensorType(type):
    """The metaclass of FloatTensor and its siblings."""

    dtype: _dtype.dtype

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args: Any) -> Tensor:
        if not args:
            return empty(0, dtype=cls.dtype)
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return empty(*args, dtype=cls.dtype)  # FloatTensor(2, 3): uninitialised, of that shape
        if len(args) == 1 and (isinstance(args[0], (list, tuple, Tensor)) or is_numpy(args[0])):
            data = args[0].detach().cpu().numpy() if isinstance(args[0], Tensor) else args[0]
            return tensor(data, dtype=cls.dtype)
        raise TypeError(
            f"{cls.__name__}(): expected sizes (ints) or one sequence of data, got "
            f"({', '.join(type(a).__name__ for a in args)})"
        )

    def __repr__(cls) -> str:
        return f"<class 'numdiff.{cls.__name__}'>"


def legacy_array(args: tuple[Any, ...]) -> Any:
    """The array of ``numdiff.Tensor(*args)``: `args` are sizes or one piece of data, and the
    dtype is the default one (``Tensor([1, 2])`` is float32, as in PyTorch)."""
    made = TensorType.__call__(_make(_dtype.get_default_dtype()), *args)
    return made._data


def _make(d: _dtype.dtype) -> TensorType:
    return TensorType(d.tensor_type, (), {"dtype": d, "__doc__": f"A CPU tensor of dtype {d!r} (legacy type)."})


FloatTensor = _make(_dtype.float32)
DoubleTensor = _make(_dtype.float64)
HalfTensor = _make(_dtype.float16)
BFloat16Tensor = _make(_dtype.bfloat16)
CharTensor = _make(_dtype.int8)
ByteTensor = _make(_dtype.uint8)
ShortTensor = _make(_dtype.int16)
IntTensor = _make(_dtype.int32)
LongTensor = _make(_dtype.int64)
BoolTensor = _make(_dtype.bool_)

__all__ = [
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
    "IntTensor", "LongTensor", "ShortTensor",
]
