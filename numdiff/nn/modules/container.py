"""Containers of modules: Sequential (a pipeline), ModuleList and ModuleDict (registered
collections of modules). The containers of parameters, ParameterList and ParameterDict, are in
:mod:`numdiff.nn.modules.parameter_containers` (importable from here too, as in PyTorch)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from numdiff.nn.modules.module import Module
from numdiff.nn.modules.parameter_containers import ParameterDict, ParameterList

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


def _index(container: Module, idx: Any) -> int:
    """A non-negative position from an int index, with an IndexError naming the container's length."""
    idx = operator.index(idx)
    size = len(container._modules)
    if not -size <= idx < size:
        raise IndexError(f"{type(container).__name__}: index {idx} is out of range for length {size}")
    return idx % size


def _sequential_operand(op: str, other: Any) -> Sequential:
    if not isinstance(other, Sequential):
        raise ValueError(f"Sequential {op}: only another Sequential can be added, got {type(other).__name__}")
    return other


def _repeat_count(op: str, times: Any) -> int:
    if not isinstance(times, int) or isinstance(times, bool):
        raise TypeError(f"Sequential {op}: the factor must be an int, got {type(times).__name__}")
    if times <= 0:
        raise ValueError(f"Sequential {op}: the factor must be positive, got {times}")
    return times


class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    >>> net = Sequential(numdiff.nn.Linear(2, 4), numdiff.nn.ReLU(), numdiff.nn.Linear(4, 1))
    >>> net[0], len(net)
    (Linear(in_features=2, out_features=4, bias=True), 3)
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(self, idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(self, idx)]
        self.add_module(key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[_index(self, idx)]]:
            del self._modules[key]
        # Renumber, so the names stay 0..n-1 as PyTorch keeps them.
        items = list(self._modules.values())
        self._modules.clear()
        for i, module in enumerate(items):
            self._modules[str(i)] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        """Add `module` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def __add__(self, other: Sequential) -> Sequential:
        """A new Sequential of these modules then `other`'s (the same module objects, as in PyTorch)."""
        return Sequential(*self, *_sequential_operand("+", other))

    def __iadd__(self, other: Sequential) -> Sequential:
        return self.extend(list(_sequential_operand("+=", other)))

    def __mul__(self, times: int) -> Sequential:
        """A new Sequential of these modules `times` over (repeated objects, so their weights are shared)."""
        return Sequential(*(list(self) * _repeat_count("*", times)))

    __rmul__ = __mul__

    def __imul__(self, times: int) -> Sequential:
        return self.extend(list(self) * (_repeat_count("*=", times) - 1))

    def insert(self, index: int, module: Module) -> Sequential:
        """Put `module` at position `index`, shifting the later ones."""
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.insert: expected a Module, got {type(module).__name__}")
        size = len(self)
        if not -size <= index <= size:
            raise IndexError(f"Sequential.insert: index {index} is out of range for length {size}")
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, item in enumerate(items):
            self.add_module(str(i), item)
        return self

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module


class ModuleList(Module):
    """A list of modules whose parameters the parent module registers (no forward of its own)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(self, idx))]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(self, idx)), module)

    def __delitem__(self, idx: int | slice) -> None:
        items = list(self._modules.values())
        del items[idx if isinstance(idx, slice) else _index(self, idx)]
        self._modules.clear()
        for i, module in enumerate(items):
            self._modules[str(i)] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __repr__(self) -> str:
        """Like Module's, but runs of identical children print once, as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(module).replace("\n", "\n  ") for module in self]
        if not reprs:
            return f"{self._get_name()}()"
        lines = []
        start = 0
        for end in range(1, len(reprs) + 1):
            if end < len(reprs) and reprs[end] == reprs[start]:
                continue
            if end - start == 1:
                lines.append(f"({start}): {reprs[start]}")
            else:
                lines.append(f"({start}-{end - 1}): {end - start} x {reprs[start]}")
            start = end
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if isinstance(modules, Module) and not isinstance(modules, (ModuleList, Sequential)):
            raise TypeError(f"ModuleList.extend: expected an iterable of Modules, got {type(modules).__name__}")
        for module in list(modules):
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, item in enumerate(items):
            self.add_module(str(i), item)

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module


class ModuleDict(Module):
    """A dict of modules by name, registered like attributes (no forward of its own)."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        try:
            return self._modules[key]
        except KeyError:
            raise KeyError(f"ModuleDict has no module {key!r}; it has {list(self._modules)}") from None

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for pair in pairs:
            if len(pair) != 2:
                raise ValueError(f"ModuleDict.update: expected (name, module) pairs, got an element of length {len(pair)}")
            self[pair[0]] = pair[1]
