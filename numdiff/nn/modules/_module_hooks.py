"""Forward hooks registered with PyTorch's keyword options, the registry insertion all kinds share,
the hooks on every module's call, PyTorch's ``register_module_forward_pre_hook`` and
``register_module_forward_hook`` (a profiler or a debugging print that should see every layer),
and the hooks on every registration of a parameter, buffer or submodule.
The call hooks run before each module's own hooks of the same kind, as PyTorch runs them;
Module.__call__ checks their two registries before taking its no-hook path."""

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


parameter_registration_hooks: OrderedDict = OrderedDict()
buffer_registration_hooks: OrderedDict = OrderedDict()
module_registration_hooks: OrderedDict = OrderedDict()


def registered(registry: OrderedDict, module: Module, name: str, value: Any) -> Any:
    """`value` as the registration hooks of its kind leave it: each may return a replacement."""
    for hook in tuple(registry.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def register_module_parameter_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, param)`` whenever any module registers a parameter (not None); a
    returned Parameter is registered in its place.

    >>> handle = register_module_parameter_registration_hook(lambda module, name, param: None)
    >>> handle.remove()
    """
    return add_hook(parameter_registration_hooks, hook, prepend=False)


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, buffer)`` whenever any module registers or assigns a buffer (None
    included); a returned tensor is registered in its place.

    >>> handle = register_module_buffer_registration_hook(lambda module, name, buffer: None)
    >>> handle.remove()
    """
    return add_hook(buffer_registration_hooks, hook, prepend=False)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, submodule)`` whenever any module registers or assigns a submodule
    (None included); a returned module is registered in its place.

    >>> handle = register_module_module_registration_hook(lambda module, name, submodule: None)
    >>> handle.remove()
    """
    return add_hook(module_registration_hooks, hook, prepend=False)
