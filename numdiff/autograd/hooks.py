"""Handles returned by `register_hook`, so a hook can be removed again."""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count()


def check_callable(method: str, hook: Any) -> None:
    """Refuse a hook that cannot be called when it is registered, not when backward reaches it."""
    if not callable(hook):
        raise TypeError(f"{method}: the hook must be callable (a function of the gradient), got {type(hook).__name__}")


class RemovableHandle:
    """``handle.remove()`` unregisters the hook it was returned for."""

    __slots__ = ("_registry", "id")

    def __init__(self, registry: dict[int, Any]) -> None:
        self._registry = registry
        self.id = next(_ids)

    def remove(self) -> None:
        self._registry.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()
