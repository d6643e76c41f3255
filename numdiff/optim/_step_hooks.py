"""Hooks around ``Optimizer.step``, PyTorch's contracts: ``register_step_pre_hook`` and
``register_step_post_hook`` on one optimizer, ``register_optimizer_step_pre_hook`` and
``register_optimizer_step_post_hook`` on all. Pre-hooks run global first, then the optimizer's,
and may return ``(new_args, new_kwargs)``; post-hooks run the optimizer's first, then the global
ones. An optimizer's registries (these and its state-dict hooks') are made on first registration,
so pickled optimizers still load, and are not pickled (PyTorch pickles none either)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from itertools import chain
from typing import Any

from numdiff.autograd.hooks import RemovableHandle

global_pre_hooks: OrderedDict = OrderedDict()
global_post_hooks: OrderedDict = OrderedDict()


INSTANCE_REGISTRIES = (
    "_step_pre_hooks",
    "_step_post_hooks",
    "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks",
    "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)


def add_hook(
    registry: OrderedDict, hook: Callable[..., Any], prepend: bool = False, kind: str = "step"
) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"optimizer {kind} hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(registry)
    registry[handle.id] = hook
    if prepend:
        registry.move_to_end(handle.id, last=False)
    return handle


def run_state_dict_hooks(optimizer: Any, kind: str, *state_dict: dict) -> dict | None:
    """Run the optimizer's `kind` hooks on ``(optimizer, *state_dict)``; a dict a hook returns
    replaces the state dict for the hooks after it. Returns the last state dict (None without one)."""
    for hook in tuple(optimizer.__dict__.get(kind, {}).values()):
        result = hook(optimizer, *state_dict)
        if result is not None and state_dict:
            state_dict = (result,)
    return state_dict[0] if state_dict else None


def instance_registry(optimizer: Any, kind: str) -> OrderedDict:
    registry = optimizer.__dict__.get(kind)
    if registry is None:
        registry = optimizer.__dict__[kind] = OrderedDict()
    return registry


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's step.

    >>> register_optimizer_step_pre_hook(lambda opt, args, kwargs: None).remove()
    """
    return add_hook(global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's step.

    >>> register_optimizer_step_post_hook(lambda opt, args, kwargs: None).remove()
    """
    return add_hook(global_post_hooks, hook)


def run_with_hooks(optimizer: Any, step: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    mine = optimizer.__dict__
    if not (
        global_pre_hooks or global_post_hooks or mine.get("_step_pre_hooks") or mine.get("_step_post_hooks")
    ):
        return step(optimizer, *args, **kwargs)
    args = (optimizer, *args)  # the hooks see step's own arguments, the optimizer first, as PyTorch's
    for hook in list(chain(global_pre_hooks.values(), mine.get("_step_pre_hooks", {}).values())):
        result = hook(optimizer, args, kwargs)
        if result is not None:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(
                    f"{type(optimizer).__name__}.step's pre-hook must return None or a tuple of "
                    f"(new_args, new_kwargs), but got {result!r}"
                )
            args, kwargs = result
    out = step(*args, **kwargs)
    for hook in list(chain(mine.get("_step_post_hooks", {}).values(), global_post_hooks.values())):
        hook(optimizer, args, kwargs)
    return out
