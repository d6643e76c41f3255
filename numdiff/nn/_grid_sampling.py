"""affine_grid and grid_sample (spatial transformer networks), composed from numdiff ops so that
gradients reach both the input and the grid (and through affine_grid, theta), with second
derivatives for free.

grid_sample reads a 4-D input (N, C, H, W) at the grid's (x, y) positions in [-1, 1] (N, Ho, Wo, 2):
a position becomes a pixel coordinate ``((x + 1) * W - 1) / 2`` (or ``(x + 1) / 2 * (W - 1)`` with
align_corners), padding_mode moves coordinates outside the image (``border`` clamps them,
``reflection`` mirrors them, ``zeros`` leaves them and reads zeros there), and the value is the
bilinear blend of the four neighbouring pixels (or the nearest one). The corners are gathered
from the flattened image, one ``gather`` per corner.
"""

from __future__ import annotations

from typing import Any

from numdiff.creation import arange, linspace, ones
from numdiff.ops._util import ensure_tensor
from numdiff.ops.selection import where
from numdiff.ops.shape import stack
from numdiff.tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest")
_PADDINGS = ("zeros", "border", "reflection")


def _base_coordinates(n: int, align_corners: bool, like: Tensor) -> Tensor:
    if align_corners:
        return linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device) if n > 1 else \
            arange(1, dtype=like.dtype, device=like.device) * 0
    return (arange(n, dtype=like.dtype, device=like.device) * 2 + 1) / n - 1


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) of the affine maps `theta` (N, 2, 3) for an output of `size`
    (N, C, H, W): each output pixel's normalised (x, y, 1) times theta transposed.

    >>> F.affine_grid(numdiff.tensor([[[1.0, 0, 0], [0, 1.0, 0]]]), (1, 1, 2, 2), align_corners=True)[0, 0]
    tensor([[-1., -1.],
            [ 1., -1.]])
    """
    theta = ensure_tensor("affine_grid", theta)
    size = tuple(int(s) for s in size)
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid: only 4-D sizes (N, C, H, W) are supported, got {size}")
    if not theta.is_floating_point() or theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3) or theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: expected a floating theta of shape ({size[0]}, 2, 3) for size {size}, got "
                         f"{theta.dtype} {tuple(theta.shape)}")
    n, _, h, w = size
    xs = _base_coordinates(w, bool(align_corners), theta)
    ys = _base_coordinates(h, bool(align_corners), theta)
    base = stack([xs.reshape(1, w).expand(h, w), ys.reshape(h, 1).expand(h, w),
                  ones(h, w, dtype=theta.dtype, device=theta.device)], dim=-1)  # (H, W, 3)
    return (base.reshape(1, h * w, 3) @ theta.transpose(1, 2)).reshape(n, h, w, 2)


def _to_pixels(coordinate: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coordinate + 1) / 2 * (size - 1)
    return ((coordinate + 1) * size - 1) / 2


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    if twice_low == twice_high:
        return x * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (x - low).abs()
    flips = (distance / span).floor()
    extra = distance - flips * span
    return where(flips.remainder(2) == 0, extra + low, span - extra + low)


def _padded(x: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    if padding_mode == "border":
        return x.clamp(0, size - 1)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return x.clamp(0, size - 1)
    return x


def _corner(flat: Tensor, xs: Tensor, ys: Tensor, h: int, w: int) -> Tensor:
    """flat (N, C, H*W) read at integer pixel coordinates (N, P); zero outside the image."""
    inside = (xs >= 0) & (xs <= w - 1) & (ys >= 0) & (ys <= h - 1)
    index = (ys.clamp(0, h - 1) * w + xs.clamp(0, w - 1)).long()
    n, c = flat.shape[0], flat.shape[1]
    values = flat.gather(2, index.unsqueeze(1).expand(n, c, index.shape[1]))
    return values * inside.unsqueeze(1).to(flat.dtype)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """`input` (N, C, H, W) sampled at `grid` (N, Ho, Wo, 2) -> (N, C, Ho, Wo); see the module docstring.

    >>> F.grid_sample(numdiff.arange(4.0).reshape(1, 1, 2, 2), numdiff.zeros(1, 1, 1, 2), align_corners=True)
    tensor([[[[1.5000]]]])
    """
    input, grid = ensure_tensor("grid_sample", input), ensure_tensor("grid_sample", grid)
    if mode not in _MODES:
        raise ValueError(f"grid_sample: mode must be one of {_MODES}, got {mode!r} (bicubic is not implemented)")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"grid_sample: padding_mode must be one of {_PADDINGS}, got {padding_mode!r}")
    if input.ndim != 4:
        raise NotImplementedError(f"grid_sample: only 4-D inputs (N, C, H, W) are supported, got shape {tuple(input.shape)}")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise ValueError(f"grid_sample: expected a grid of shape ({input.shape[0]}, H_out, W_out, 2) for input "
                         f"{tuple(input.shape)}, got {tuple(grid.shape)}")
    if not input.is_floating_point() or grid.dtype is not input.dtype:
        raise TypeError(f"grid_sample: expected floating input and grid of one dtype, got {input.dtype} and {grid.dtype}")
    align = bool(align_corners)
    n, c, h, w = (int(s) for s in input.shape)
    ho, wo = int(grid.shape[1]), int(grid.shape[2])
    flat = input.reshape(n, c, h * w)
    ix = _padded(_to_pixels(grid[..., 0].reshape(n, ho * wo), w, align), w, padding_mode, align)
    iy = _padded(_to_pixels(grid[..., 1].reshape(n, ho * wo), h, align), h, padding_mode, align)
    if mode == "nearest":
        out = _corner(flat, ix.detach().round(), iy.detach().round(), h, w)
        return out.reshape(n, c, ho, wo)
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    x1, y1 = x0 + 1, y0 + 1
    wx1, wy1 = ix - x0, iy - y0
    wx0, wy0 = 1 - wx1, 1 - wy1
    out = (_corner(flat, x0, y0, h, w) * (wx0 * wy0).unsqueeze(1) + _corner(flat, x1, y0, h, w) * (wx1 * wy0).unsqueeze(1)
           + _corner(flat, x0, y1, h, w) * (wx0 * wy1).unsqueeze(1) + _corner(flat, x1, y1, h, w) * (wx1 * wy1).unsqueeze(1))
    return out.reshape(n, c, ho, wo)
