"""Elementwise unary functions: generated from their scalar rules (numdiff/_ground/scalar_rules.py).

Each is the public function of numdiff/ops/elementwise.py: integer inputs become float32 (exp,
log, ...) or keep their dtype (abs, sign), as in PyTorch.
"""

from __future__ import annotations

from typing import Any

from numdiff.ops.elementwise import PUBLIC
from numdiff.tensor import Tensor

exp = PUBLIC["exp"]
log = PUBLIC["log"]
log1p = PUBLIC["log1p"]
expm1 = PUBLIC["expm1"]
sqrt = PUBLIC["sqrt"]
rsqrt = PUBLIC["rsqrt"]
abs = PUBLIC["abs"]  # noqa: A001 - PyTorch's name
sign = PUBLIC["sign"]
sin = PUBLIC["sin"]
cos = PUBLIC["cos"]
tanh = PUBLIC["tanh"]
atan = PUBLIC["atan"]
tan = PUBLIC["tan"]
asin = PUBLIC["asin"]
acos = PUBLIC["acos"]
sinh = PUBLIC["sinh"]
cosh = PUBLIC["cosh"]
asinh = PUBLIC["asinh"]
acosh = PUBLIC["acosh"]
atanh = PUBLIC["atanh"]
log2 = PUBLIC["log2"]
log10 = PUBLIC["log10"]
exp2 = PUBLIC["exp2"]
square = PUBLIC["square"]
reciprocal = PUBLIC["reciprocal"]
floor = PUBLIC["floor"]
ceil = PUBLIC["ceil"]
trunc = PUBLIC["trunc"]
frac = PUBLIC["frac"]


def round(input: Any, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Round to the nearest integer, ties to even; with `decimals`, to that many decimal places
    (``round(x * 10 ** decimals) / 10 ** decimals``, as PyTorch computes it). Zero gradient.

    >>> numdiff.round(numdiff.tensor([0.5, 1.5, 2.567]), decimals=1)  # doctest: +SKIP
    tensor([0.5000, 1.5000, 2.6000])
    """
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    if decimals == 0:
        return PUBLIC["round"](input)
    if not isinstance(input, Tensor) or input._data.dtype.kind not in "fV":
        what = f"dtype {input.dtype}" if isinstance(input, Tensor) else type(input).__name__
        raise TypeError(f"round: decimals={decimals} needs a floating point tensor, got {what}")
    if decimals > 0:
        scale = 10.0**decimals
        return PUBLIC["round"](input * scale) / scale
    scale = 10.0**-decimals
    return PUBLIC["round"](input / scale) * scale
sigmoid = PUBLIC["sigmoid"]
erf = PUBLIC["erf"]


absolute = abs  # PyTorch's other names
arctan2 = PUBLIC["atan2"]
