"""Hook plumbing: handles returned by `register_hook` (so a hook can be removed again), the check
that a hook is callable, and the function of a node with post-hooks."""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count()


def check_callable(method: str, hook: Any) -> None:
    """Refuse a hook that cannot be called when it is registered, not when backward reaches it."""
    if not callable(hook):
        raise TypeError(f"{method}: the hook must be callable (a function of the gradient), got {type(hook).__name__}")


def tuple_prehook(hook: Any, grad: Any) -> Any:
    """Run a PyTorch-style node pre-hook (a tuple of gradients in, a tuple or None out) on the
    one gradient a numdiff node receives."""
    result = hook((grad,))
    if result is None:
        return None
    name = getattr(hook, "__qualname__", None) or repr(hook)
    if not isinstance(result, tuple):
        raise TypeError(
            f"node pre-hook '{name}' returned a {type(result).__name__}: a hook registered with "
            "grad_fn.register_prehook gets a tuple of gradients and must return a tuple of the same "
            "length, or None (use tensor.register_hook for a hook on one tensor's gradient)"
        )
    if len(result) != 1:
        raise RuntimeError(
            f"node pre-hook '{name}' returned {len(result)} gradients, but expected 1 (one per output of "
            "the node)"
        )
    return result[0]


class RemovableHandle:
    """``handle.remove()`` unregisters the hook it was returned for."""

    __slots__ = ("_registry", "id")

    def __init__(self, registry: dict[int, Any]) -> None:
        self._registry = registry
        self.id = next(_ids)

    def remove(self) -> None:
        self._registry.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


def with_post_hooks(function: type) -> type:
    """A subclass of a node's `function` whose backward runs the node's post-hooks after it:
    ``hook(grad_inputs, grad_outputs)`` sees the gradients computed for the inputs and may return
    a tuple of the same length that replaces them (PyTorch's Node.register_hook)."""

    def backward(ctx: Any, grad: Any) -> tuple:
        grads = function.backward(ctx, grad)
        grads = grads if isinstance(grads, tuple) else (grads,)
        for hook in tuple(ctx._post_hooks.values()):
            result = hook(grads, (grad,))
            if result is None:
                continue
            name = getattr(hook, "__qualname__", None) or repr(hook)
            if not isinstance(result, tuple):
                raise TypeError(
                    f"node hook '{name}' returned a {type(result).__name__}: a hook registered with "
                    "grad_fn.register_hook must return None or a tuple with one gradient (or None) per input"
                )
            if len(result) != len(grads):
                raise RuntimeError(
                    f"node hook '{name}' returned {len(result)} gradients, but the node has {len(grads)} inputs"
                )
            grads = result
        return grads

    # backward_into None: the hooks must see the gradient backward computes.
    return type(function.__name__, (function,), {"backward": staticmethod(backward), "backward_into": None})
