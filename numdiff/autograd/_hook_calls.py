"""Calling the hooks of the backward walk (numdiff.autograd.engine): tensor hooks run in order
on a gradient, each may replace it only by a tensor of the same shape, dtype and device; a
post-accumulate-grad hook must return None. The errors name the hook and the values involved.
Gradients are Tensors, typed Any: numdiff.tensor imports the engine, so it is imported here
only where an isinstance check needs it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["apply_hooks", "check_hook_result", "refuse_post_hook_result"]


def apply_hooks(hooks: dict | None, grad: Any) -> Any:
    if hooks:
        for hook in list(hooks.values()):
            replacement = hook(grad)
            if replacement is not None:
                check_hook_result(hook, grad, replacement)
                grad = replacement
    return grad


def check_hook_result(hook: object, grad: Any, replacement: object) -> None:
    """A hook may replace a gradient only by a tensor of the same shape, dtype and device."""
    from numdiff.tensor import Tensor

    name = getattr(hook, "__qualname__", None) or repr(hook)
    if not isinstance(replacement, Tensor):
        shown = repr(replacement)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(
            f"hook '{name}' returned a {type(replacement).__name__} ({shown}): a gradient hook must "
            "return None or a Tensor (wrap an array with numdiff.tensor(...))"
        )
    expected = (tuple(grad.shape), grad.dtype, grad.device)
    got = (tuple(replacement.shape), replacement.dtype, replacement.device)
    for what, want, have in zip(("shape", "dtype", "device"), expected, got):
        if want != have:
            raise RuntimeError(
                f"hook '{name}' has changed the {what} of the gradient: expected {what} {want!r}, "
                f"got {have!r}. A hook must return a gradient of the same shape, dtype and device."
            )


def refuse_post_hook_result(hook: object, variable: Any) -> None:
    name = getattr(hook, "__qualname__", None) or repr(hook)
    raise RuntimeError(
        f"post-accumulate-grad hook '{name}' of the leaf of shape {tuple(variable.shape)} returned a "
        "value, but such a hook must return None: it runs after .grad is written. Change the "
        "gradient in place there (p.grad.mul_(...)), or use register_hook to replace it before."
    )
