"""Conv geometry: output sizes and the checks of a conv2d configuration, shared by the CPU kernels
(numdiff.kernels.conv) and the CUDA kernels (numdiff.cuda.kernels.conv), so both refuse the same
inputs with the same messages.

Integers go through :func:`numdiff._ground.args.int_tuple`, bounded by GEOMETRY_LIMIT so that no
index arithmetic in a kernel overflows. Padding may be negative (a crop: a transposed conv's
output_padding lowers its bottom/right padding), down to minus the limit.
"""

from __future__ import annotations

from typing import NamedTuple

from numdiff._ground.args import GEOMETRY_LIMIT, int_tuple, remember_checks

__all__ = ["Conv2dGeometry", "axis_tap_spans", "conv2d_geometry", "conv_output_size"]


def conv_output_size(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int) -> int:
    """Output length of a convolution along one axis.

    >>> conv_output_size(32, 3, 1, 1, 1, 1)
    32
    """
    return (size + pad_lo + pad_hi - dilation * (kernel - 1) - 1) // stride + 1


def axis_tap_spans(
    taps: int, stride: int, dilation: int, pad_lo: int, size: int, out_size: int
) -> list[tuple[int, int, int, int]]:
    """The taps along one axis of a convolution that land inside the input: ``(k, lo, hi, start)``
    for each tap k that some output reads in [0, size), where outputs lo <= o < hi read input
    ``start + (o - lo) * stride`` (output o reads ``o*stride + k*dilation - pad_lo``). A tap past
    either end (padding, or a negative pad_hi cropping the input) is left out.

    >>> axis_tap_spans(3, 1, 1, 1, 4, 4)
    [(0, 1, 4, 0), (1, 0, 4, 0), (2, 0, 3, 1)]
    """
    spans = []
    for k in range(taps):
        first = k * dilation - pad_lo
        lo = 0 if first >= 0 else (-first + stride - 1) // stride
        hi = min(out_size, (size - 1 - first) // stride + 1) if size - 1 - first >= 0 else 0
        if hi > lo:
            spans.append((k, lo, hi, first + lo * stride))
    return spans


class Conv2dGeometry(NamedTuple):
    """The sizes of one conv2d configuration, checked (see `conv2d_geometry`)."""

    n_img: int
    c_in: int
    height: int
    width: int
    c_out: int
    cg: int
    kh: int
    kw: int
    sh: int
    sw: int
    pt: int
    pb: int
    pl: int
    pr: int
    dh: int
    dw: int
    groups: int
    oh: int
    ow: int


@remember_checks
def conv2d_geometry(op, x_shape, w_shape, out_shape, stride, padding, dilation, groups) -> Conv2dGeometry:
    """Validate a conv2d configuration (shared by these kernels and numdiff.cuda's) and size it.

    `out_shape` is the output's (forward) or the output gradient's (backward) shape. Results are
    remembered per configuration (:func:`numdiff._ground.args.remember_checks`).
    """
    sh, sw = int_tuple(op, "stride", stride, 2, 1)
    pt, pb, pl, pr = int_tuple(op, "padding", padding, 4, -GEOMETRY_LIMIT)
    dh, dw = int_tuple(op, "dilation", dilation, 2, 1)
    (groups,) = int_tuple(op, "groups", (groups,), 1, 1)
    w_shape = tuple(w_shape)
    if len(x_shape) != 4 or len(w_shape) != 4 or len(out_shape) != 4:
        raise ValueError(
            f"{op}: input, weight and output must be 4-D, got input {x_shape}, "
            f"weight {w_shape}, output {out_shape}"
        )
    if 0 in w_shape:
        raise ValueError(f"{op}: weight must have no zero-size dimension, got {w_shape}")
    n_img, c_in, height, width = x_shape
    c_out, cg, kh, kw = w_shape
    if height < 1 or width < 1:
        raise ValueError(f"{op}: spatial sizes must be positive, got input {tuple(x_shape)}")
    if c_in % groups or c_out % groups:
        raise ValueError(f"{op}: groups={groups} must divide in_channels={c_in} and out_channels={c_out}")
    if cg != c_in // groups:
        raise ValueError(
            f"{op}: weight {w_shape} expects {cg * groups} input channels with groups={groups}, "
            f"input has {c_in}"
        )
    oh_size = conv_output_size(height, kh, sh, pt, pb, dh)
    ow_size = conv_output_size(width, kw, sw, pl, pr, dw)
    if oh_size < 1 or ow_size < 1:
        raise ValueError(
            f"{op}: kernel {kh}x{kw} (dilation {dh}x{dw}) is larger than the padded input "
            f"{height + pt + pb}x{width + pl + pr}"
        )
    if tuple(out_shape) != (n_img, c_out, oh_size, ow_size):
        raise ValueError(
            f"{op}: output must have shape {(n_img, c_out, oh_size, ow_size)} for input {x_shape}, "
            f"weight {w_shape}, stride {(sh, sw)}, padding {(pt, pb, pl, pr)}, dilation {(dh, dw)}; "
            f"got {tuple(out_shape)}"
        )
    return Conv2dGeometry(
        n_img,
        c_in,
        height,
        width,
        c_out,
        cg,
        kh,
        kw,
        sh,
        sw,
        pt,
        pb,
        pl,
        pr,
        dh,
        dw,
        groups,
        oh_size,
        ow_size,
    )
