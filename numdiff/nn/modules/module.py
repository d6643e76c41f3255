"""Module: the base class of layers, holding Parameters, buffers and submodules by attribute name."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from numdiff import _module_tracing, _profiling
from numdiff.autograd.grad_mode import no_grad
from numdiff.autograd.hooks import RemovableHandle
from numdiff.autograd.transform_state import anywhere, host_step
from numdiff.nn.modules import _backward_hooks, _module_hooks, _state_dict
from numdiff.nn.modules._backward_hooks import add_backward_hook
from numdiff.nn.modules._backward_hooks import (
    register_module_full_backward_hook as register_module_full_backward_hook,
)
from numdiff.nn.modules._backward_hooks import (
    register_module_full_backward_pre_hook as register_module_full_backward_pre_hook,
)
from numdiff.nn.modules._module_hooks import KeywordHook as _KeywordHook
from numdiff.nn.modules._module_hooks import add_hook as _add_hook
from numdiff.nn.modules._module_hooks import (
    register_module_buffer_registration_hook as register_module_buffer_registration_hook,
)
from numdiff.nn.modules._module_hooks import register_module_forward_hook as register_module_forward_hook
from numdiff.nn.modules._module_hooks import (
    register_module_forward_pre_hook as register_module_forward_pre_hook,
)
from numdiff.nn.modules._module_hooks import (
    register_module_module_registration_hook as register_module_module_registration_hook,
)
from numdiff.nn.modules._module_hooks import (
    register_module_parameter_registration_hook as register_module_parameter_registration_hook,
)
from numdiff.nn.modules._module_placement import ModulePlacement
from numdiff.nn.modules._module_traversal import ModuleTraversal
from numdiff.nn.modules._state_dict_hooks import StateDictHooks
from numdiff.nn.parameter import Buffer, Parameter
from numdiff.tensor import Tensor


class Module(ModuleTraversal, ModulePlacement, StateDictHooks):
    """Base class for neural-network layers; subclasses set attributes and define `forward`.

    >>> class Net(Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = numdiff.nn.Linear(2, 1)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> [name for name, _ in Net().named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    training: bool

    def __init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _module_tracing.tracing:  # numdiff.fx is tracing: the tracer records or inlines the call
            tracer = _module_tracing.current()
            if tracer is not None:
                return tracer.call_module(self, _CallWithHooks(self), args, kwargs)
        if _profiling.recorder is not None:
            return _profiling.recorder.record(f"nn.Module: {type(self).__name__}", "module",
                                              self._call_with_hooks, args, kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks or _module_hooks.forward_pre_hooks
                or _module_hooks.forward_hooks or _backward_hooks.backward_hooks or _backward_hooks.backward_pre_hooks
                or "_full_backward_hooks" in self.__dict__):
            return self.forward(*args, **kwargs)  # the usual case: no hooks to copy and walk
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        routed = _backward_hooks.wanted(self)
        if not (self._forward_pre_hooks or self._forward_hooks or _module_hooks.forward_pre_hooks
                or _module_hooks.forward_hooks or routed):
            return self.forward(*args, **kwargs)
        for hook in [*_module_hooks.forward_pre_hooks.values(), *self._forward_pre_hooks.values()]:
            if type(hook) is _KeywordHook:
                result = hook.function(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                            f"but got {result!r}"
                        )
                    args, kwargs = result
                continue
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        call, args = _backward_hooks.route_inputs(self, args) if routed else (None, args)
        hooks = [*_module_hooks.forward_hooks.values(), *self._forward_hooks.values()]
        try:
            output = self.forward(*args, **kwargs)
        except BaseException:
            for hook in hooks:  # those registered with always_call run on the way out too
                if type(hook) is _KeywordHook and hook.always_call:
                    hook.call(self, args, kwargs, None)
            raise
        for hook in hooks:
            result = hook.call(self, args, kwargs, output) if type(hook) is _KeywordHook else hook(self, args, output)
            if result is not None:
                output = result
        return output if call is None else _backward_hooks.route_outputs(call, output)

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before forward; a returned value replaces the inputs. With
        `with_kwargs`, ``hook(module, args, kwargs)``, which may return ``(new_args, new_kwargs)``."""
        return _add_hook(self._forward_pre_hooks, _KeywordHook(hook) if with_kwargs else hook, prepend)

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after forward; a returned value replaces the output.
        With `with_kwargs`, ``hook(module, args, kwargs, output)``; with `always_call`, the hook also
        runs (its result unused) when forward raises, before the exception goes on."""
        if with_kwargs or always_call:
            hook = _KeywordHook(hook, with_kwargs, always_call)
        return _add_hook(self._forward_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` once the gradients of the module's tensor
        inputs are computed; a returned tuple replaces grad_input (numdiff/nn/modules/_backward_hooks.py)."""
        return add_backward_hook(self, "_full_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs arrive; a
        returned tuple replaces grad_output."""
        return add_backward_hook(self, "_full_backward_pre_hooks", hook, prepend)

    # ------------------------------------------------------------------ registration
    def _check_name(self, kind: str, name: Any, dicts: tuple[str, ...]) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f'{kind} name can\'t be empty or contain ".", got {name!r}')
        owned = any(name in self.__dict__[d] for d in dicts)
        if hasattr(self, name) and not owned:
            raise KeyError(f"attribute '{name}' already exists on {type(self).__name__}")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a Parameter (or None, a declared-but-absent parameter such as a disabled bias)."""
        self._check_name("parameter", name, ("_parameters",))
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(numdiff.nn.Parameter or None required)"
            )
        if param is not None and not param.is_leaf:
            raise ValueError(
                f"cannot assign non-leaf Tensor to parameter '{name}' (produced by {param.grad_fn.name()})"
            )
        if param is not None and _module_hooks.parameter_registration_hooks:
            param = _module_hooks.registered(_module_hooks.parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (running means); saved when persistent."""
        self._check_name("buffer", name, ("_buffers",))
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None required)")
        if _module_hooks.buffer_registration_hooks:
            tensor = _module_hooks.registered(_module_hooks.buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as ``self.<name>``."""
        self._check_name("module", name, ("_modules",))
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if _module_hooks.module_registration_hooks:
            module = _module_hooks.registered(_module_hooks.module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _forget(self, name, "_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(numdiff.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Buffer):
            if params is None:
                raise AttributeError("cannot assign buffers before Module.__init__() call")
            _forget(self, name, "_buffers")
            self.register_buffer(name, value, persistent=value.persistent)
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _forget(self, name, "_modules")
            self._modules[name] = _module_hooks.registered(_module_hooks.module_registration_hooks, self, name, value)
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (Module or None expected)")
            self._modules[name] = _module_hooks.registered(_module_hooks.module_registration_hooks, self, name, None)
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            self._buffers[name] = _module_hooks.registered(_module_hooks.buffer_registration_hooks, self, name, value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Every parameter and submodule read in a forward comes here: the three tables written
        # out, not looped over (no tuple walk, one dict read a table instead of two).
        state = self.__dict__
        table = state.get("_parameters")
        if table is not None and name in table:
            return table[name]
        table = state.get("_buffers")
        if table is not None and name in table:
            return table[name]
        table = state.get("_modules")
        if table is not None and name in table:
            return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for kind in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(kind, {}):
                del self.__dict__[kind][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        own = list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(super().__dir__()) | set(own))

    # ------------------------------------------------------------------ modes and gradients
    def train(self, mode: bool = True) -> Module:
        """Set training mode (dropout active, batch statistics) on this module and its descendants."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        object.__setattr__(self, "training", mode)
        # Through each child's own train(), so a subclass that overrides it is honoured.
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (False) or unfreeze (True) every parameter; frozen ones get no gradient."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None by default, else to zeros."""
        if anywhere.levels:  # numdiff.compile's trace replays it on each call (compile/host_steps.py)
            host_step(self, "zero_grad", lambda: self._zero_grad(set_to_none))
        else:
            self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
        for param in self.parameters():
            if param._grad is None:
                continue
            if set_to_none:
                param._grad = None
            else:
                grad = param._grad
                # A gradient built with create_graph is part of a graph: cut it loose first.
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                with no_grad():
                    grad.zero_()

    # ------------------------------------------------------------------ state
    def state_dict(self, destination: dict | None = None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached unless `keep_vars`)."""
        return _state_dict.collect(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False) -> Any:
        """Copy values into parameters and buffers in place; returns (missing_keys, unexpected_keys).

        Shape mismatches always raise; with `strict`, so do missing and unexpected keys. Nothing is
        copied unless every check passes. With `assign`, the state dict's tensors themselves take
        the places (their dtype and memory kept; parameters stay Parameters with the module's
        requires_grad), as in PyTorch: an optimizer made before holds the old parameters.
        """
        return _state_dict.load(self, state_dict, strict, assign)

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The layer's settings, shown inside its repr; subclasses override it."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, module in self._modules.items():
            child = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


def _forget(module: Module, name: str, keep: str) -> None:
    """Drop `name` from wherever else it was registered, before it is registered in `keep`; its
    entry in `keep` stays where it is, so replacing a layer keeps its place in children() and
    state_dict() (PyTorch's order, which programs rely on: ``list(resnet.children())[:-1]``)."""
    for kind in ("_parameters", "_buffers", "_modules"):
        if kind != keep:
            module.__dict__[kind].pop(name, None)
    module._non_persistent_buffers_set.discard(name)
    module.__dict__.pop(name, None)


class _CallWithHooks:
    """A module's forward with its hooks, as numdiff.fx's Tracer.call_module runs a traced-through module."""

    def __init__(self, module: Module) -> None:
        self.module = module

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module._call_with_hooks(args, kwargs)
