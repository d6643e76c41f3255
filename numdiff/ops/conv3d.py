"""3-d convolutions: conv3d and conv_transpose3d, on the 2-d convolution kernels.

A 3-d convolution is a 2-d convolution of depth slices: output slice ``od`` is the sum over the
depth taps kd of ``conv2d(x[:, :, od*sd - pd + kd*dd], w[:, :, kd])``. Stacking the KD taps of
each output slice as channels (numdiff.ops._axis_taps) turns the sum into one grouped conv2d of
N*OD images with KD*C channels, whose weight is ``w`` with its depth taps moved next to its input
channels::

    x (N, C, D, H, W) -> (N, D, C*H*W) -> axis_taps -> (N*OD, G*KD*Cg, H, W)
    conv2d with w (Co, KD*Cg, KH, KW), groups G  -> (N*OD, Co, OH, OW) -> (N, Co, OD, OH, OW)

conv_transpose3d, the adjoint of conv3d in its input, runs the same chain backwards:
conv_transpose2d, then axis_taps_backward. Every step is a registered op or a view, and
conv2d/conv_transpose2d/conv2d_weight_grad and axis_taps/axis_taps_backward are closed under
differentiation, so gradients of every order, vmap and compile come from their rules, on the CPU
and on CUDA alike. The tap stack costs KD times the input in memory, as an im2col along depth
(the 2-d kernels tile their own im2col of the rest). The chain computes in an (N, D, C, H, W)
layout; the result is copied to a contiguous (N, C, D, H, W) tensor, as PyTorch returns it (so
``.view`` works on it), a pass over the output that costs little next to the convolution.
"""

from __future__ import annotations

from typing import Any

from numdiff._ground.conv_geometry import conv_output_size
from numdiff.ops._axis_taps import AxisTaps, AxisTapsBackward
from numdiff.ops.conv import Conv2d, ConvTranspose2d, _conv_config, _conv_transpose_config, _tensors
from numdiff.overrides import ForeignOperandError, dispatch_call, hands_over
from numdiff.tensor import Tensor

__all__ = ["conv3d", "conv_transpose3d"]


def _depth_major(x: Tensor) -> Tensor:
    """(N, C, D, H, W) as (N, D, C*H*W)."""
    n, c, d, h, w = x.shape
    return x.permute(0, 2, 1, 3, 4).reshape(n, d, c * h * w)


def _taps_as_channels(taps: Tensor, images: int, groups: int, spatial: tuple) -> Tensor:
    """(N, OD, KD, C*H*W) taps as (N*OD, G*KD*Cg, H, W) images: group-major channels. Sizes are
    spelt out, not -1, which an empty batch leaves undetermined."""
    kd, c = taps.shape[2], taps.shape[3] // max(spatial[0] * spatial[1], 1)
    if groups == 1:
        return taps.reshape(images, kd * c, *spatial)
    grouped = taps.reshape(images, kd, groups, c // groups, *spatial).permute(0, 2, 1, 3, 4, 5)
    return grouped.reshape(images, kd * c, *spatial)


def _channels_as_taps(y: Tensor, n: int, depth: int, kd: int, groups: int) -> Tensor:
    """The inverse of _taps_as_channels: (N*D, G*KD*Cg, H, W) -> (N, D, KD, C*H*W)."""
    _, channels, h, w = y.shape
    if groups > 1:
        y = y.reshape(n * depth, groups, kd, channels // (groups * kd), h, w).permute(0, 2, 1, 3, 4, 5)
    return y.reshape(n, depth, kd, channels // kd * h * w)


def _weight_2d(w: Tensor) -> Tensor:
    """(Co, Cg, KD, KH, KW) as (Co, KD*Cg, KH, KW): each depth tap's channels side by side."""
    co, cg, kd, kh, kw = w.shape
    return w.permute(0, 2, 1, 3, 4).reshape(co, kd * cg, kh, kw)


@hands_over
def conv3d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:  # fmt: skip
    """3-d convolution (cross-correlation) of (N, C_in, D, H, W) input with (C_out, C_in/groups,
    KD, KH, KW) weight; stride, padding and dilation are ints or triples, padding also
    "same"/"valid". Unbatched (C_in, D, H, W) input is accepted.

    >>> F = numdiff.nn.functional
    >>> F.conv3d(numdiff.ones(1, 2, 4, 5, 6), numdiff.ones(3, 2, 3, 3, 3), padding=1).shape
    numdiff.Size([1, 3, 4, 5, 6])
    """
    try:
        op = "conv3d"
        x, w, b = _tensors(op, input, weight, bias)
        b_shape = None if b is None else b._data.shape
        stride, sides, dilation, groups, unbatched = _conv_config(
            op, 3, x._data.shape, w._data.shape, b_shape, stride, padding, dilation, groups
        )
        if unbatched:
            x = x.unsqueeze(0)
        n, _, depth, h, wd = x.shape
        kd = w.shape[2]
        od = conv_output_size(depth, kd, stride[0], sides[0], sides[1], dilation[0])
        taps = AxisTaps.apply(
            _depth_major(x), taps=kd, stride=stride[0], dilation=dilation[0], pad=sides[0], out_size=od
        )
        y = Conv2d.apply(
            _taps_as_channels(taps, n * od, groups, (h, wd)), _weight_2d(w), b, stride=stride[1:],
            padding=sides[2:], dilation=dilation[1:], groups=groups,
        )  # fmt: skip
        out = y.reshape(n, od, *y.shape[1:]).permute(0, 2, 1, 3, 4).contiguous()
        return out.squeeze(0) if unbatched else out
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(conv3d, locals())


@hands_over
def conv_transpose3d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:  # fmt: skip
    """Transposed 3-d convolution (the input gradient of conv3d, as a layer): input
    (N, C_in, D, H, W), weight (C_in, C_out/groups, KD, KH, KW).

    >>> F = numdiff.nn.functional
    >>> F.conv_transpose3d(numdiff.ones(1, 2, 3, 4, 4), numdiff.ones(2, 3, 3, 3, 3), stride=2).shape
    numdiff.Size([1, 3, 7, 9, 9])
    """
    try:
        op = "conv_transpose3d"
        x, w, b = _tensors(op, input, weight, bias)
        b_shape = None if b is None else b._data.shape
        size, stride, sides, dilation, groups, unbatched = _conv_transpose_config(
            op, 3, x._data.shape, w._data.shape, b_shape, stride, padding, output_padding, groups, dilation
        )
        if unbatched:
            x = x.unsqueeze(0)
        n, c_in, depth, h, wd = x.shape
        kd = w.shape[2]
        images = _depth_major(x).reshape(n * depth, c_in, h, wd)
        y = ConvTranspose2d.apply(
            images, _weight_2d(w), size=size[1:], stride=stride[1:], padding=sides[2:], dilation=dilation[1:],
            groups=groups,
        )  # fmt: skip
        spread = AxisTapsBackward.apply(
            _channels_as_taps(y, n, depth, kd, groups), taps=kd, stride=stride[0], dilation=dilation[0], pad=sides[0],
            size=size[0],
        )  # fmt: skip
        out = spread.reshape(n, size[0], w.shape[1] * groups, *size[1:]).permute(0, 2, 1, 3, 4).contiguous()
        if b is not None:
            out = out + b.reshape(-1, 1, 1, 1)
        return out.squeeze(0) if unbatched else out
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(conv_transpose3d, locals())
