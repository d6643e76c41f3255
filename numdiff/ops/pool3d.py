"""3-d pooling: max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d, on the 2-d
pooling kernels.

Every 3-d window is a product of per-axis windows (PyTorch's window, ceil_mode and divisor rules
are per axis), so pooling is separable: pool each depth slice over (H, W), then pool the
result over depth, as a 2-d pooling of the (D, OH*OW) planes with a (KD, 1) window:

* max of maxes is the max, and the first (row-major) maximum of the (H, W) stage within the
  first maximal depth is the first maximum in (D, H, W) order, which is PyTorch's argmax (NaN
  propagates the same way: the last NaN scanned);
* a sum of sums is the sum, and the 3-d divisor (count_include_pad or not) is the product of
  the per-axis ones; divisor_override sums both stages and divides once;
* adaptive windows are per-axis products too. Where every output slice is one value
  (size (D_out, 1, 1): global pooling, the head of a 3-d CNN), each window spans whole slices,
  so one 2-d stage over the (D, H*W) planes pools it, and its flat argmax ``d*H*W + h*W + w``
  is already the volume's.

The gradient flows back through both stages' registered ops (max_pool_scatter, avg_pool2d_backward,
adaptive_avg_pool2d_backward), which are closed under differentiation, so every order of
derivative, vmap, compile and the CUDA backend come from the 2-d family. return_indices combines
the two stages' argmax into flat ``d*H*W + h*W + w`` positions (int64), as PyTorch reports them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._ground.pool_geometry import tap_range
from numdiff.autograd.function import Function
from numdiff.backend import like_host, to_host
from numdiff.ops._pool_args import (
    batched_input,
    divisor,
    indices_tensor,
    pool_window,
    resolve_output_size,
    unbatch,
)
from numdiff.ops.pool import (
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool2dIndices,
    AvgPool2d,
    MaxPool2d,
    _adaptive_max_pool2d_arrays,
    _max_pool2d_arrays,
)
from numdiff.overrides import ForeignOperandError, dispatch_call, hands_over
from numdiff.tensor import Tensor

__all__ = ["adaptive_avg_pool3d", "adaptive_max_pool3d", "avg_pool3d", "max_pool3d"]


def _slices(x: Tensor) -> Tensor:
    """(N, C, D, H, W) as the (N, C*D, H, W) images of its depth slices."""
    n, c, d, h, w = x.shape
    return x.reshape(n, c * d, h, w)


def _depth_planes(y: Tensor, c: int) -> Tensor:
    """The (N, C*D, OH, OW) first stage as (N, C, D, OH*OW) planes for the depth stage."""
    n, cd, oh, ow = y.shape
    return y.reshape(n, c, cd // c, oh * ow)


def _volume(z: Tensor, plane: tuple) -> Tensor:
    """(N, C, OD, OH*OW) back to (N, C, OD, OH, OW)."""
    return z.reshape(*z.shape[:3], *plane)


def _whole_slices(x: Tensor, size: tuple) -> Tensor | None:
    """x (N, C, D, H, W) as (N, C, D, H*W) planes where an adaptive pool to `size` pools whole depth
    slices (size (D_out, 1, 1)): one 2-d stage to (D_out, 1) then; else None."""
    if size[1:] != (1, 1):
        return None
    n, c, d, h, w = x.shape
    return x.reshape(n, c, d, h * w)


def _window_starts(size: int, out_size: int, kernel: int, stride: int, pad: int, dilation: int) -> np.ndarray:
    """Per output along one axis, the first non-negative position of its window (past the input
    for a window wholly in padding): where PyTorch's max pooling starts its scan."""
    starts = []
    for o in range(out_size):
        first = o * stride - pad
        starts.append(first + tap_range(first, dilation, kernel, size)[0] * dilation)
    return np.array(starts, dtype=np.int64)


def _combined_indices(slice_indices: Any, depth_indices: Any, shape: tuple, plane_starts: Any = None) -> Any:
    """Flat (D, H, W) argmax positions from the stages' argmaxes: the depth stage's index picks
    depth d (``index // (OH*OW)``), whose (H, W) stage index ``h*W + w`` completes it. A window
    wholly in the depth padding (output -inf, no gradient) reports, as PyTorch does, its first
    non-negative depth (past the volume) and the (H, W) window's start, `plane_starts` (OH*OW)."""
    n, c, depth, h, w = shape
    per_slice = to_host(slice_indices)
    plane = per_slice.shape[2] * per_slice.shape[3]
    depths = to_host(depth_indices) // plane
    within = np.take_along_axis(
        per_slice.reshape(n, c, depth, plane), np.minimum(depths, depth - 1), axis=2
    )
    if plane_starts is not None:
        within = np.where(depths >= depth, plane_starts, within)
    flat = depths * (h * w) + within
    return like_host(flat.reshape(n, c, depths.shape[2], *per_slice.shape[2:]), slice_indices)


class MaxPool3dIndices(Function):
    """max_pool3d's argmax indices (int64, flat over D*H*W), from the same window as max_pool3d.

    Integer-valued, so never differentiated and not in OPS; an array op all the same (like
    numdiff.ops.pool.MaxPool2dIndices), so numdiff.compile replays it on each call's input
    instead of keeping the indices it saw while tracing.
    """

    array_forward = True
    op_name = "max_pool3d_indices"

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, dilation, ceil_mode):
        k, s, p, d = kernel_size, stride, padding, dilation
        x = np.ascontiguousarray(x, like=x)
        n, c, depth, h, w = x.shape
        stage, slice_indices = _max_pool2d_arrays(x.reshape(n, c * depth, h, w), k[1:], s[1:], p[1:], d[1:], ceil_mode)
        oh, ow = stage.shape[2:]
        _, depth_indices = _max_pool2d_arrays(
            stage.reshape(n, c, depth, oh * ow), (k[0], 1), (s[0], 1), (p[0], 0), (d[0], 1), ceil_mode
        )
        rows, columns = (_window_starts(x.shape[3 + i], stage.shape[2 + i], k[1 + i], s[1 + i], p[1 + i], d[1 + i])
                         for i in (0, 1))  # fmt: skip
        plane_starts = (rows[:, None] * w + columns[None, :]).reshape(-1)
        return _combined_indices(slice_indices, depth_indices, x.shape, plane_starts)


class AdaptiveMaxPool3dIndices(Function):
    """adaptive_max_pool3d's argmax indices (int64); see MaxPool3dIndices."""

    array_forward = True
    op_name = "adaptive_max_pool3d_indices"

    @staticmethod
    def forward(ctx, x, *, output_size):
        x = np.ascontiguousarray(x, like=x)
        n, c, depth, h, w = x.shape
        stage, slice_indices = _adaptive_max_pool2d_arrays(x.reshape(n, c * depth, h, w), output_size[1:])
        plane = output_size[1] * output_size[2]
        _, depth_indices = _adaptive_max_pool2d_arrays(stage.reshape(n, c, depth, plane), (output_size[0], plane))
        return _combined_indices(slice_indices, depth_indices, x.shape)


@hands_over
def max_pool3d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:  # fmt: skip
    """Max over sliding (KD, KH, KW) windows of (N, C, D, H, W) input; with return_indices,
    also the argmax as flat positions ``d*H*W + h*W + w`` in each input volume (int64). Ties keep
    the first maximum, NaN propagates.

    >>> F = numdiff.nn.functional
    >>> F.max_pool3d(numdiff.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
    tensor([[[[[7.]]]]])
    """
    try:
        op = "max_pool3d"
        x, unbatched = batched_input(op, input, 3)
        k, s, p, d = pool_window(op, x._data.shape, 3, kernel_size, stride, padding, dilation, ceil_mode)
        plane = dict(kernel_size=k[1:], stride=s[1:], padding=p[1:], dilation=d[1:], ceil_mode=bool(ceil_mode))
        depth = dict(
            kernel_size=(k[0], 1), stride=(s[0], 1), padding=(p[0], 0), dilation=(d[0], 1), ceil_mode=bool(ceil_mode)
        )
        slices = _slices(x)
        stage = MaxPool2d.apply(slices, **plane)
        out = MaxPool2d.apply(_depth_planes(stage, x.shape[1]), **depth)
        out = unbatch(_volume(out, stage.shape[2:]), unbatched, False)
        if not return_indices:
            return out
        indices = MaxPool3dIndices.apply(x, kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=bool(ceil_mode))
        return out, indices_tensor(indices, unbatched, False)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(max_pool3d, locals())


@hands_over
def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a fixed (D_out, H_out, W_out) over windows
    ``[floor(i*In/Out), ceil((i+1)*In/Out))`` per axis; None in output_size keeps that input size.

    >>> F = numdiff.nn.functional
    >>> F.adaptive_max_pool3d(numdiff.ones(1, 2, 5, 7, 3), (2, 3, 1)).shape
    numdiff.Size([1, 2, 2, 3, 1])
    """
    try:
        op = "adaptive_max_pool3d"
        x, unbatched = batched_input(op, input, 3)
        size = resolve_output_size(op, output_size, tuple(x.shape))
        planes = _whole_slices(x, size)
        if planes is not None:
            out = unbatch(_volume(AdaptiveMaxPool2d.apply(planes, output_size=(size[0], 1)), (1, 1)), unbatched, False)
            if not return_indices:
                return out
            indices = AdaptiveMaxPool2dIndices.apply(planes, output_size=(size[0], 1))
            return out, indices_tensor(_volume(indices, (1, 1)), unbatched, False)
        slices = _slices(x)
        stage = AdaptiveMaxPool2d.apply(slices, output_size=size[1:])
        depth_size = (size[0], size[1] * size[2])
        out = AdaptiveMaxPool2d.apply(_depth_planes(stage, x.shape[1]), output_size=depth_size)
        out = unbatch(_volume(out, size[1:]), unbatched, False)
        if not return_indices:
            return out
        return out, indices_tensor(AdaptiveMaxPool3dIndices.apply(x, output_size=size), unbatched, False)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(adaptive_max_pool3d, locals())


@hands_over
def avg_pool3d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True, divisor_override: int | None = None,
) -> Tensor:  # fmt: skip
    """Mean over sliding (KD, KH, KW) windows of (N, C, D, H, W) input, with PyTorch's rules for
    padding, ceil_mode, count_include_pad and divisor_override.

    >>> F = numdiff.nn.functional
    >>> F.avg_pool3d(numdiff.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
    tensor([[[[[3.5000]]]]])
    """
    try:
        op = "avg_pool3d"
        x, unbatched = batched_input(op, input, 3)
        k, s, p, _ = pool_window(op, x._data.shape, 3, kernel_size, stride, padding, 1, ceil_mode)
        if any(n < size for n, size in zip(x._data.shape[2:], k)):
            # PyTorch's avg_pool3d (and lp_pool3d through it) refuses such an input even where padding
            # or ceil_mode would give every window an element; max_pool3d and the 1-d/2-d pools accept it.
            raise ValueError(f"avg_pool3d: input of spatial size {tuple(x._data.shape[2:])} is smaller than kernel_size {k}")
        override = divisor(op, divisor_override)
        # With an override both stages sum (a divisor of 1) and the total is divided once.
        options = dict(
            ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad),
            divisor_override=None if override is None else 1,
        )  # fmt: skip
        stage = AvgPool2d.apply(_slices(x), kernel_size=k[1:], stride=s[1:], padding=p[1:], **options)
        out = AvgPool2d.apply(
            _depth_planes(stage, x.shape[1]), kernel_size=(k[0], 1), stride=(s[0], 1), padding=(p[0], 0), **options
        )
        out = _volume(out, stage.shape[2:])
        if override is not None:
            out = out / override
        return unbatch(out, unbatched, False)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(avg_pool3d, locals())


@hands_over
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Mean pooling to a fixed (D_out, H_out, W_out); None in output_size keeps that input size.

    >>> F = numdiff.nn.functional
    >>> F.adaptive_avg_pool3d(numdiff.ones(1, 2, 5, 7, 3), 1).shape
    numdiff.Size([1, 2, 1, 1, 1])
    """
    try:
        op = "adaptive_avg_pool3d"
        x, unbatched = batched_input(op, input, 3)
        size = resolve_output_size(op, output_size, tuple(x.shape))
        planes = _whole_slices(x, size)
        if planes is not None:
            return unbatch(_volume(AdaptiveAvgPool2d.apply(planes, output_size=(size[0], 1)), (1, 1)), unbatched, False)
        stage = AdaptiveAvgPool2d.apply(_slices(x), output_size=size[1:])
        out = AdaptiveAvgPool2d.apply(_depth_planes(stage, x.shape[1]), output_size=(size[0], size[1] * size[2]))
        return unbatch(_volume(out, size[1:]), unbatched, False)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(adaptive_avg_pool3d, locals())
