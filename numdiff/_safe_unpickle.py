"""The allow-list for whole-object checkpoints, and the unpickler that enforces it.

A checkpoint holding objects other than tensors and plain containers (a whole ``nn.Module``, an
optimizer, a user's class) carries a pickle. Loading it with ``weights_only=True`` (the default,
as in PyTorch 2.6+) resolves a global only if it is on the allow-list: a few plain types
(OrderedDict, set, ...), whatever `add_safe_globals` or the `safe_globals` context added, and
what the caller passes for its own format (PyTorch's tensor-rebuild functions). Anything else is
refused before it is imported or called, so a crafted file cannot run code. With
``weights_only=False`` every global is imported, as pickle does: only for files you trust.

>>> numdiff.serialization.add_safe_globals([MyNet, numdiff.nn.Linear])
>>> with numdiff.serialization.safe_globals([MyNet]):
...     model = numdiff.load("model.pt")
"""

from __future__ import annotations

import collections
import contextlib
import pickle
import threading
from collections.abc import Callable, Iterator
from typing import Any

# Plain types a pickle of ordinary Python data names; none of them runs code when called.
_PLAIN = (
    collections.OrderedDict, collections.defaultdict, collections.Counter, dict, list, tuple, set, frozenset,
    slice, range, complex, int, float, bool, str, bytes, bytearray,
)

_state = threading.local()
_added: list[Any] = []  # add_safe_globals: process-wide, as in PyTorch


def _key(obj: Any) -> tuple[str, str]:
    return getattr(obj, "__module__", None) or "builtins", getattr(obj, "__qualname__", None) or obj.__name__


def _entry(obj: Any) -> tuple[tuple[str, str], Any]:
    """(module, qualname) -> object; a (object, "module.qualname") pair allows it under that name."""
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], str):
        module, _, name = obj[1].rpartition(".")
        return (module, name), obj[0]
    if not callable(obj) or not hasattr(obj, "__name__"):
        raise TypeError(f"safe globals must be classes or functions (or (object, 'module.name') pairs), got {obj!r}")
    return _key(obj), obj


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allow these classes and functions in every ``weights_only`` load from now on.

    >>> numdiff.serialization.add_safe_globals([MyNet])
    """
    for obj in safe_globals:
        _entry(obj)
    _added.extend(safe_globals)


def get_safe_globals() -> list[Any]:
    """What `add_safe_globals` allowed so far (and the `safe_globals` contexts now open)."""
    return list(_added) + [obj for frame in getattr(_state, "frames", []) for obj in frame]


def clear_safe_globals() -> None:
    """Forget what `add_safe_globals` allowed."""
    _added.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """Allow these classes and functions in ``weights_only`` loads inside the ``with`` block
    (on this thread)."""
    for obj in safe_globals:
        _entry(obj)
    frames = _state.__dict__.setdefault("frames", [])
    frames.append(list(safe_globals))
    try:
        yield
    finally:
        frames.pop()


def allowed_globals() -> dict[tuple[str, str], Any]:
    """Every allowed global by (module, qualname): the plain types and the user's additions."""
    return dict(_entry(obj) for obj in (*_PLAIN, *get_safe_globals()))


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves globals through `resolve` (None: refused) and hands persistent
    ids to `persistent`. `source` names the file in errors."""

    def __init__(
        self,
        file: Any,
        source: str,
        resolve: Callable[[str, str], Any],
        persistent: Callable[[Any], Any],
        weights_only: bool,
        **pickle_load_args: Any,
    ) -> None:
        super().__init__(file, **pickle_load_args)
        self._source, self._resolve, self._persistent, self._weights_only = source, resolve, persistent, weights_only

    def find_class(self, module: str, name: str) -> Any:
        found = self._resolve(module, name)
        if found is not None:
            return found
        if not self._weights_only:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"numdiff.load: weights-only load of {self._source} refused the global {module}.{name}, which the "
            f"checkpoint needs to rebuild an object. If you trust this file, load it with weights_only=False "
            f"(it can then run code), or allow just this global with "
            f"numdiff.serialization.add_safe_globals([{name}]) or the numdiff.serialization.safe_globals([...]) "
            "context manager."
        )

    def persistent_load(self, pid: Any) -> Any:
        return self._persistent(pid)
