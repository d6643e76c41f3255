"""The sliding 2-D blocks of an image (unfold / im2col) and their scatter-add back (fold /
col2im), as a pair of registered ops that are each other's adjoint, so that F.unfold and F.fold
are differentiable to every order:

* ``block_taps(x)``:          x (N, C, H, W)            -> (N, C, KH, KW, OH, OW),
  ``out[n, c, i, j, oy, ox] = x[n, c, oy*sh + i*dh - ph, ox*sw + j*dw - pw]`` (zero in the padding);
* ``block_taps_backward(g)``: g (N, C, KH, KW, OH, OW)  -> (N, C, H, W), the sum of every tap's
  values at those positions.

Each tap (i, j) is one strided copy (forward) or one strided add (backward) of an (N, C, oy-span,
ox-span) window, written with basic slicing, so the same code runs on every backend's arrays
(NumPy and numdiff.cuda's CudaArray); the spans come from
:func:`numdiff._ground.conv_geometry.axis_tap_spans`. Memory-bound: one pass over the KH*KW
times larger side. It replaces an index_select of the flattened image and its ``np.add.at``
adjoint, which measured 5x PyTorch's unfold forward and backward on (8, 64, 16, 16), kernel 3,
padding 1.
"""

from __future__ import annotations

import numpy as np

from numdiff._ground.conv_geometry import axis_tap_spans
from numdiff.autograd.function import Function
from numdiff.ops.registry import register

__all__ = ["BlockTaps", "BlockTapsBackward"]


def _spans(geometry: dict, size: tuple[int, int], blocks: tuple[int, int]) -> list[tuple]:
    """``(i, j, rows, cols, source rows, source cols)`` for every tap that lands in the image: the
    slices of the (OH, OW) block grid and of the (H, W) image that it pairs up."""
    along = [
        axis_tap_spans(geometry["kernel"][d], geometry["stride"][d], geometry["dilation"][d], geometry["padding"][d],
                       size[d], blocks[d])
        for d in range(2)
    ]
    sh, sw = geometry["stride"]
    return [
        (i, j, slice(lo_h, hi_h), slice(lo_w, hi_w),
         slice(start_h, start_h + (hi_h - lo_h - 1) * sh + 1, sh), slice(start_w, start_w + (hi_w - lo_w - 1) * sw + 1, sw))
        for i, lo_h, hi_h, start_h in along[0]
        for j, lo_w, hi_w, start_w in along[1]
    ]


@register("block_taps", compile="call")
class BlockTaps(Function):
    """x (N, C, H, W) -> (N, C, KH, KW, OH, OW): every sliding block's taps (zero in the padding)."""

    @staticmethod
    def forward(ctx, x, *, kernel, stride, dilation, padding, blocks):
        ctx.geometry = dict(kernel=kernel, stride=stride, dilation=dilation, padding=padding)
        ctx.size = (x.shape[2], x.shape[3])
        spans = _spans(ctx.geometry, ctx.size, blocks)
        full = len(spans) == kernel[0] * kernel[1] and all(
            (r.stop - r.start, c.stop - c.start) == tuple(blocks) for _, _, r, c, _, _ in spans
        )
        shape = (x.shape[0], x.shape[1], kernel[0], kernel[1], *blocks)
        out = np.empty(shape, dtype=x.dtype, like=x) if full else np.zeros(shape, dtype=x.dtype, like=x)
        for i, j, rows, cols, source_rows, source_cols in spans:
            out[:, :, i, j, rows, cols] = x[:, :, source_rows, source_cols]
        return out

    @staticmethod
    def backward(ctx, grad):
        return (BlockTapsBackward.apply(grad, size=ctx.size, **ctx.geometry),)


@register("block_taps_backward", compile="call")
class BlockTapsBackward(Function):
    """g (N, C, KH, KW, OH, OW) -> (N, C, H, W): every tap's value added back at its position."""

    @staticmethod
    def forward(ctx, g, *, kernel, stride, dilation, padding, size):
        ctx.geometry = dict(kernel=kernel, stride=stride, dilation=dilation, padding=padding)
        ctx.blocks = (g.shape[4], g.shape[5])
        out = np.zeros((g.shape[0], g.shape[1], *size), dtype=g.dtype, like=g)
        for i, j, rows, cols, source_rows, source_cols in _spans(ctx.geometry, size, ctx.blocks):
            view = out[:, :, source_rows, source_cols]
            np.add(view, g[:, :, i, j, rows, cols], out=view)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (BlockTaps.apply(grad, blocks=ctx.blocks, **ctx.geometry),)
