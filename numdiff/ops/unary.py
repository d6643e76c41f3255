"""The one-input elementwise functions (``unary.exp``, ``unary.sin``, ...), round with PyTorch's
`decimals`, and PyTorch's other names of elementwise functions.

The functions are generated from their scalar rules (numdiff/_ground/scalar_rules.py) as
``numdiff.ops.elementwise.PUBLIC[name]`` and read from there: a new one-input row is here with no
edit. numdiff exports every rule that says so (``EXPORTS``).
"""

from __future__ import annotations

from typing import Any

from numdiff._ground.scalar_rules import RULES
from numdiff.ops.elementwise import PUBLIC
from numdiff.tensor import Tensor

globals().update({name: PUBLIC[name] for name, rule in RULES.items() if rule.arity == 1 and name != "round"})


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
    if input._data.dtype.itemsize == 2:
        # float16 and bfloat16 scale in float32, as PyTorch's kernel does: in float16 itself
        # 1234.5678 * 100 overflows to inf, and 25 * 1000 / 1000 rounds to 24.98.
        return round(input.float(), decimals=decimals).to(input.dtype)
    if decimals > 0:
        scale = 10.0**decimals
        return PUBLIC["round"](input * scale) / scale
    scale = 10.0**-decimals
    return PUBLIC["round"](input / scale) * scale


absolute = PUBLIC["abs"]  # PyTorch's other names
arctan2 = PUBLIC["atan2"]
