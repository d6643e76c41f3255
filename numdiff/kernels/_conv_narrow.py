"""Forward convolution to few output channels, any kernel size, stride 1 (CPU, Numba, no BLAS).

im2col's GEMM has M = the output channels per group: with 1-4 of them (an image-producing last
layer, style transfer's 9x9 16 -> 3) OpenBLAS runs a 3-row product at a few GFLOP/s and the
column buffer (Cg*KH*KW rows) is written and read once per output row for 3 rows of output.
Here each output row is summed directly: for an (image, group, output row) job, every input
channel, filter row and filter column adds ``w * x[row, ow + offset]`` over the output row's
valid columns into a (Cog, OW) accumulator, a contiguous loop LLVM vectorises; the accumulator
stays in L1. Loop nest: prange over threads' equal shares of the (image, group, output row)
jobs; channel c, tap row i (rows outside the image skipped), tap column j, output channel, output
column. Same array arguments as the im2col cores (numdiff.kernels._conv_cores); the routing rule
and its measurements: numdiff.kernels._conv_routing.use_narrow. Extra memory per thread: Cog*OW
elements. Accuracy: the direct sum's terms, added tap by tap.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._parallel import serial_and_parallel

__all__ = ["narrow_forward_core"]


def narrow_forward_core(x5, w3, bias, has_bias, out4, kh, kw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """x5 (N, G, Cg, H, W), w3 (G, Cog, Cg*KH*KW), bias (G*Cog,) if has_bias, out4 (N, G, Cog,
    OH*OW); stride 1, dilation (dh, dw), top and left padding pt, pl."""
    n_img, groups, cg, height, width = x5.shape
    cog = w3.shape[1]
    jobs = n_img * groups * oh_size
    share = (jobs + parts - 1) // parts
    for part in prange(parts):
        acc = np.empty((cog, ow_size), x5.dtype)
        for job in range(part * share, min(jobs, (part + 1) * share)):
            n = job // (groups * oh_size)
            g = (job // oh_size) % groups
            oh = job % oh_size
            acc[:] = 0
            for c in range(cg):
                for i in range(kh):
                    ih = oh - pt + i * dh
                    if ih < 0 or ih >= height:
                        continue
                    row = x5[n, g, c, ih]
                    for j in range(kw):
                        offset = j * dw - pl
                        lo = max(0, -offset)
                        hi = min(ow_size, width - offset)
                        tap = (c * kh + i) * kw + j
                        src = row[lo + offset : hi + offset]
                        for co in range(cog):
                            wv = w3[g, co, tap]
                            dst = acc[co, lo:hi]
                            # Indices from 0 on slices: no negative-index check, so LLVM vectorises.
                            for t in range(hi - lo):
                                dst[t] += wv * src[t]
            base = oh * ow_size
            for co in range(cog):
                b = bias[g * cog + co] if has_bias else 0.0
                for ow in range(ow_size):
                    out4[n, g, co, base + ow] = acc[co, ow] + b


narrow_forward_core = serial_and_parallel(narrow_forward_core, nogil=True)
