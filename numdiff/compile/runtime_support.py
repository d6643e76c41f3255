"""Helpers the generated code calls besides the ops themselves."""

from __future__ import annotations

from typing import Any

from numdiff.autograd.grad_mode import _state
from numdiff.tensor import Tensor


def tensor_forward(forward: Any, ctx: Any, *args: Any, **attrs: Any) -> Any:
    """Replay a user Function's forward, which takes and returns Tensors, on arrays."""
    wrapped = [Tensor._wrap(a, None, None) if hasattr(a, "dtype") and hasattr(a, "shape") else a for a in args]
    previous = _state.enabled
    _state.enabled = False
    try:
        out = forward(ctx, *wrapped, **attrs)
    finally:
        _state.enabled = previous
    if getattr(ctx, "saved", None):
        ctx.saved = tuple(s._data if isinstance(s, Tensor) else s for s in ctx.saved)
    return out._data if isinstance(out, Tensor) else out


def host_call(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Replay a public function that has no op (a comparison, argmax) on arrays."""
    wrapped = [Tensor._wrap(a, None, None) if hasattr(a, "dtype") and hasattr(a, "shape") else a for a in args]
    kwargs = {k: Tensor._wrap(v, None, None) if hasattr(v, "dtype") and hasattr(v, "shape") else v
              for k, v in kwargs.items()}
    previous = _state.enabled
    _state.enabled = False
    try:
        return function(*wrapped, **kwargs)._data
    finally:
        _state.enabled = previous


class ReplayNode:
    """What an op's backward reads of its node, rebuilt from a replayed forward's ctx."""

    def __init__(self, ctx: Any, needs_input_grad: tuple, like: Any) -> None:
        self.__dict__.update(ctx.__dict__)
        self.needs_input_grad = needs_input_grad
        self._like = like

    @property
    def saved_tensors(self) -> tuple:
        import numpy as np

        items = getattr(self, "saved", ())
        return tuple(
            Tensor._wrap(item if hasattr(item, "shape") else np.asarray(item, dtype=self._like.dtype), None, None)
            for item in items
        )


def eager_backward(function: Any, ctx: Any, grad: Any, needs_input_grad: tuple) -> tuple:
    """An op's own backward on the ctx of its replayed forward (ops whose backward is not traced)."""
    previous = _state.enabled
    _state.enabled = False
    try:
        grads = function.backward(ReplayNode(ctx, needs_input_grad, grad), Tensor._wrap(grad, None, None))
    finally:
        _state.enabled = previous
    if not isinstance(grads, tuple):
        grads = (grads,)
    return tuple(None if g is None else g._data for g in grads)
