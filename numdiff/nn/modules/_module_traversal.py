"""Module's walks over its tree (``named_modules``, ``children``, ``named_parameters``,
``buffers``, ``get_submodule``, ``apply``...), kept apart from the registration and calling
machinery in module.py: they change with the order and naming PyTorch gives these walks, not with
how layers are registered or called."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numdiff.nn.modules.module import Module
    from numdiff.nn.parameter import Parameter
    from numdiff.tensor import Tensor


class ModuleTraversal:
    """The walks every Module has, over ``_modules``, ``_parameters`` and ``_buffers``: depth
    first, this module before its children, each shared module or tensor once unless asked."""

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(name, module) for this module and every descendant, depth first, each once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, kind: str, prefix: str, recurse: bool, remove_duplicate: bool) -> Iterator[tuple[str, Tensor]]:
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in module.__dict__[kind].items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, Parameter) pairs: own parameters first, then each child's, shared ones once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs, in the order of `named_parameters`."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        """The descendant at a dotted path such as ``"features.0"``."""
        module = self
        for part in target.split(".") if target else []:
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no submodule '{part}' (looking up '{target}')")
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if module._parameters.get(name) is None:
            raise AttributeError(f"{type(module).__name__} has no parameter '{name}' (looking up '{target}')")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as ``"bn.running_mean"``, persistent or not."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if module._buffers.get(name) is None:
            raise AttributeError(f"{type(module).__name__} has no buffer '{name}' (looking up '{target}')")
        return module._buffers[name]

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every child (recursively), then on this module; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self
