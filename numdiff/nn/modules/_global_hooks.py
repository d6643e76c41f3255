"""Forward hooks that run on every module's call, PyTorch's
``torch.nn.modules.module.register_module_forward_pre_hook`` and ``register_module_forward_hook``
(a profiler or a debugging print that should see every layer). They run before each module's
own hooks of the same kind, as PyTorch runs them; Module.__call__ checks these two registries
before taking its no-hook path."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from numdiff.autograd.hooks import RemovableHandle
from numdiff.nn.modules._module_hooks import KeywordHook, add_hook

forward_pre_hooks: OrderedDict = OrderedDict()
forward_hooks: OrderedDict = OrderedDict()


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, args)`` before every module's forward (before the module's own
    pre-hooks); a returned value replaces the inputs.

    >>> handle = register_module_forward_pre_hook(lambda module, args: print(type(module).__name__))
    >>> handle.remove()
    """
    return add_hook(forward_pre_hooks, hook, prepend=False)


def register_module_forward_hook(
    hook: Callable[..., Any], *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Call ``hook(module, args, output)`` after every module's forward (before the module's own
    hooks); a returned value replaces the output. `with_kwargs` and `always_call` as in
    Module.register_forward_hook.

    >>> handle = register_module_forward_hook(lambda module, args, output: None)
    >>> handle.remove()
    """
    if with_kwargs or always_call:
        hook = KeywordHook(hook, with_kwargs, always_call)
    return add_hook(forward_hooks, hook, prepend=False)
