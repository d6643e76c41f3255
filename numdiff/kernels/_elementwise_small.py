"""The small host backward of the elementwise rules: one Python function per (rule, needed inputs).

At most `numdiff.kernels.elementwise.SMALL` elements, a rule's backward is a few NumPy calls on
arrays of a few dozen elements, where the Python around them is the cost: numdiff.kernels.elementwise
builds a dict of names and evaluates each expression with `eval`. Here the same NumPy expressions are
compiled once into one function of positional arrays (the eager per-op path, ops/elementwise.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._ground.scalar_expressions import ScalarRule
from numdiff.kernels._codegen import vjp_expressions
from numdiff.kernels.elementwise import _NUMPY_SCOPE


def small_backward(rule: ScalarRule, needed: tuple[int, ...]) -> Any:
    """For a host gradient of at most `SMALL` elements: ``function(g, *saved, *attrs) -> list`` of
    the gradients in `needed` (arrays in g's shape and dtype; `saved` the arrays of ``rule.saved``,
    None where not kept; `attrs` the values of ``rule.attr_names``).

    The same NumPy expressions `backward` evaluates at that size, compiled once into one Python
    function: no dict of names and no eval per call (the eager per-op path, ops/elementwise.py). An
    expression with a ``where`` runs under ``np.errstate(all="ignore")``, as `backward` runs it:
    both branches are computed, so overflow in the branch not taken is expected.

    >>> from numdiff._ground.scalar_rules import RULES
    >>> small_backward(RULES["mul"], (0,))(np.ones(2), None, np.array([2.0, 3.0]))
    [array([2., 3.])]
    >>> small_backward(RULES["leaky_relu"], (0,))(np.ones(2), np.array([-1.0, 1.0]), 0.1)
    [array([0.1, 1. ])]
    """
    key = (rule.name, needed)
    if key not in _SMALL_BACKWARDS:
        expressions = vjp_expressions(rule, needed)
        lines = [f"def small_backward({', '.join(['g', *rule.saved, *rule.attr_names])}):"]
        for i, expression in enumerate(expressions):
            if "where(" in expression:
                lines.append("    with _errstate(all='ignore'):")
                lines.append(f"        r_{i} = {expression}")
            else:
                lines.append(f"    r_{i} = {expression}")
            # A result that folded to a number, or kept an operand's shape or dtype: g's.
            lines.append(f"    if type(r_{i}) is not _ndarray or r_{i}.dtype is not g.dtype or r_{i}.shape != g.shape:")
            lines.append(f"        r_{i} = _fitted(r_{i}, g)")
        lines.append(f"    return [{', '.join(f'r_{i}' for i in range(len(expressions)))}]")
        scope = {
            **_NUMPY_SCOPE, "__builtins__": {"type": type}, "__name__": __name__, "_ndarray": np.ndarray, "_fitted": _fitted,
            "_errstate": np.errstate,
        }  # fmt: skip
        exec(compile("\n".join(lines), f"<small backward of {rule.name}>", "exec"), scope)
        _SMALL_BACKWARDS[key] = scope["small_backward"]
    return _SMALL_BACKWARDS[key]


def _fitted(result: Any, g: np.ndarray) -> np.ndarray:
    if type(result) is not np.ndarray or result.dtype != g.dtype:
        result = np.asarray(result, dtype=g.dtype)
    return result if result.shape == g.shape else np.array(np.broadcast_to(result, g.shape))


# (rule name, needed inputs) -> its small_backward function, made on first use.
_SMALL_BACKWARDS: dict[tuple[str, tuple[int, ...]], Any] = {}


__all__ = ["small_backward"]
