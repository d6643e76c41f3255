"""torch.nn.modules.fold's path: Fold and Unfold (im2col.py)."""

from __future__ import annotations

from numdiff.nn.modules.im2col import Fold, Unfold

__all__ = ["Fold", "Unfold"]


def __dir__() -> list[str]:
    return sorted(__all__)
