"""Depthwise convolution forward with the channels innermost (CPU, Numba): groups = C, one input
and one output channel a group, any stride and dilation.

The per-group stencil (numdiff.kernels._conv_grouped) vectorises along an image's staged rows,
and on the small planes of a mobile network's late stages most of each run is padding: an 8x8
plane under a 5x5 kernel is staged as 12x12 runs, 2.25 positions computed for each one kept. Here
each image is copied once, zero-padded, into (Hp, Wp, C) (the channels innermost), and every output
position sums its taps as vectors over all C channels: ``acc[c] += w[t, c] * xp[oh*sh + i*dh,
ow*sw + j*dw, c]``. Nothing is computed that is dropped, and the vectors are as long as C.

Loop nest: prange over images; per image: stage (H, W) x C into xp; for (oh, ow): taps three to
a pass over the C channels; the (OH, OW, C) result is written back to out4 (N, C, 1, OH*OW).
Extra memory per image: xp (Hp*Wp*C) and the result (OH*OW*C); the weights as (KH*KW, C).

Accuracy: each element adds its taps in the order of the stencil's forward, three a pass as
``acc += w0*x0 + w1*x1 + w2*x2`` with no fused multiply-add, padding read as zeros as the staged
planes are, then the bias: the same bits as numdiff.kernels._conv_grouped's forward.

Measured against the stencil: numdiff.kernels._conv_routing.DEPTHWISE_LAST_MAX_WIDTH, the rule
that routes here (narrow output rows, where the stencil's runs are mostly padding).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._vecmath import wide_vectors


def depthwise_forward_loop(x5, w3, bias, has_bias, out4, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """``out4[n, c, 0, oh*OW + ow] = bias[c] + sum_{i, j} w3[c, 0, i*KW + j] * x5[n, c, 0, oh*sh - pt
    + i*dh, ow*sw - pl + j*dw]`` (zero outside the image); prange over images."""
    n_img, channels, _, height, width = x5.shape
    taps = kh * kw
    hp = (oh_size - 1) * sh + (kh - 1) * dh + 1
    wp = (ow_size - 1) * sw + (kw - 1) * dw + 1
    wt = np.empty((taps, channels), x5.dtype)
    for c in range(channels):
        for t in range(taps):
            wt[t, c] = w3[c, 0, t]
    shift = np.zeros(channels, x5.dtype)
    if has_bias:
        for c in range(channels):
            shift[c] = bias[c]
    rows = np.empty(taps, np.int64)
    cols = np.empty(taps, np.int64)
    for i in range(kh):
        for j in range(kw):
            rows[i * kw + j] = i * dh
            cols[i * kw + j] = j * dw
    for n in prange(n_img):
        wide_vectors()
        xp = np.zeros((hp, wp, channels), x5.dtype)
        # Eight channels at a time: eight input rows read in step, each staged row written in
        # runs of eight (a plain transpose writes one element a row and misses the cache).
        for c0 in range(0, channels, 8):
            c1 = min(c0 + 8, channels)
            for ih in range(max(0, -pt), min(height, hp - pt)):
                for iw in range(max(0, -pl), min(width, wp - pl)):
                    cell = xp[ih + pt, iw + pl]
                    for c in range(c0, c1):
                        cell[c] = x5[n, c, 0, ih, iw]
        result = np.empty((oh_size, ow_size, channels), x5.dtype)
        for oh in range(oh_size):
            for ow in range(ow_size):
                acc = result[oh, ow]
                for c in range(channels):
                    acc[c] = 0
                r0, c0 = oh * sh, ow * sw
                t = 0
                while t + 3 <= taps:
                    w0, w1, w2 = wt[t], wt[t + 1], wt[t + 2]
                    x0 = xp[r0 + rows[t], c0 + cols[t]]
                    x1 = xp[r0 + rows[t + 1], c0 + cols[t + 1]]
                    x2 = xp[r0 + rows[t + 2], c0 + cols[t + 2]]
                    for c in range(channels):
                        acc[c] += w0[c] * x0[c] + w1[c] * x1[c] + w2[c] * x2[c]
                    t += 3
                if taps - t == 2:
                    w0, w1 = wt[t], wt[t + 1]
                    x0 = xp[r0 + rows[t], c0 + cols[t]]
                    x1 = xp[r0 + rows[t + 1], c0 + cols[t + 1]]
                    for c in range(channels):
                        acc[c] += w0[c] * x0[c] + w1[c] * x1[c]
                elif taps - t == 1:
                    w0, x0 = wt[t], xp[r0 + rows[t], c0 + cols[t]]
                    for c in range(channels):
                        acc[c] += w0[c] * x0[c]
                for c in range(channels):
                    acc[c] = acc[c] + shift[c]
        for c0 in range(0, channels, 8):
            c1 = min(c0 + 8, channels)
            for oh in range(oh_size):
                for ow in range(ow_size):
                    cell = result[oh, ow]
                    for c in range(c0, c1):
                        out4[n, c, 0, oh * ow_size + ow] = cell[c]


depthwise_forward_core = serial_and_parallel(depthwise_forward_loop, nogil=True)
