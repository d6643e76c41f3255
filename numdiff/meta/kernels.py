"""The meta backend's kernel launchers: every CPU launcher's name and parameters, computing nothing.

A kernel writes into arrays its op allocated (``out``, ``res``, ``grad_in``, ...), so on the meta
device, where those arrays are MetaArrays that already carry the result's shape and dtype, a
launcher has nothing to do but hand back what the CPU launcher would return. The two elementwise
launchers allocate their results, so they are written out here; every other launcher is made from
its CPU twin's signature by :func:`writes_nothing`, so a kernel added to the CPU backend runs on the
meta device with no further code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff.meta.array import MetaArray

WRITTEN = ("out", "res", "grad_in", "grad_weight")
"""The parameter names under which CPU launchers take the array they fill and return."""


def writes_nothing(cpu_launcher: Callable[..., Any]) -> Callable[..., Any]:
    """A meta launcher with `cpu_launcher`'s parameters that returns what it would return (its
    filled array, or None) and computes nothing."""
    signature = inspect.signature(cpu_launcher)
    written = next((name for name in WRITTEN if name in signature.parameters), None)

    def launch(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        return None if written is None else bound.arguments[written]

    launch.__name__ = launch.__qualname__ = cpu_launcher.__name__
    launch.__signature__ = signature
    launch.__doc__ = f"{cpu_launcher.__name__} on meta arrays: returns its filled array, computes nothing."
    return launch


def rule_forward(rule: Any, inputs: tuple, attrs: tuple, shape: tuple, dtype: Any, like: Any) -> MetaArray:
    """An elementwise rule's result: a meta array of `shape` and `dtype`."""
    return MetaArray(shape, dtype)


def rule_backward(rule: Any, needed: tuple[int, ...], values: dict, attrs: tuple) -> list[MetaArray]:
    """An elementwise rule's gradients, each in the output gradient's shape and dtype."""
    g = values["g"]
    return [MetaArray(g.shape, np.dtype(g.dtype)) for _ in needed]
