"""numdiff.utils.hooks: PyTorch's ``torch.utils.hooks`` path, where programs and tools (torchinfo,
hook helpers) import ``RemovableHandle``, the handle every ``register_*hook`` returns."""

from __future__ import annotations

from typing import TypeVar

from numdiff.autograd.hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook"]

_F = TypeVar("_F")


def __dir__() -> list[str]:
    return sorted(__all__)


def unserializable_hook(f: _F) -> _F:
    """Mark a hook as one that is not saved with the tensor; numdiff never saves hooks, so the
    mark is only kept (``f.__torch_unserializable__``), as PyTorch keeps it."""
    f.__torch_unserializable__ = True  # type: ignore[attr-defined]
    return f
