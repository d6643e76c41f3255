"""affine_grid and grid_sample (spatial transformer networks), composed from numdiff ops so that
gradients reach both the input and the grid (and through affine_grid, theta), with second
derivatives for free.

grid_sample reads a 4-D input (N, C, H, W) at the grid's (x, y) positions in [-1, 1] (N, Ho, Wo, 2),
or a 5-D input (N, C, D, H, W) at (x, y, z) positions (N, Do, Ho, Wo, 3):
a position becomes a pixel coordinate ``((x + 1) * W - 1) / 2`` (or ``(x + 1) / 2 * (W - 1)`` with
align_corners), padding_mode moves coordinates outside the image (``border`` clamps them,
``reflection`` mirrors them, ``zeros`` leaves them and reads zeros there), and the value is the
bilinear (trilinear in 3-d) blend of the 4 (8) neighbouring pixels, the nearest one, or (4-D only)
the bicubic blend of the 16 around it. The corners are gathered from the flattened input, one
``gather`` per corner.
"""

from __future__ import annotations

from typing import Any

from numdiff._dtype import bool_
from numdiff.creation import arange, linspace, ones, zeros
from numdiff.ops._util import ensure_tensor
from numdiff.ops.joining import stack
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest", "bicubic")
_CUBIC_A = -0.75  # the cubic convolution's coefficient in PyTorch's (and OpenCV's) bicubic
_PADDINGS = ("zeros", "border", "reflection")


def _base_coordinates(n: int, align_corners: bool, like: Tensor) -> Tensor:
    # PyTorch's own arithmetic (linspace scaled by (n - 1) / n), so that grid points fall on the
    # same side of a pixel to the last bit: the grid's gradient jumps there.
    if n == 1:
        return arange(1, dtype=like.dtype, device=like.device) * 0
    steps = linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return steps if align_corners else steps * (n - 1) / n


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of the affine maps `theta` for an output of `size`: for a 4-D size
    (N, C, H, W), theta is (N, 2, 3) and the grid (N, H, W, 2); for a 5-D size (N, C, D, H, W),
    theta is (N, 3, 4) and the grid (N, D, H, W, 3). Each output position's normalised
    (x, y[, z], 1) times theta transposed.

    >>> F.affine_grid(numdiff.tensor([[[1.0, 0, 0], [0, 1.0, 0]]]), (1, 1, 2, 2), align_corners=True)[0, 0]
    tensor([[-1., -1.],
            [ 1., -1.]])
    """
    theta = ensure_tensor("affine_grid", theta)
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(
            f"affine_grid: only 4-D (N, C, H, W) and 5-D (N, C, D, H, W) sizes are supported, got {size}"
        )
    dims = len(size) - 2
    if not theta.is_floating_point() or theta.ndim != 3 or tuple(theta.shape[1:]) != (dims, dims + 1) \
            or theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: expected a floating theta of shape ({size[0]}, {dims}, {dims + 1}) for size "
                         f"{size}, got {theta.dtype} {tuple(theta.shape)}")
    n, spatial = size[0], size[2:]
    points = 1
    for s in spatial:
        points *= s
    # One coordinate per spatial axis, x first (the last axis), each broadcast over the others.
    columns = []
    for axis in reversed(range(dims)):
        shape = [1] * dims
        shape[axis] = spatial[axis]
        columns.append(_base_coordinates(spatial[axis], bool(align_corners), theta).reshape(shape).expand(*spatial))
    columns.append(ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = stack(columns, dim=-1)  # (*spatial, dims + 1)
    return (base.reshape(1, points, dims + 1) @ theta.transpose(1, 2)).reshape(n, *spatial, dims)


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


def _clipped(x: Tensor, size: int) -> Tensor:
    """x clamped to [0, size - 1], with no gradient on the limits either (PyTorch's grid sampler
    counts them as outside): a coordinate exactly on the last pixel would otherwise be
    differentiated against the zero beyond it, as with an identity theta's border points."""
    inside = (x > 0) & (x < size - 1)
    return where(inside, x, x.detach().clamp(0, size - 1))


def _padded(x: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    if padding_mode == "border":
        return _clipped(x, size)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return _clipped(x, size)
    return x


def _corner(flat: Tensor, positions: list, spatial: tuple) -> Tensor:
    """flat (N, C, prod(spatial)) read at integer coordinates (one (N, P) tensor per spatial axis);
    zero outside the input."""
    inside = None
    index = None
    for p, size in zip(positions, spatial):
        within = (p >= 0) & (p <= size - 1)
        inside = within if inside is None else inside & within
        index = p.clamp(0, size - 1) if index is None else index * size + p.clamp(0, size - 1)
    index = index.long()
    n, c = flat.shape[0], flat.shape[1]
    values = flat.gather(2, index.unsqueeze(1).expand(n, c, index.shape[1]))
    return values * inside.unsqueeze(1).to(flat.dtype)


def _cubic_weights(t: Tensor) -> list:
    """The cubic-convolution weights of the taps at -1, 0, 1 and 2 from a point a fraction t past tap 0."""
    a = _CUBIC_A

    def far(d: Tensor) -> Tensor:  # a tap 1 to 2 pixels away
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    def near(d: Tensor) -> Tensor:  # a tap at most 1 pixel away
        return ((a + 2) * d - (a + 3)) * d * d + 1

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(flat: Tensor, grid: Tensor, spatial: tuple, padding_mode: str, align: bool) -> Tensor:
    """flat (N, C, H*W) read at grid (N, P, 2) by the 4 x 4 taps around each point, as PyTorch's
    bicubic: the point itself is not padded, each tap's integer coordinate is (clamped for border,
    mirrored then clamped for reflection, read as zero outside for zeros)."""
    n, points = grid.shape[0], grid.shape[1]
    # (y, x) pixel coordinates; the grid lists x first.
    pixels = [_to_pixels(grid[..., 1 - axis], size, align) for axis, size in enumerate(spatial)]
    lower = [p.detach().floor() for p in pixels]
    weights = [_cubic_weights(p - low) for p, low in zip(pixels, lower)]
    taps = [[_padded(low + (k - 1), size, padding_mode, align) for k in range(4)] for low, size in zip(lower, spatial)]
    out = None
    for i in range(4):
        for j in range(4):
            term = _corner(flat, [taps[0][i], taps[1][j]], spatial) * (weights[0][i] * weights[1][j]).reshape(n, 1, points)
            out = term if out is None else out + term
    return out


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """`input` (N, C, H, W) sampled at `grid` (N, Ho, Wo, 2) -> (N, C, Ho, Wo), or `input`
    (N, C, D, H, W) at `grid` (N, Do, Ho, Wo, 3) -> (N, C, Do, Ho, Wo), where "bilinear" blends
    the 8 neighbours (trilinear); see the module docstring.

    >>> F.grid_sample(numdiff.arange(4.0).reshape(1, 1, 2, 2), numdiff.zeros(1, 1, 1, 2), align_corners=True)
    tensor([[[[1.5000]]]])
    """
    input, grid = ensure_tensor("grid_sample", input), ensure_tensor("grid_sample", grid)
    if mode not in _MODES:
        raise ValueError(f"grid_sample: mode must be one of {_MODES}, got {mode!r}")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"grid_sample: padding_mode must be one of {_PADDINGS}, got {padding_mode!r}")
    if input.ndim not in (4, 5):
        raise NotImplementedError(
            f"grid_sample: only 4-D (N, C, H, W) and 5-D (N, C, D, H, W) inputs are supported, got shape "
            f"{tuple(input.shape)}"
        )
    dims = input.ndim - 2
    if grid.ndim != input.ndim or grid.shape[-1] != dims or grid.shape[0] != input.shape[0]:
        out_names = "H_out, W_out" if dims == 2 else "D_out, H_out, W_out"
        raise ValueError(f"grid_sample: expected a grid of shape ({input.shape[0]}, {out_names}, {dims}) for input "
                         f"{tuple(input.shape)}, got {tuple(grid.shape)}")
    if mode == "bicubic" and dims != 2:
        raise ValueError(f"grid_sample: bicubic interpolation only supports 4-D input, got shape {tuple(input.shape)}")
    if not input.is_floating_point() or grid.dtype is not input.dtype:
        raise TypeError(f"grid_sample: expected floating input and grid of one dtype, got {input.dtype} and {grid.dtype}")
    align = bool(align_corners)
    n, c = int(input.shape[0]), int(input.shape[1])
    spatial = tuple(int(s) for s in input.shape[2:])
    out_spatial = tuple(int(s) for s in grid.shape[1:-1])
    points = 1
    for s in out_spatial:
        points *= s
    flat = input.reshape(n, c, -1)
    if mode == "bicubic":
        return _bicubic(flat, grid.reshape(n, points, 2), spatial, padding_mode, align).reshape(n, c, *out_spatial)
    # Pixel coordinates per spatial axis (D, H, W order); the grid lists them x (W) first.
    coordinates = [
        _padded(_to_pixels(grid[..., dims - 1 - axis].reshape(n, points), size, align), size, padding_mode, align)
        for axis, size in enumerate(spatial)
    ]
    if mode == "nearest":
        out = _corner(flat, [p.detach().round() for p in coordinates], spatial)
        if grid.requires_grad:
            # The output is constant between pixel centres, so the grid's gradient is zero; PyTorch
            # gives it as a tensor of zeros, not None. A where that never picks the coordinate
            # joins the grid to the graph and leaves every value (even beside an infinite one) as is.
            never = zeros((1, 1, 1), dtype=bool_, device=out.device)
            out = where(never, coordinates[0].unsqueeze(1), out)
        return out.reshape(n, c, *out_spatial)
    lower = [p.detach().floor() for p in coordinates]
    upper_weights = [p - low for p, low in zip(coordinates, lower)]
    out = None
    for corner in range(2**dims):
        upper = [(corner >> (dims - 1 - axis)) & 1 for axis in range(dims)]
        weight = None
        for axis, up in enumerate(upper):
            factor = upper_weights[axis] if up else 1 - upper_weights[axis]
            weight = factor if weight is None else weight * factor
        term = _corner(flat, [low + up for low, up in zip(lower, upper)], spatial) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape(n, c, *out_spatial)
