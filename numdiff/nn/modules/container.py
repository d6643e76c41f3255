"""Containers: Sequential (a pipeline), ModuleList and ModuleDict (registered collections of
modules), ParameterList and ParameterDict (of parameters)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor


def _index(container: Module, idx: Any) -> int:
    """A non-negative position from an int index, with an IndexError naming the container's length."""
    idx = operator.index(idx)
    size = len(container._modules)
    if not -size <= idx < size:
        raise IndexError(f"{type(container).__name__}: index {idx} is out of range for length {size}")
    return idx % size


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


def _as_parameter(value: Any) -> Any:
    """A plain tensor becomes a Parameter (sharing its storage); anything else is kept as it is."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value: Any, type_name: Callable[[Tensor], str]) -> str:
    """One entry of a parameter container's repr, in PyTorch's wording; `type_name` names a
    tensor's type (ParameterList prints the dtype, ParameterDict the legacy type string)."""
    if not isinstance(value, Tensor):
        return f"Object of type: {type(value).__name__}"
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    size = "x".join(str(n) for n in value.shape)
    device = "" if value.device.type == "cpu" else f" ({value.device})"
    return f"{kind} containing: [{type_name(value)} of size {size}{device}]"


class ParameterList(Module):
    """A list of parameters registered under the names "0", "1", ... (so a parent's state_dict
    has keys like ``"weights.0"``). Plain tensors appended are made Parameters; other objects are
    kept as plain attributes, as in PyTorch.

    >>> weights = ParameterList([numdiff.randn(3, 3) for _ in range(2)])
    >>> weights.append(numdiff.zeros(3)); len(weights)
    3
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _position(self, idx: Any) -> int:
        idx = operator.index(idx)
        if not -self._size <= idx < self._size:
            raise IndexError(f"ParameterList: index {idx} is out of range for length {self._size}")
        return idx % self._size

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(self[i] for i in range(*idx.indices(self._size)))
        return getattr(self, str(self._position(idx)))

    def __setitem__(self, idx: int, value: Any) -> None:
        setattr(self, str(self._position(idx)), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value: Any) -> ParameterList:
        """Add `value` (a tensor becomes a Parameter) at the end."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append each of `values`."""
        if isinstance(values, Tensor) or not isinstance(values, Iterable):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): {_describe(value, lambda t: str(t.dtype))}" for i, value in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters by string key, registered like attributes (state_dict keys like
    ``"scales.encoder"``). Plain tensors stored are made Parameters. A plain dict passed to the
    constructor or to `update` is taken in sorted key order, an OrderedDict or ParameterDict
    in its own, as in PyTorch.

    >>> scales = ParameterDict({"encoder": numdiff.ones(4), "decoder": numdiff.ones(2)})
    >>> list(scales)
    ['decoder', 'encoder']
    """

    def __init__(self, values: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if values is not None:
            self.update(values)

    @staticmethod
    def _key(key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'): key {key!r}"
            )
        return key

    def __getitem__(self, key: str) -> Any:
        if self._key(key) not in self._keys:
            raise KeyError(f"ParameterDict has no key {key!r}; it has {list(self._keys)}")
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._key(key)
        setattr(self, key, _as_parameter(value))
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        if self._key(key) not in self._keys:
            raise KeyError(f"ParameterDict has no key {key!r}; it has {list(self._keys)}")
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters (not copies of them)."""
        return ParameterDict(OrderedDict((key, self[key]) for key in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last (key, value) pair."""
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        """A new ParameterDict with each of `keys` holding `default`."""
        return ParameterDict((key, default) for key in keys)

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return ((key, self[key]) for key in self._keys)

    def values(self) -> Iterable[Any]:
        return (self[key] for key in self._keys)

    def update(self, values: Any) -> None:
        """Set each (key, value) of a mapping or of an iterable of pairs."""
        if not isinstance(values, Iterable):
            raise TypeError(
                f"ParameterDict.update should be called with an iterable of key/value pairs, but got {type(values).__name__}"
            )
        if isinstance(values, (OrderedDict, ParameterDict)):
            pairs = list(values.items())
        elif isinstance(values, Mapping):
            pairs = sorted(values.items())
        else:
            pairs = []
            for j, pair in enumerate(values):
                if not isinstance(pair, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is {type(pair).__name__}")
                pair = tuple(pair)
                if len(pair) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(pair)}; 2 is required")
                pairs.append(pair)
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(f"  ({key}): {_describe(value, lambda t: t.type())}" for key, value in self.items())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self
