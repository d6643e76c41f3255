"""PyTorch's dtype names, for ``numdiff.float16``, ``numdiff.long`` and the rest (defined in _dtype)."""

from numdiff._dtype import bfloat16, float16, int8, int16, uint8
from numdiff._dtype import float16 as half
from numdiff._dtype import float32 as float  # noqa: A004 - PyTorch's names for the same dtypes
from numdiff._dtype import float64 as double
from numdiff._dtype import int16 as short
from numdiff._dtype import int32 as int  # noqa: A004
from numdiff._dtype import int64 as long

__all__ = ["bfloat16", "double", "float", "float16", "half", "int", "int8", "int16", "long", "short", "uint8"]
