"""The registry of differentiable ops: the list of what numdiff can differentiate.

Tests walk `OPS` and fail for any op that has no gradient check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from numdiff.autograd.function import Function

OPS: dict[str, type[Function]] = {}

F = TypeVar("F", bound=type[Function])


def register(name: str) -> Callable[[F], F]:
    """Class decorator: mark a built-in `Function` as an array-level op and list it under `name`."""

    def decorate(cls: F) -> F:
        if name in OPS:
            raise ValueError(f"op {name!r} is already registered by {OPS[name].__qualname__}")
        cls.array_forward = True
        cls.op_name = name
        OPS[name] = cls
        return cls

    return decorate
