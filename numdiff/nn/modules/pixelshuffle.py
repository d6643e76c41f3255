"""torch.nn.modules.pixelshuffle's path: PixelShuffle and PixelUnshuffle (resampling.py)."""

from __future__ import annotations

from numdiff.nn.modules.resampling import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]


def __dir__() -> list[str]:
    return sorted(__all__)
