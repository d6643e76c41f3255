"""Containers of parameters: ParameterList and ParameterDict, registered like a module's own
parameters (a parent's state_dict has keys like ``"weights.0"``). The containers of modules
(Sequential, ModuleList, ModuleDict) are in :mod:`numdiff.nn.modules.container`."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor

__all__ = ["ParameterDict", "ParameterList"]


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
