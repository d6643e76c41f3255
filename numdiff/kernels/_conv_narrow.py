"""Forward convolution to few output channels, any kernel size, stride 1 (CPU, Numba, no BLAS).

im2col's GEMM has M = the output channels per group: with 1-4 of them (an image-producing last
layer, style transfer's 9x9 16 -> 3) OpenBLAS runs a 3-row product at a few GFLOP/s and the
column buffer (Cg*KH*KW rows) is written and read once per output row for 3 rows of output.

Method. A job is a block of output rows of one (image, group). Its input rows, zero-padded to
``WP = OW + (KW-1)*dw`` columns, are staged once, side by side: ``stage[c, r*WP + u] = x[c, oh0 -
pt + r, u - pl]`` (zero outside the image). Output position (row rr of the block, column ow) then
reads tap (i, j) at the flat index ``q + i*dh*WP + j*dw`` with ``q = rr*WP + ow``, so with ``X_ij``
the (Cg, ...) run of the stage starting at ``i*dh*WP + j*dw`` and ``W_ij = w[:, :, i, j]`` (Cog,
Cg), ``acc (Cog, rows*WP) = bias + sum_ij W_ij @ X_ij``: KH*KW products of depth Cg, each one
call of numdiff.kernels._gemm_loops.accumulate (a 512-bit loop along the whole block, no edge
tests: the padding is in the stage). With more tap columns than channels (KW > Cg: an RGB or
single-channel input), the products run along a tap row instead, one per (channel, tap row) of
depth KW: the KW runs ``stage[c, i*dh*WP + j*dw :]`` are rows of one strided view, dw apart
(3 -> 3 9x9 at 64x64, 4 images: 0.86 -> 0.59 ms; 1 -> 1 7x7: 0.39 -> 0.16; 2 -> 4 5x5: 0.34 ->
0.19). The ``WP - OW`` spare columns of each row are computed and
dropped. Loop nest: prange over threads' contiguous runs of the (image, group, row block) jobs;
stage, one product per tap, copy the rows out. Blocks hold about :data:`BLOCK_COLUMNS` output
columns, so acc stays in the L1 cache. Extra memory per thread: the stage, ``Cg*(rows +
(KH-1)*dh)*WP`` elements, and acc, ``Cog*rows*WP``.

Measured (one thread, thread CPU time, float32, Emerald Rapids, load 14-17; ms, the loop per output
row it replaced (a 256-bit loop over the row's valid columns per tap and output channel) -> this):
style transfer's 4x16->3 64x64 k9 p4 8.8-11.4 -> 2.9-4.3 (PyTorch 4.6-4.8), 1x16->1 the same
0.98-1.27 -> 0.40-0.43. Blocks of 256 / 512 / 1024 columns: 0.41-0.43 / 0.32-0.38 / 0.45-0.55 of
the old time. Routing a 9x9 forward from 3 channels to 8 or 16 outputs here lost to im2col (1.15
-> 1.63, 1.9 -> 3.0 ms); see numdiff.kernels._conv_routing.use_narrow.

Accuracy: the direct sum's terms, added in another order; routed the same way eagerly and under
numdiff.compile.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._gemm_loops import accumulate, one_like
from numdiff.kernels._parallel import contiguous_run, serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

__all__ = ["BLOCK_COLUMNS", "narrow_forward_core"]

BLOCK_COLUMNS = 512
"""Output columns (rows x WP) a job's block aims at, so that acc (Cog x this) and the stage's
rows each product reads stay in the L1 cache (measured: the module docstring)."""


@njit(cache=True, nogil=True)
def _stage_rows(x5, n, g, first, pl, wp, stage):
    """``stage[c, r*wp + u] = x5[n, g, c, first + r, u - pl]``, zero outside the image."""
    cg, height, width = x5.shape[2], x5.shape[3], x5.shape[4]
    rows = stage.shape[1] // wp
    for c in range(cg):
        for r in range(rows):
            dst = stage[c, r * wp : (r + 1) * wp]
            ih = first + r
            if ih < 0 or ih >= height:
                dst[:] = 0
                continue
            src = x5[n, g, c, ih]
            lo, hi = min(pl, wp), min(wp, pl + width)
            dst[:lo] = 0
            for u in range(lo, hi):
                dst[u] = src[u - pl]
            dst[hi:] = 0


def narrow_forward_core(x5, w3, bias, has_bias, out4, kh, kw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """x5 (N, G, Cg, H, W), w3 (G, Cog, Cg*KH*KW), bias (G*Cog,) if has_bias, out4 (N, G, Cog,
    OH*OW); stride 1, dilation (dh, dw), top and left padding pt, pl."""
    n_img, groups, cg = x5.shape[0], x5.shape[1], x5.shape[2]
    cog = w3.shape[1]
    wp = ow_size + (kw - 1) * dw
    block = max(1, min(oh_size, BLOCK_COLUMNS // wp))
    blocks = -(-oh_size // block)
    halo = (kh - 1) * dh
    stages = np.empty((parts, cg, (block + halo) * wp), x5.dtype)
    results = np.empty((parts, cog, block * wp), x5.dtype)
    total = n_img * groups * blocks
    itemsize = x5.itemsize
    for t in prange(parts):
        start, stop = contiguous_run(total, parts, t)
        results_t = results[t]
        one = one_like(results_t)
        for job in range(start, stop):
            n, g, oh0 = job // (groups * blocks), (job // blocks) % groups, (job % blocks) * block
            rows = min(block, oh_size - oh0)
            stage = stages[t, :, : (rows + halo) * wp]
            _stage_rows(x5, n, g, oh0 - pt, pl, wp, stage)
            cols = (rows - 1) * wp + ow_size
            acc = results_t[:, :cols]
            for o in range(cog):
                acc[o] = bias[g * cog + o] if has_bias else 0
            if kw > cg:
                for c in range(cg):
                    for i in range(kh):
                        taps = np.lib.stride_tricks.as_strided(
                            stage[c, i * dh * wp :], (kw, cols), (dw * itemsize, itemsize)
                        )
                        accumulate(w3[g, :, (c * kh + i) * kw : (c * kh + i + 1) * kw], taps, one, acc)
            else:
                for i in range(kh):
                    for j in range(kw):
                        # The stage's channel rows as a strided view, as the tap rows above: one
                        # type of operand, so one compiled accumulate (~5 s on an empty cache).
                        chans = np.lib.stride_tricks.as_strided(
                            stage[0, i * dh * wp + j * dw :], (cg, cols), (stage.strides[0], itemsize)
                        )
                        accumulate(w3[g, :, i * kw + j :: kh * kw], chans, one, acc)
            for o in range(cog):
                for rr in range(rows):
                    first = (oh0 + rr) * ow_size
                    out4[n, g, o, first : first + ow_size] = acc[o, rr * wp : rr * wp + ow_size]


narrow_forward_core = serial_and_parallel(narrow_forward_core, nogil=True)
