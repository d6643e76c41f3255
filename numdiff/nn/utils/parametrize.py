"""numdiff.nn.utils.parametrize: a tensor of a module computed from other tensors, as PyTorch's.

``register_parametrization(module, "weight", P())`` moves ``module.weight`` to
``module.parametrizations.weight.original`` and makes ``module.weight`` a property that returns
``P()(original)`` each time it is read. Assigning to ``module.weight`` goes back through
``P().right_inverse`` when the parametrization has one. The module's class is swapped for a
subclass that holds the property, so other instances of the class are unaffected.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from numdiff.autograd.grad_mode import no_grad
from numdiff.nn.modules.container import ModuleDict, ModuleList
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]



class _CacheState(threading.local):
    """Per thread: how many cached() blocks are open, and the values computed in them."""

    depth = 0

    def __init__(self) -> None:
        self.values: dict[tuple[int, str], Tensor] = {}


_cache = _CacheState()


def __dir__() -> list[str]:
    return sorted(__all__)


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Inside this block, each parametrized tensor is computed once, on its first read.

    >>> with numdiff.nn.utils.parametrize.cached():
    ...     out = layer(x) + layer(x)   # layer.weight's parametrization runs once
    """
    _cache.depth += 1
    try:
        yield
    finally:
        _cache.depth -= 1
        if _cache.depth == 0:
            _cache.values.clear()


def _assign(target: Tensor, value: Tensor) -> None:
    """Write `value` into the registered tensor `target`, keeping its identity (an optimizer
    holding it still sees the new value); a different shape or dtype replaces its data."""
    with no_grad():
        if tuple(target.shape) == tuple(value.shape) and target.dtype == value.dtype:
            target.copy_(value)
        else:
            target.data = value.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to ``original`` (or to
    ``original0, original1, ...`` when the first right_inverse returns several tensors)."""

    def __init__(self, modules: list[Module], original: Tensor, unsafe: bool = False) -> None:
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules")
        super().__init__(modules)
        self.unsafe = unsafe
        first = modules[0]
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not self.unsafe and (new.shape != original.shape or new.dtype != original.dtype):
                raise ValueError(
                    f"{type(first).__name__}.right_inverse must keep the shape and dtype of the tensor "
                    f"({tuple(original.shape)}, {original.dtype}); it returned "
                    f"({tuple(new.shape)}, {new.dtype}). Pass unsafe=True to allow it"
                )
            _assign(original, new)
            _register_tensor(self, "original", original)
        else:
            for i, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise ValueError(f"{type(first).__name__}.right_inverse returned a non-tensor: {type(value).__name__}")
                value = value.detach()
                if isinstance(original, Parameter):
                    value = Parameter(value, original.requires_grad)
                _register_tensor(self, f"original{i}", value)
        if not self.unsafe:
            value = self()
            if not isinstance(value, Tensor):
                raise ValueError(f"a parametrization must return a tensor, {type(first).__name__} returned {type(value).__name__}")
            if value.shape != original.shape or value.dtype != original.dtype:
                raise ValueError(
                    f"the parametrization {type(first).__name__} changes the tensor from "
                    f"({tuple(original.shape)}, {original.dtype}) to ({tuple(value.shape)}, {value.dtype}); "
                    "pass unsafe=True to register it anyway"
                )

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that this list's output is `value` (through each right_inverse)."""
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                elif not self.unsafe and not isinstance(value, Tensor):
                    raise ValueError(f"{type(module).__name__} has no right_inverse to take several tensors")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"right_inverse must return a tensor here, got {type(value).__name__}")
                _assign(self.original, value)
            else:
                if len(value) != self.ntensors:
                    raise ValueError(f"right_inverse must return {self.ntensors} tensors, got {len(value)}")
                for i, tensor in enumerate(value):
                    _assign(getattr(self, f"original{i}"), tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _register_tensor(module: Module, name: str, tensor: Tensor) -> None:
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _parametrized_property(name: str) -> property:
    def get(self: Module) -> Tensor:
        if _cache.depth:
            key = (id(self), name)
            if key not in _cache.values:
                _cache.values[key] = self.parametrizations[name]()
            return _cache.values[key]
        return self.parametrizations[name]()

    def set_(self: Module, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    return property(get, set_, doc=f"``{name}``, computed by its parametrizations")


def _inject_class(module: Module) -> None:
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"_class_before_parametrizations": cls})


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has parametrizations (on `tensor_name`, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations swapped it for a subclass."""
    return type(module)._class_before_parametrizations if is_parametrized(module) else type(module)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of `parametrization` applied to the tensor now there.

    >>> layer = numdiff.nn.Linear(3, 3)
    >>> class Symmetric(numdiff.nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).transpose(-1, -2)
    >>> register_parametrization(layer, "weight", Symmetric())
    >>> numdiff.allclose(layer.weight, layer.weight.T)
    True
    """
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: the parametrization must be an nn.Module, got {type(parametrization).__name__}")
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            if not isinstance(value, Tensor) or value.shape != current.shape or value.dtype != current.dtype:
                got = f"({tuple(value.shape)}, {value.dtype})" if isinstance(value, Tensor) else type(value).__name__
                raise ValueError(
                    f"register_parametrization: {type(parametrization).__name__} changes '{tensor_name}' from "
                    f"({tuple(current.shape)}, {current.dtype}) to {got}; pass unsafe=True to allow it"
                )
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    if tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"register_parametrization: module.{tensor_name} is None, there is nothing to parametrize")
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_class(module)
            module.parametrizations = ModuleDict()
        setattr(type(module), tensor_name, _parametrized_property(tensor_name))
        module.parametrizations[tensor_name] = plist
        return module
    raise ValueError(
        f"register_parametrization: module {type(module).__name__} has no parameter or buffer named "
        f"'{tensor_name}' (it has {sorted(list(module._parameters) + list(module._buffers))})"
    )


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo `register_parametrization` on `tensor_name`: the tensor becomes a plain parameter (or
    buffer) again, holding its parametrized value (or, with ``leave_parametrized=False``, the
    original's)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: module {type(module).__name__} has no parametrization on '{tensor_name}'")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _assign(original, value)
    else:
        if not leave_parametrized:
            raise ValueError("remove_parametrizations: a tensor parametrized from several originals can only be removed with leave_parametrized=True")
        with no_grad():
            value = getattr(module, tensor_name)
        first = plist.original0
        original = Parameter(value.detach(), first.requires_grad) if isinstance(first, Parameter) else value.detach()
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module)._class_before_parametrizations
    return module


def transfer_parametrizations_and_params(from_module: Module, to_module: Module, tensor_name: str | None = None) -> Module:
    """Give `to_module` the parametrizations of `from_module` (all, or `tensor_name`'s) with the same
    original tensors' values."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not is_parametrized(to_module, name):
            if not hasattr(to_module, name):
                to_module.register_parameter(name, Parameter(getattr(from_module, name).detach().clone()))
            for parametrization in source:
                register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        originals = ["original"] if source.is_tensor else [f"original{i}" for i in range(source.ntensors)]
        for original in originals:
            _assign(getattr(target, original), getattr(source, original))
    return to_module
