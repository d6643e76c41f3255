"""torch.nn.modules.instancenorm's path: the instance-normalisation layers (normalization.py)."""

from __future__ import annotations

from numdiff.nn.modules.normalization import InstanceNorm1d, InstanceNorm2d
from numdiff.nn.modules.normalization import _InstanceNorm as _InstanceNorm  # subclassed by programs

__all__ = ["InstanceNorm1d", "InstanceNorm2d"]


def __dir__() -> list[str]:
    return sorted(__all__)
