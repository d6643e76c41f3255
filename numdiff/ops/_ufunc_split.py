"""Large arithmetic forwards on every numdiff thread: the rule's parallel loop in place of the ufunc.

On the CPU an elementwise rule with a NumPy ufunc computes its forward with it (numdiff.ops.
elementwise, UFUNC_FORWARD): fastest on one thread at every size, but a ufunc runs on the calling
thread only, so at ``numdiff.set_num_threads(2)`` a residual add or a gating multiply kept one
core idle while PyTorch's split over both. For the rules in :data:`EXACT_LOOP_RULES` the
generated loop (numdiff.kernels.elementwise) gives the ufunc's result bit for bit, so from
:data:`SPLIT_MIN_ELEMENTS` output elements, with more than one thread, :func:`threaded_ufunc`
runs that loop's parallel build instead; below, on one thread, or for any other operands
(another dtype, a mixed pair, a broadcast or non-contiguous array, a NumPy scalar) the ufunc
computes as before.

Only the flat layout is taken: the broadcast loop nests were slower than the ufunc at every size
measured (x * gate, float32 (N, 16, 8, 8) by (N, 16, 1, 1): 14.5 us against 2.8 at 16384
elements), and only C-contiguous operands, whose ufunc result is C-contiguous too, so the result's
strides do not change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._ground.scalar_expressions import ScalarRule
from numdiff._lazy import lazy_module
from numdiff.backend import is_host

__all__ = ["EXACT_LOOP_RULES", "SPLIT_MIN_ELEMENTS", "threaded_ufunc"]

cpu = lazy_module("numdiff.kernels.elementwise")
threads = lazy_module("numdiff._threads")

EXACT_LOOP_RULES = frozenset({"add", "sub", "mul", "div", "neg", "abs", "square", "reciprocal"})
"""Rules whose forward is one correctly rounded IEEE operation per element (or a sign change), so
the generated loop and the ufunc agree bit for bit: no rounding choice is left to either. The
transcendental ones (exp, tanh, ...) are not here: the loop's polynomials differ from NumPy's in
the last bit, and a result must not depend on the thread count. maximum and minimum are not here:
which of -0.0 and 0.0 they return is NumPy's SIMD code's choice."""

SPLIT_MIN_ELEMENTS = 1 << 19
"""Output elements from which the parallel loop replaces the ufunc at two or more threads.
Measured (float32, two threads against the ufunc, min of 400 calls, 2026-12-06, beside other
jobs: load average 8.8 on the 2 cores): neg 33.6 -> 23.5 us at 2**19 elements, 62.1 -> 37.6 at
2**20; add 116.6 -> 99.1 at 2**20; x * 0.5 124.6 -> 69.8 at 2**21; at 2**16-2**18 the loop's
best was no better than the ufunc's (add 2**17: 12.8 us by the ufunc) and its typical call far
worse on a busy machine, where a parallel region waits for a worker that lost its core."""

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_EXACT_INT = 1 << 53  # a Python int below this converts to float64 exactly


def _split(rule: ScalarRule, operands: tuple) -> np.ndarray | None:
    """The rule's parallel loop over `operands` when they are the flat layout and large enough, with
    more than one thread, else None (the ufunc computes)."""
    shape = None
    dtype = None
    for value in operands:
        kind = type(value)
        if is_host(value):
            if shape is None:
                shape, dtype = value.shape, value.dtype
            elif value.shape != shape or value.dtype != dtype:
                return None
            if not value.flags.c_contiguous:
                return None
        elif kind is not float and (kind is not int or not -_EXACT_INT < value < _EXACT_INT):
            return None
    if dtype != _F32 and dtype != _F64:  # no array, or not float32/float64
        return None
    if threads.get_num_threads() < 2:
        return None
    return cpu.forward(rule, operands, (), shape, dtype)


def threaded_ufunc(rule: ScalarRule, ufunc: Callable[..., Any]) -> Callable[..., Any]:
    """`ufunc`, or for a rule of :data:`EXACT_LOOP_RULES` a function that runs the rule's parallel
    loop on large float operands at two or more threads (module docstring) and `ufunc` otherwise.

    >>> from numdiff._ground.scalar_rules import RULES
    >>> add = threaded_ufunc(RULES["add"], np.add)
    >>> add(np.ones(3, np.float32), 2.0)
    array([3., 3., 3.], dtype=float32)
    """
    if rule.name not in EXACT_LOOP_RULES:
        return ufunc

    if rule.arity == 1:

        def unary(x: Any) -> Any:
            if is_host(x) and x.size >= SPLIT_MIN_ELEMENTS:
                out = _split(rule, (x,))
                if out is not None:
                    return out
            return ufunc(x)

        return unary

    def binary(a: Any, b: Any) -> Any:
        if (is_host(a) and a.size >= SPLIT_MIN_ELEMENTS) or (is_host(b) and b.size >= SPLIT_MIN_ELEMENTS):
            out = _split(rule, (a, b))
            if out is not None:
                return out
        return ufunc(a, b)

    return binary
