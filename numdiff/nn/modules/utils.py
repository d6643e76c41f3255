"""torch.nn.modules.utils: the tuple helpers layers use to accept an int or a tuple per dimension.

>>> from numdiff.nn.modules.utils import _pair, _triple
>>> _pair(3), _pair((1, 2)), _triple(2)
((3, 3), (1, 2), (2, 2, 2))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

__all__ = ["_ntuple", "_pair", "_quadruple", "_reverse_repeat_tuple", "_single", "_triple"]


def __dir__() -> list[str]:
    return sorted(__all__)


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """A parser that returns an iterable argument as a tuple and repeats anything else `n` times."""

    def parse(x: Any) -> tuple:
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: Iterable[Any], n: int) -> tuple:
    """Reverse `t` and repeat each element `n` times: a conv padding (ph, pw) in F.pad's order."""
    return tuple(x for x in reversed(tuple(t)) for _ in range(n))
