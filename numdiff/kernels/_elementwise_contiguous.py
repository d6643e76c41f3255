"""The eager backward of an elementwise op above `SMALL` elements, when every operand lies
C-contiguous in the gradient's shape (an activation's gradient and its saved input or output): the
flat loop `backward` would pick, called without building the name -> array dict, looking up the plan
or testing each operand's layout by name (ops/elementwise.py calls it).

That bookkeeping was most of a mid-sized node's backward: leaky_relu's on float32 (64, 128), one
thread, took 9.0 us against torch's 2.4, of which the loop itself is 1.3.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import get_num_threads

from numdiff._ground.scalar_expressions import ScalarRule
from numdiff.kernels import elementwise

__all__ = ["contiguous_backward"]

_ndarray = np.ndarray
_F32 = np.dtype(np.float32)
# Distinct attribute values whose kernel form one rule keeps (a program sweeping a slope makes new ones).
_PRECISE_LIMIT = 64


def contiguous_backward(rule: ScalarRule, needed: tuple[int, ...]) -> Any:
    """``function(g, saved, attrs) -> list | None``: the gradients of the inputs in `needed` from a
    C-contiguous float32/float64 host gradient `g` and the arrays of ``rule.saved`` (`saved`, None
    where not kept), each result in g's shape, computed exactly as `elementwise.backward` computes
    them; None when an operand it reads is neither an array of g's shape laid out C-contiguous nor a
    saved number (0-d), so the caller takes the general path. None instead of a function for a rule whose backward runs
    as NumPy expressions at every size.

    >>> from numdiff._ground.scalar_rules import RULES
    >>> run = contiguous_backward(RULES["mul"], (0,))
    >>> run(np.ones(300), [None, np.full(300, 2.0)], ())[0][:3]
    array([2., 2., 2.])
    """
    key = (rule.name, needed)
    plan = elementwise._PLANS.get(key)
    if plan is None:
        plan = elementwise._PLANS[key] = elementwise._BackwardPlan(rule, needed)
    if plan.numpy_first:
        return None
    # Where each operand of the loop comes from: -1 for g, else its index in rule.saved.
    sources = tuple(-1 if name == "g" else rule.saved.index(name) for name in plan.reads)
    kernels: dict = {}  # (operand pattern, parallel) -> the flat loop
    grain = elementwise.GRAIN
    count = len(needed)
    precise: dict = {}

    def run(g: np.ndarray, saved: list, attrs: tuple) -> list | None:
        shape = g.shape
        operands = []
        pattern = ""
        for source in sources:
            value = g if source < 0 else saved[source]
            if type(value) is not _ndarray:
                return None
            if value.shape == shape and value.flags.c_contiguous:
                operands.append(value.ravel())
                pattern += "A"
            elif value.ndim == 0:
                # A Python number the op saved (w - 0.01 * g): read once, as _launch reads it.
                operands.append(value[()])
                pattern += "S"
            else:
                return None
        size = g.size
        parallel = size > grain and get_num_threads() > 1
        kernel = kernels.get((pattern, parallel))
        if kernel is None:
            kernel = kernels[pattern, parallel] = elementwise._kernel(
                rule, "backward", needed, pattern, "flat", parallel
            )
        if attrs:
            # The attributes as the loop takes them (float32 for a float32 gradient), made once per
            # value: a layer's negative_slope is the same on every call.
            key = (attrs, g.dtype is _F32)
            converted = precise.get(key)
            if converted is None:
                converted = elementwise._in_kernel_precision(attrs, g.dtype)
                if len(precise) < _PRECISE_LIMIT:
                    precise[key] = converted
            attrs = converted
        if count == 1:
            result = np.empty(size, g.dtype)
            kernel(result, *operands, *attrs)
            return [result.reshape(shape)]
        results = [np.empty(size, g.dtype) for _ in needed]
        kernel(*results, *operands, *attrs)
        return [r.reshape(shape) for r in results]

    return run
