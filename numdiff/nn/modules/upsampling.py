"""torch.nn.modules.upsampling's path: Upsample and its fixed-mode forms (resampling.py)."""

from __future__ import annotations

from numdiff.nn.modules.resampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]


def __dir__() -> list[str]:
    return sorted(__all__)
