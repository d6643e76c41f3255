"""Resampling layers: Upsample (and its fixed-mode forms), PixelShuffle and PixelUnshuffle."""

from __future__ import annotations

from typing import Any

from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor


class Upsample(Module):
    """Resize the spatial dims to `size` or by `scale_factor` (numdiff.nn.functional.interpolate).

    >>> Upsample(scale_factor=2)(numdiff.ones(1, 1, 2, 2)).shape
    numdiff.Size([1, 1, 4, 4])
    """

    def __init__(
        self,
        size: Any = None,
        scale_factor: Any = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return functional.interpolate(
            input, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor
        )

    def extra_repr(self) -> str:
        shown = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{shown}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample with mode "nearest", for (N, C, H, W) inputs."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode "bilinear" and align_corners=True, for (N, C, H, W) inputs."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return functional.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return functional.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
