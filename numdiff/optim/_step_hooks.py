"""Hooks around ``Optimizer.step``, PyTorch's contracts: ``register_step_pre_hook`` and
``register_step_post_hook`` on one optimizer, ``register_optimizer_step_pre_hook`` and
``register_optimizer_step_post_hook`` on all. Pre-hooks run global first, then the optimizer's,
and may return ``(new_args, new_kwargs)``; post-hooks run the optimizer's first, then the global
ones. An optimizer's registries are made on first registration, so pickled optimizers still load."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from itertools import chain
from typing import Any

from numdiff.autograd.hooks import RemovableHandle

global_pre_hooks: OrderedDict = OrderedDict()
global_post_hooks: OrderedDict = OrderedDict()


def add_hook(registry: OrderedDict, hook: Callable[..., Any]) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"optimizer step hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(registry)
    registry[handle.id] = hook
    return handle


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
    if not (global_pre_hooks or global_post_hooks or mine.get("_step_pre_hooks") or mine.get("_step_post_hooks")):
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
