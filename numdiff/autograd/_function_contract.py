"""The parts of the custom-Function contract that need no import of Tensor: its error, and
`once_differentiable`, a backward that is not itself differentiable (its result, taken with grad
mode on and a gradient that requires grad, hangs from a node whose own backward raises, so a second
derivative through it fails loudly instead of silently being zero).

This module imports neither numdiff.tensor nor numdiff.autograd.function (it reads the Tensor class
that numdiff.tensor binds into numdiff.autograd.node), so it stays out of their import cycle.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numdiff.autograd import node as _node
from numdiff.autograd.grad_mode import _state


class CustomFunctionError(RuntimeError):
    """A user-defined Function broke the Function contract (its outputs, dirty inputs or backward)."""


def once_differentiable(backward: Callable) -> Callable:
    """Decorate a Function's backward that is not itself differentiable: it runs with grad mode
    off, and differentiating its result (create_graph=True, then backward again) raises.

    >>> class Exp(numdiff.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp(); ctx.save_for_backward(y); return y
    ...     @staticmethod
    ...     @once_differentiable
    ...     def backward(ctx, grad):
    ...         (y,) = ctx.saved_tensors
    ...         return grad * y
    """

    @functools.wraps(backward)
    def wrapper(ctx: Any, *grads: Any) -> Any:
        enabled = _state.enabled
        _state.enabled = False
        try:
            result = backward(ctx, *grads)
        finally:
            _state.enabled = enabled
        if not enabled:
            return result
        if not any(isinstance(g, _node.Tensor) and g._requires_grad for g in grads):
            return result
        anchors = [g for g in grads if isinstance(g, _node.Tensor) and g._requires_grad]
        name = getattr(backward, "__qualname__", "backward")
        single = not isinstance(result, tuple)
        wrapped = tuple(
            delayed_error(g, anchors, name)
            if isinstance(g, _node.Tensor) and g.is_floating_point()
            else g
            for g in ((result,) if single else result)
        )
        return wrapped[0] if single else wrapped

    return wrapper


class _DelayedError:
    """The function of the node a not-differentiable backward's result hangs from (a
    once_differentiable backward's, or a numdiff op's with no second derivative): its own backward
    raises."""

    __name__ = "DelayedError"

    @staticmethod
    def backward(ctx: _node.Node, grad: Any) -> tuple:
        if ctx.op_reason:
            raise CustomFunctionError(f"trying to differentiate twice {ctx.backward_name}: {ctx.op_reason}")
        raise CustomFunctionError(
            f"trying to differentiate twice a function that was marked with @once_differentiable "
            f"({ctx.backward_name}): its backward is not recorded. Write the backward with "
            "differentiable numdiff ops and drop @once_differentiable to take higher derivatives."
        )


def delayed_error(result: Any, anchors: list, name: str, op_reason: str = "") -> Any:
    """`result` (computed with grad mode off) recorded as depending on `anchors`, through a node
    whose backward raises, saying `op_reason` for a numdiff op (once_differentiable's words without)."""
    node = _node.Node(_DelayedError, tuple(anchors))
    node.__dict__["backward_name"] = name
    node.__dict__["op_reason"] = op_reason
    return _node.Tensor._wrap(result._data, node, result._version_counter)
