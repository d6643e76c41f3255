"""torch.nn.modules.batchnorm's path: the batch-normalisation layers (defined in normalization.py)."""

from __future__ import annotations

from numdiff.nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from numdiff.nn.modules.normalization import _BatchNorm as _BatchNorm  # subclassed by programs
from numdiff.nn.modules.sync_batchnorm import SyncBatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


def __dir__() -> list[str]:
    return sorted(__all__)
