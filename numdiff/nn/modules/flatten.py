"""torch.nn.modules.flatten's path: Flatten and Unflatten (linear.py)."""

from __future__ import annotations

from numdiff.nn.modules.linear import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]


def __dir__() -> list[str]:
    return sorted(__all__)
