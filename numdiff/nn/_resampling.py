"""Resampling of images and signals: interpolate (PyTorch's nearest, nearest-exact, linear, bilinear,
bicubic, trilinear and area modes), pixel_shuffle and pixel_unshuffle.

interpolate resizes one spatial dim at a time with the registered pair of numdiff.ops._axis_blend:
each output row is a weighted sum of the source rows its mode picks (1 for nearest, 2 for the
linear modes, 4 for bicubic, the widest window for area), from tables worked out once on the host. The source positions and
weights follow PyTorch's formulas, in the input's precision as PyTorch computes them, so the same
rows and weights are chosen. Area mode is adaptive average pooling: numdiff's pooling kernels for
1 and 2 spatial dims, and for 3 a mean over each axis's window in turn (separable the same way).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff.ops._axis_blend import BLEND_DTYPES, blend_axis
from numdiff.ops.pool import adaptive_avg_pool1d, adaptive_avg_pool2d
from numdiff.tensor import Tensor

_SPATIAL_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution constant


def _per_dim(op: str, name: str, value: Any, dims: int, kind: type) -> tuple | None:
    """`value` (one number, or one per spatial dim) as a tuple of `dims` numbers."""
    if value is None:
        return None
    values = tuple(value) if isinstance(value, Sequence) else (value,) * dims
    if len(values) != dims:
        raise ValueError(f"{op}: {name} must have {dims} entries for a {dims + 2}-D input, got {value!r}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float) if kind is float else int) or v <= 0:
            raise ValueError(f"{op}: {name} must hold positive {kind.__name__}s, got {value!r}")
    return tuple(kind(v) for v in values)


def _output_sizes(op: str, input: Tensor, size: Any, scale_factor: Any) -> tuple[tuple[int, ...], tuple | None]:
    dims = input.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{op}: give exactly one of size and scale_factor")
    sizes = _per_dim(op, "size", size, dims, int)
    scales = _per_dim(op, "scale_factor", scale_factor, dims, float)
    if sizes is None:
        sizes = tuple(int(math.floor(n * s)) for n, s in zip(input.shape[2:], scales))
        if 0 in sizes:
            raise ValueError(f"{op}: scale_factor {scale_factor!r} makes an empty output from input of shape {tuple(input.shape)}")
    return sizes, scales


def _source_scale(in_size: int, out_size: int, scale: float | None, align_corners: bool, dtype: Any) -> Any:
    """PyTorch's area_pixel_compute_scale, in the input's precision."""
    if align_corners:
        return dtype.type((in_size - 1) / (out_size - 1)) if out_size > 1 else dtype.type(0.0)
    return dtype.type(1.0 / scale) if scale is not None else dtype.type(in_size) / dtype.type(out_size)


def _source_positions(in_size: int, out_size: int, scale: float | None, align_corners: bool, dtype: Any) -> np.ndarray:
    """PyTorch's area_pixel_compute_source_index for every output position (unclamped, as cubic uses it)."""
    step = _source_scale(in_size, out_size, scale, align_corners, dtype)
    positions = np.arange(out_size, dtype=dtype)
    if align_corners:
        return step * positions
    return step * (positions + dtype.type(0.5)) - dtype.type(0.5)


def _nearest_table(in_size: int, out_size: int, scale: float | None, exact: bool, dtype: Any) -> tuple:
    # PyTorch picks nearest rows in float32 whatever the input's dtype.
    step = np.float32(1.0 / scale) if scale is not None else np.float32(in_size) / np.float32(out_size)
    positions = np.arange(out_size, dtype=np.float32)
    if exact:
        positions = positions + np.float32(0.5)
    rows = np.minimum(np.floor(positions * step).astype(np.int64), in_size - 1)
    return rows[:, None], np.ones((out_size, 1), dtype=dtype)


def _linear_table(in_size: int, out_size: int, scale: float | None, align_corners: bool, dtype: Any) -> tuple:
    """(O, 2) source rows and weights per output position, as PyTorch picks them."""
    source = np.maximum(_source_positions(in_size, out_size, scale, align_corners, dtype), dtype.type(0.0))
    first = np.minimum(np.floor(source).astype(np.int64), in_size - 1)
    second = np.minimum(first + 1, in_size - 1)
    lam = (source - first.astype(dtype)).astype(dtype)
    return np.stack([first, second], axis=1), np.stack([dtype.type(1.0) - lam, lam], axis=1)


def _cubic_table(in_size: int, out_size: int, scale: float | None, align_corners: bool, dtype: Any) -> tuple:
    """(O, 4) source rows (clamped to the edge) and cubic-convolution weights, as PyTorch's bicubic."""
    source = _source_positions(in_size, out_size, scale, align_corners, dtype)
    floor = np.floor(source)
    t = (source - floor).astype(dtype)
    a = dtype.type(_CUBIC_A)
    one = dtype.type(1.0)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weight = np.stack([far(t + one), near(t), near(one - t), far((one - t) + one)], axis=1).astype(dtype)
    rows = np.clip(floor.astype(np.int64)[:, None] + np.arange(-1, 3), 0, in_size - 1)
    return rows, weight


def _antialias_table(in_size: int, out_size: int, scale: float | None, align_corners: bool, cubic: bool, dtype: Any) -> tuple:
    """(O, K) source rows and weights of PyTorch's antialiased bilinear or bicubic (PIL's filters): a
    triangle, or the a = -0.5 cubic, centred on each output's source position and stretched by the
    downscale factor, so that every source row under it counts; each row's weights sum to 1. K is
    the widest window; narrower ones end in rows of weight 0."""
    step = _source_scale(in_size, out_size, scale, align_corners, dtype)
    one, half = dtype.type(1.0), dtype.type(0.5)
    reach = dtype.type(2.0 if cubic else 1.0)  # the filter's half width at scale 1
    support, invscale = (reach * step, one / step) if step >= one else (reach, one)
    center = step * (np.arange(out_size, dtype=dtype) + half)
    start = np.maximum(np.trunc(center - support + half).astype(np.int64), 0)
    count = np.minimum(np.trunc(center + support + half).astype(np.int64), in_size) - start
    taps = np.arange(max(int(count.max()), 1))
    rows = start[:, None] + taps[None, :]
    x = np.abs((rows.astype(dtype) - center[:, None] + half) * invscale).astype(dtype)
    if cubic:
        a = dtype.type(-0.5)
        weight = np.where(x < one, ((a + 2) * x - (a + 3)) * x * x + one, np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0))
    else:
        weight = np.where(x < one, one - x, dtype.type(0.0))
    weight = np.where(taps[None, :] < count[:, None], weight, dtype.type(0.0)).astype(dtype)
    total = weight.sum(axis=1, keepdims=True)
    weight = np.where(total != 0, weight / np.where(total != 0, total, one), weight).astype(dtype)
    return np.minimum(rows, in_size - 1), weight


def _area_table(in_size: int, out_size: int, dtype: Any) -> tuple:
    """(O, K) source rows and weights of adaptive average pooling's windows along one axis (K the
    widest window; narrower windows repeat their last row with weight 0)."""
    positions = np.arange(out_size)
    start = positions * in_size // out_size
    end = -((-(positions + 1) * in_size) // out_size)
    count = end - start
    taps = np.arange(int(count.max()))
    inside = taps[None, :] < count[:, None]
    rows = np.minimum(start[:, None] + taps[None, :], end[:, None] - 1)
    weight = np.where(inside, (np.ones((), dtype) / count.astype(dtype))[:, None], dtype.type(0.0))
    return rows, weight.astype(dtype)


def interpolate(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims of an (N, C, *spatial) input to `size`, or by `scale_factor`.

    Modes: "nearest" and "nearest-exact" (1 to 3 spatial dims), "linear" (1), "bilinear" and
    "bicubic" (2), "trilinear" (3), each with PyTorch's `align_corners`, and "area" (adaptive
    average pooling, 1 to 3 spatial dims). `antialias` (bilinear and bicubic) widens the filter by
    the downscale factor, as PyTorch's (and PIL's) resize. With `recompute_scale_factor`, source positions come from the output size
    rather than the scale factor, as in PyTorch.

    >>> interpolate(numdiff.tensor([[[0.0, 1.0]]]), scale_factor=2, mode="linear").tolist()
    [[[0.0, 0.25, 0.75, 1.0]]]
    """
    op = "interpolate"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(input).__name__}")
    if mode not in _MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError(f"{op}: antialias=True needs mode 'bilinear' or 'bicubic' (a 4-D input), got mode {mode!r}")
    if input.ndim not in (3, 4, 5):
        raise ValueError(f"{op}: expected a 3-D, 4-D or 5-D input (N, C, *spatial), got shape {tuple(input.shape)}")
    if mode in _SPATIAL_DIMS and input.ndim - 2 != _SPATIAL_DIMS[mode]:
        raise ValueError(f"{op}: mode {mode!r} needs a {_SPATIAL_DIMS[mode] + 2}-D input, got shape {tuple(input.shape)}")
    if align_corners is not None and mode not in _SPATIAL_DIMS:
        raise ValueError(
            f"{op}: align_corners can only be set with the linear and cubic modes (linear, bilinear, bicubic, "
            f"trilinear), not {mode!r}"
        )
    if input._data.dtype.kind not in "fV":
        raise TypeError(f"{op}: expected a floating point input, got dtype {input.dtype!r}")
    if input._data.dtype.itemsize < 4:  # bfloat16, float16: computed in float32 and rounded once, as PyTorch's CPU kernels
        resized = interpolate(input.float(), size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
        return resized.to(input.dtype)
    sizes, scales = _output_sizes(op, input, size, scale_factor)
    if mode == "area" and input.ndim < 5:  # the pooling kernels measured as fast or faster than the separable means
        return adaptive_avg_pool1d(input, sizes) if input.ndim == 3 else adaptive_avg_pool2d(input, sizes)
    if recompute_scale_factor or scales is None:
        scales = (None,) * len(sizes)
    dtype = np.dtype(input._data.dtype)
    exact = mode == "nearest-exact"
    if mode == "nearest" or exact:
        tables = [_nearest_table(n, m, scale, exact, dtype) for n, m, scale in zip(input.shape[2:], sizes, scales)]
        repeats = _whole_repeats(input.shape[2:], [index[:, 0] for index, _ in tables])
        if repeats is not None:
            return _repeat_each(input, repeats)
    elif mode == "area":
        tables = [_area_table(n, m, dtype) for n, m in zip(input.shape[2:], sizes)]
    elif antialias:
        cubic = mode == "bicubic"
        tables = [
            _antialias_table(n, m, scale, bool(align_corners), cubic, dtype) for n, m, scale in zip(input.shape[2:], sizes, scales)
        ]
    else:
        table = _cubic_table if mode == "bicubic" else _linear_table
        tables = [table(n, m, scale, bool(align_corners), dtype) for n, m, scale in zip(input.shape[2:], sizes, scales)]
    out = input
    # The last axis first, as PyTorch's kernels: cubic rows blended in the same order round alike.
    for axis, (index, weight) in reversed(list(enumerate(tables, start=2))):
        if index.shape[0] != out.shape[axis] or index.shape[1] != 1 or np.any(index[:, 0] != np.arange(out.shape[axis])):
            out = blend_axis(out, axis, index, weight)
    return out


def _whole_repeats(in_sizes: Sequence[int], rows: list[np.ndarray]) -> tuple[int, ...] | None:
    """The repeat count per spatial dim where the nearest rows picked are each input row `r` times
    in order (an integer upscale, or sizes kept), else None."""
    repeats = []
    for in_size, picked in zip(in_sizes, rows):
        r = picked.size // in_size
        if r * in_size != picked.size or not np.array_equal(picked, np.arange(picked.size) // r):
            return None
        repeats.append(r)
    return tuple(repeats)


def _repeat_each(input: Tensor, repeats: tuple[int, ...]) -> Tensor:
    """Every element of the spatial dims repeated `repeats` times along each. The last dim through
    axis_blend (a gather whose adjoint adds repeated rows in a register), the others as one
    broadcast copy of whole rows, whose gradient is a sum over the repeats. Broadcasting the last
    dim too copied runs of `r` elements from stride-0 views (measured, one thread: nearest x2 of
    4x16x64x64 forward 1.33 -> 0.37 ms, forward and backward 2.12 -> 1.12; 1x16x256x256 4.50 ->
    1.77, 7.84 -> 4.20). Per dim index_select did a copy per dim and its backward a scatter-add
    (np.add.at along an inner axis: 11 ms for style_transfer's 4x64x32x32 upsample gradient)."""
    last = repeats[-1]
    if last > 1 and np.dtype(input._data.dtype) in BLEND_DTYPES:
        index = _repeat_table(input.shape[-1], last)
        input = blend_axis(input, input.ndim - 1, index, np.ones(index.shape, input._data.dtype))
        repeats = repeats[:-1] + (1,)
    if all(r == 1 for r in repeats):
        return input
    spatial = input.shape[2:]
    split = list(input.shape[:2])
    spread = list(input.shape[:2])
    for n, r in zip(spatial, repeats):
        split += [n, 1]
        spread += [n, r]
    out_shape = tuple(input.shape[:2]) + tuple(n * r for n, r in zip(spatial, repeats))
    return input.reshape(*split).expand(*spread).reshape(*out_shape)


@functools.lru_cache(maxsize=64)
def _repeat_table(size: int, repeats: int) -> np.ndarray:
    """The (size * repeats, 1) read-only axis_blend index of each row repeated `repeats` times."""
    index = (np.arange(size * repeats, dtype=np.int64) // repeats)[:, None]
    index.flags.writeable = False
    return index


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    """interpolate under its older name."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def _check_factor(op: str, name: str, factor: Any) -> int:
    if isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0:
        raise ValueError(f"{op}: {name} must be a positive int, got {factor!r}")
    return factor


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): each channel block of r^2 becomes an r x r tile."""
    r = _check_factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if not isinstance(input, Tensor) or input.ndim < 3:
        raise ValueError(f"pixel_shuffle: expected an input of at least 3 dims (*, C, H, W), got {getattr(input, 'shape', input)!r}")
    *lead, channels, height, width = input.shape
    if channels % (r * r):
        raise ValueError(
            f"pixel_shuffle: the channel dim ({channels}, input of shape {tuple(input.shape)}) must be divisible by "
            f"upscale_factor ** 2 = {r * r}"
        )
    c = channels // (r * r)
    k = len(lead)
    blocks = input.reshape(*lead, c, r, r, height, width)
    order = tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2)
    return blocks.permute(order).reshape(*lead, c, height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle."""
    r = _check_factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if not isinstance(input, Tensor) or input.ndim < 3:
        raise ValueError(f"pixel_unshuffle: expected an input of at least 3 dims (*, C, H, W), got {getattr(input, 'shape', input)!r}")
    *lead, c, height, width = input.shape
    if height % r or width % r:
        raise ValueError(
            f"pixel_unshuffle: height and width ({height}, {width}, input of shape {tuple(input.shape)}) must be "
            f"divisible by downscale_factor {r}"
        )
    k = len(lead)
    tiles = input.reshape(*lead, c, height // r, r, width // r, r)
    order = tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3)
    return tiles.permute(order).reshape(*lead, c * r * r, height // r, width // r)
