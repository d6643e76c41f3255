"""Depthwise convolution forward, input gradient and weight gradient with the channels innermost
(CPU, Numba): groups = C, one input and one output channel a group, any stride and dilation.

The per-group stencil (numdiff.kernels._conv_grouped) vectorises along an image's staged rows,
and on the small planes of a mobile network's late stages most of each run is padding: an 8x8
plane under a 5x5 kernel is staged as 12x12 runs, 2.25 positions computed for each one kept. Here
each image is copied once, zero-padded, into (Hp, Wp, C) (the channels innermost), and every output
position sums its taps as vectors over all C channels: ``acc[c] += w[t, c] * xp[oh*sh + i*dh,
ow*sw + j*dw, c]``. Nothing is computed that is dropped, and the vectors are as long as C.

Loop nests (prange over images; the weight gradient over contiguous runs of images):

* forward: stage (H, W) x C into xp; for (oh, ow): taps three to a pass over the C channels; the
  (OH, OW, C) result is written back to out4 (N, C, 1, OH*OW).
* backward_input: the output gradient as (OH, OW, C); for (oh, ow), tap: ``dxp[oh*sh + i*dh,
  ow*sw + j*dw, :] += w[t, :] * g[oh, ow, :]`` into a zeroed padded (Hp, Wp, C) gradient (a scatter
  within one image, so no races); its inside is written back to dx5, zeros where no tap reads.
* backward_weight: per part, stage each image's xp and output gradient; for tap, (oh, ow):
  ``acc[t, :] += g[oh, ow, :] * xp[oh*sh + i*dh, ow*sw + j*dw, :]``; the parts' (KH*KW, C)
  accumulators are added in part order (the same bits for a given thread count).

Extra memory per image: xp or dxp (Hp*Wp*C) and one (OH*OW*C) array; the weights as (KH*KW, C);
the weight gradient one (KH*KW, C) accumulator a part.

Accuracy: the forward adds each element's taps in the order of the stencil's forward, three a pass
as ``acc += w0*x0 + w1*x1 + w2*x2`` with no fused multiply-add, padding read as zeros as the staged
planes are, then the bias: the same bits as numdiff.kernels._conv_grouped's forward. The
gradients add their terms in another order than the stencil's (rounding differences only; tests
compare them with PyTorch's).

Measured against the stencil: numdiff.kernels._conv_routing.DEPTHWISE_LAST_MAX_WIDTH, the rule
that routes here per kind (narrow output rows, where the stencil's runs are mostly padding).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._parallel import contiguous_run, serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import wide_vectors


@njit(cache=True, nogil=True)
def _tap_shifts(kh, kw, dh, dw):
    """``(rows, cols)``: where tap ``t = i*KW + j`` reads, relative to its output's first input
    position: ``(i*dh, j*dw)``."""
    rows = np.empty(kh * kw, np.int64)
    cols = np.empty(kh * kw, np.int64)
    for i in range(kh):
        for j in range(kw):
            rows[i * kw + j] = i * dh
            cols[i * kw + j] = j * dw
    return rows, cols


@njit(cache=True, nogil=True)
def _taps_by_channel(w3):
    """The (C, 1, KH*KW) depthwise weights as (KH*KW, C): one vector over the channels a tap."""
    channels, _, taps = w3.shape
    wt = np.empty((taps, channels), w3.dtype)
    for c in range(channels):
        for t in range(taps):
            wt[t, c] = w3[c, 0, t]
    return wt


@njit(cache=True, nogil=True)
def _stage_channels_last(x4, xp, pt, pl):
    """``xp[ih + pt, iw + pl, c] = x4[c, 0, ih, iw]`` where that lies inside xp (Hp, Wp, C); the rest
    of xp is left as it is (zeros: the padding). A staged row at a time, channel after channel:
    the row (Wp*C elements) stays in L1 while its channels' input rows are read in order (blocks
    of eight channels written eight at a time ran 2.3x slower: N16 C64 16x16, 0.16 -> 0.07 ms)."""
    channels, _, height, width = x4.shape
    hp, wp, _ = xp.shape
    lo, hi = max(0, -pl), min(width, wp - pl)
    if lo >= hi:
        return
    for ih in range(max(0, -pt), min(height, hp - pt)):
        # Slices, so the loops index from 0: an index with a variable offset (iw + pl) makes Numba
        # check each element for a negative (wraparound) index, which ran the copy 2.8x slower.
        dst = xp[ih + pt, lo + pl : hi + pl]
        for c in range(channels):
            src = x4[c, 0, ih, lo:hi]
            for k in range(hi - lo):
                dst[k, c] = src[k]


@njit(cache=True, nogil=True)
def _planes_to_channels_last(planes, cells):
    """``cells[oh, ow, c] = planes[c, 0, oh*OW + ow]``: one image's (C, 1, OH*OW) planes as (OH, OW, C),
    a row of cells at a time as :func:`_stage_channels_last` stages."""
    oh_size, ow_size, channels = cells.shape
    for oh in range(oh_size):
        dst = cells[oh]
        for c in range(channels):
            src = planes[c, 0, oh * ow_size : (oh + 1) * ow_size]
            for ow in range(ow_size):
                dst[ow, c] = src[ow]


@njit(cache=True, nogil=True)
def _unstage_channels_last(cells, planes):
    """``planes[c, 0, oh*OW + ow] = cells[oh, ow, c]``: the adjoint of :func:`_planes_to_channels_last`."""
    oh_size, ow_size, channels = cells.shape
    for oh in range(oh_size):
        src = cells[oh]
        for c in range(channels):
            dst = planes[c, 0, oh * ow_size : (oh + 1) * ow_size]
            for ow in range(ow_size):
                dst[ow] = src[ow, c]


def depthwise_forward_loop(x5, w3, bias, has_bias, out4, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """``out4[n, c, 0, oh*OW + ow] = bias[c] + sum_{i, j} w3[c, 0, i*KW + j] * x5[n, c, 0, oh*sh - pt
    + i*dh, ow*sw - pl + j*dw]`` (zero outside the image); prange over images."""
    n_img, channels, _, height, width = x5.shape
    taps = kh * kw
    hp = (oh_size - 1) * sh + (kh - 1) * dh + 1
    wp = (ow_size - 1) * sw + (kw - 1) * dw + 1
    wt = _taps_by_channel(w3)
    shift = np.zeros(channels, x5.dtype)
    if has_bias:
        for c in range(channels):
            shift[c] = bias[c]
    rows, cols = _tap_shifts(kh, kw, dh, dw)
    for n in prange(n_img):
        wide_vectors()
        xp = np.zeros((hp, wp, channels), x5.dtype)
        _stage_channels_last(x5[n], xp, pt, pl)
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
        _unstage_channels_last(result, out4[n])


def depthwise_backward_input_loop(go4, w3, dx5, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """``dx5[n, c, 0, ih, iw] = sum over (i, j, oh, ow) with ih = oh*sh - pt + i*dh, iw = ow*sw - pl +
    j*dw of w3[c, 0, i*KW + j] * go4[n, c, 0, oh*OW + ow]``; prange over images. Per image: the
    output gradient as (OH, OW, C); each output position adds its taps, vectors over the channels,
    into a zeroed padded (Hp, Wp, C) gradient (a scatter inside one image: no races); the part
    inside the image is written back to dx5, zeros where no tap reads (a crop or a stride's
    unread edge)."""
    n_img, channels, _, height, width = dx5.shape
    taps = kh * kw
    hp = (oh_size - 1) * sh + (kh - 1) * dh + 1
    wp = (ow_size - 1) * sw + (kw - 1) * dw + 1
    wt = _taps_by_channel(w3)
    rows, cols = _tap_shifts(kh, kw, dh, dw)
    for n in prange(n_img):
        wide_vectors()
        cells = np.empty((oh_size, ow_size, channels), dx5.dtype)
        _planes_to_channels_last(go4[n], cells)
        dxp = np.zeros((hp, wp, channels), dx5.dtype)
        for oh in range(oh_size):
            for ow in range(ow_size):
                g = cells[oh, ow]
                r0, c0 = oh * sh, ow * sw
                for t in range(taps):
                    w = wt[t]
                    d = dxp[r0 + rows[t], c0 + cols[t]]
                    for c in range(channels):
                        d[c] += w[c] * g[c]
        dx4 = dx5[n]
        lo, hi = max(0, -pl), min(width, wp - pl)  # columns a tap reaches (pl < 0: a crop)
        for ih in range(height):
            if ih + pt < 0 or ih + pt >= hp:
                for c in range(channels):
                    dx4[c, 0, ih, :] = 0
                continue
            src = dxp[ih + pt, lo + pl : max(lo, hi) + pl]  # a slice: see _stage_channels_last
            for c in range(channels):
                dst = dx4[c, 0, ih]
                dst[:lo] = 0
                inside = dst[lo : max(lo, hi)]
                for k in range(inside.shape[0]):
                    inside[k] = src[k, c]
                dst[max(lo, hi) :] = 0


def depthwise_backward_weight_loop(x5, go4, gw3, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """``gw3[c, 0, i*KW + j] = sum_{n, oh, ow} go4[n, c, 0, oh*OW + ow] * x5[n, c, 0, oh*sh - pt + i*dh,
    ow*sw - pl + j*dw]``; prange over `parts` contiguous runs of images, each summing its images
    into its own (KH*KW, C) accumulator (vectors over the channels: per tap and output position,
    ``acc[t, c] += g[c] * xp[c]``); the accumulators are then added in part order."""
    n_img, channels, _, height, width = x5.shape
    taps = kh * kw
    hp = (oh_size - 1) * sh + (kh - 1) * dh + 1
    wp = (ow_size - 1) * sw + (kw - 1) * dw + 1
    rows, cols = _tap_shifts(kh, kw, dh, dw)
    sums = np.zeros((parts, taps, channels), x5.dtype)
    for part in prange(parts):
        wide_vectors()
        lo, hi = contiguous_run(n_img, parts, part)
        xp = np.zeros((hp, wp, channels), x5.dtype)  # each image overwrites the same inside
        cells = np.empty((oh_size, ow_size, channels), x5.dtype)
        acc = sums[part]
        for n in range(lo, hi):
            _stage_channels_last(x5[n], xp, pt, pl)
            _planes_to_channels_last(go4[n], cells)
            for t in range(taps):
                a = acc[t]
                for oh in range(oh_size):
                    for ow in range(ow_size):
                        g = cells[oh, ow]
                        x = xp[oh * sh + rows[t], ow * sw + cols[t]]
                        for c in range(channels):
                            a[c] += g[c] * x[c]
    for c in range(channels):
        for t in range(taps):
            total = sums[0, t, c]
            for part in range(1, parts):
                total += sums[part, t, c]
            gw3[c, 0, t] = total


depthwise_forward_core = serial_and_parallel(depthwise_forward_loop, nogil=True)
depthwise_backward_input_core = serial_and_parallel(depthwise_backward_input_loop, nogil=True)
depthwise_backward_weight_core = serial_and_parallel(depthwise_backward_weight_loop, nogil=True)
