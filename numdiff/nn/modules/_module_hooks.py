"""Forward hooks registered with PyTorch's keyword options, and the registry insertion both kinds share."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from numdiff.autograd.hooks import RemovableHandle

if TYPE_CHECKING:
    from numdiff.nn.modules.module import Module


class KeywordHook:
    """A forward (pre-)hook registered with PyTorch's with_kwargs or always_call options."""

    __slots__ = ("function", "with_kwargs", "always_call")

    def __init__(self, function: Callable[..., Any], with_kwargs: bool = True, always_call: bool = False) -> None:
        self.function, self.with_kwargs, self.always_call = function, with_kwargs, always_call

    def __call__(self, *args: Any) -> Any:
        return self.function(*args)

    def call(self, module: Module, args: tuple, kwargs: dict, output: Any) -> Any:
        if self.with_kwargs:
            return self.function(module, args, kwargs, output)
        return self.function(module, args, output)


def add_hook(registry: OrderedDict, hook: Callable[..., Any], prepend: bool) -> RemovableHandle:
    target = hook.function if type(hook) is KeywordHook else hook
    if not callable(target):
        raise TypeError(f"hook must be callable, got {type(target).__name__}")
    handle = RemovableHandle(registry)
    registry[handle.id] = hook
    if prepend:
        registry.move_to_end(handle.id, last=False)
    return handle
