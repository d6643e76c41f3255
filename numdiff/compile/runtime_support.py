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
