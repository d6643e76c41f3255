"""Direct depthwise and grouped convolutions (CPU, Numba, no im2col, no GEMM).

A convolution with few input channels per group (``Cg = C/groups``, 1 for a depthwise one) is
a per-group stencil: each output plane sums ``Cg*KH*KW`` shifted, scaled copies of its group's
input planes. im2col turned that into one GEMM per (image, group) only ``Cog`` rows by
``Cg*KH*KW`` deep, which BLAS runs far below its peak, after a column gather as large as the
work itself (measured: a depthwise 3x3 on 32 x 64 x 32x32 took 5.5x PyTorch's forward time).

:mod:`numdiff.kernels.conv` validates the arguments, routes here (the rule and its measurements:
numdiff.kernels._conv_routing.use_grouped_direct) and calls these cores with the same array
arguments as the im2col cores (x5 (N, G, Cg, H, W), w3 (G, Cog, Cg*KH*KW), out4 (N, G, Cog,
OH*OW)); the sizes after them are ``(kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts)``.

Loop nests (the innermost loop runs along an output row, which LLVM vectorises: contiguous at
stride 1, a strided load at stride 2; the taps' valid column range is worked out once per tap,
so the row loop has no branch):

* forward:          prange over (image, group); for o, c, tap, output row: ``out_row[ow] +=
  w * x_row[ow*sw + j*dw - pl]``.
* backward_input:   prange over (image, group), so no two threads write one input plane; for o,
  c, tap, output row: ``dx_row[ow*sw + j*dw - pl] += w * dout_row[ow]``.
* backward_weight:  prange over groups, each reducing over the whole batch in its own order (no
  races, no per-thread copies of the weight): for image, o, c, tap, output row: ``acc[tap, ow]
  += dout_row[ow] * x_row[...]``; the (Cog*Cg*KH*KW, OW) accumulator is summed along its rows
  at the end. Accumulating along the row keeps the loop vector-wide without reassociating a
  scalar sum.

Extra memory: none for the forward and input gradient; per group, the weight gradient's row
accumulator (``Cog*Cg*KH*KW*OW`` elements).

Accuracy: the terms of the direct sum, in order along each row; the weight gradient adds each
output column's terms in batch order and then the columns.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import wide_vectors

# The weight gradient's dot products may be reordered (vector lanes) and fused into FMAs.
_SUMS = {"reassoc", "contract"}


@njit(cache=True, nogil=True, inline="always")
def _span(size_out, size_in, stride, pad, offset):
    """``(lo, hi)``: the output positions o with ``0 <= o*stride - pad + offset < size_in``."""
    low_edge = pad - offset
    lo = 0 if low_edge <= 0 else (low_edge + stride - 1) // stride
    high_edge = size_in - 1 + pad - offset
    hi = 0 if high_edge < 0 else min(size_out, high_edge // stride + 1)
    return lo, max(lo, hi)


@njit(cache=True, nogil=True, inline="always")
def _layout(kh, kw, sh, sw, dh, dw, oh_size, ow_size):
    """``(rows, ld)`` of a staged phase plane: enough rows and columns for every tap's reads,
    plus one spare row so that a tap's flat read of ``OH*ld`` elements stays inside it."""
    return oh_size + (kh - 1) * dh // sh + 1, ow_size + (kw - 1) * dw // sw


@njit(cache=True, nogil=True, inline="always")
def _tap_offset(i, j, sh, sw, dh, dw, rows, ld):
    """Where tap (i, j) starts reading in a channel's staged phase planes."""
    phase = ((i * dh) % sh) * sw + (j * dw) % sw
    return (phase * rows + (i * dh) // sh) * ld + (j * dw) // sw


@njit(cache=True, nogil=True, inline="always")
def _stage(xp, staged, pt, pl, sh, sw, rows, ld):
    """``staged[((a*sw + b)*rows + r)*ld + c] = xp[r*sh + a - pt, c*sw + b - pl]``, zero outside
    the plane: the padded input split into its sh*sw stride phases, so that every tap reads one
    contiguous run."""
    height, width = xp.shape
    for a in range(sh):
        for b in range(sw):
            c_lo, c_hi = _span(ld, width, sw, pl, b)
            for r in range(rows):
                row = staged[((a * sw + b) * rows + r) * ld : ((a * sw + b) * rows + r + 1) * ld]
                ih = r * sh + a - pt
                if ih < 0 or ih >= height or c_lo == c_hi:
                    for c in range(ld):
                        row[c] = 0
                    continue
                for c in range(c_lo):
                    row[c] = 0
                x_row = xp[ih, c_lo * sw + b - pl : (c_hi - 1) * sw + b - pl + 1 : sw]
                inside = row[c_lo:c_hi]
                for c in range(c_hi - c_lo):
                    inside[c] = x_row[c]
                for c in range(c_hi, ld):
                    row[c] = 0


@njit(cache=True, nogil=True, inline="always")
def _unstage(staged, dxp, pt, pl, sh, sw, rows, ld):
    """The adjoint of :func:`_stage`: ``dxp[ih, iw]`` = the staged element holding it (zero
    where none does: the forward never read it)."""
    height, width = dxp.shape
    for ih in range(height):
        for iw in range(width):
            dxp[ih, iw] = 0
    for a in range(sh):
        for b in range(sw):
            c_lo, c_hi = _span(ld, width, sw, pl, b)
            if c_lo == c_hi:
                continue
            for r in range(rows):
                ih = r * sh + a - pt
                if ih < 0 or ih >= height:
                    continue
                row = staged[((a * sw + b) * rows + r) * ld + c_lo : ((a * sw + b) * rows + r) * ld + c_hi]
                dx_row = dxp[ih, c_lo * sw + b - pl : (c_hi - 1) * sw + b - pl + 1 : sw]
                for c in range(c_hi - c_lo):
                    dx_row[c] = row[c]


def grouped_forward_loop(x5, w3, bias, has_bias, out4, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """``out4[n, g, o, oh*OW + ow] = bias + sum_{c, i, j} w3[g, o, (c*KH + i)*KW + j] *
    x5[n, g, c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]``; prange over (image, group)."""
    n_img, groups, cg, height, width = x5.shape
    cog = w3.shape[1]
    rows, ld = _layout(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    size = sh * sw * rows * ld
    span = oh_size * ld
    for item in prange(n_img * groups):
        wide_vectors()
        n = item // groups
        g = item - n * groups
        staged = np.empty(cg * size, x5.dtype)
        acc = np.empty(span, x5.dtype)
        for c in range(cg):
            _stage(x5[n, g, c], staged[c * size : (c + 1) * size], pt, pl, sh, sw, rows, ld)
        for o in range(cog):
            for q in range(span):
                acc[q] = 0
            for c in range(cg):
                for i in range(kh):
                    # Three taps a pass where they are left: a third of the loads and stores of acc.
                    for j in range(0, kw - 2, 3):
                        w0, w1, w2 = w3[g, o, (c * kh + i) * kw + j], w3[g, o, (c * kh + i) * kw + j + 1], w3[g, o, (c * kh + i) * kw + j + 2]
                        s0 = staged[c * size + _tap_offset(i, j, sh, sw, dh, dw, rows, ld) :]
                        s1 = staged[c * size + _tap_offset(i, j + 1, sh, sw, dh, dw, rows, ld) :]
                        s2 = staged[c * size + _tap_offset(i, j + 2, sh, sw, dh, dw, rows, ld) :]
                        for q in range(span):
                            acc[q] += w0 * s0[q] + w1 * s1[q] + w2 * s2[q]
                    for j in range(kw - kw % 3, kw):
                        wv = w3[g, o, (c * kh + i) * kw + j]
                        start = c * size + _tap_offset(i, j, sh, sw, dh, dw, rows, ld)
                        src = staged[start : start + span]
                        for q in range(span):
                            acc[q] += wv * src[q]
            plane = out4[n, g, o]
            start = bias[g * cog + o] if has_bias else 0
            for oh in range(oh_size):
                for ow in range(ow_size):
                    plane[oh * ow_size + ow] = acc[oh * ld + ow] + start


def grouped_backward_input_loop(go4, w3, dx5, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """``dx5[n, g, c, ih, iw] = sum over (o, i, j, oh, ow) with ih = oh*sh - pt + i*dh, iw = ow*sw
    - pl + j*dw of w3[g, o, (c*KH + i)*KW + j] * go4[n, g, o, oh*OW + ow]``; prange over (image,
    group), the forward's flat runs with roles swapped, into staged planes then unstaged."""
    n_img, groups, cg, height, width = dx5.shape
    cog = w3.shape[1]
    rows, ld = _layout(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    size = sh * sw * rows * ld
    span = oh_size * ld
    for item in prange(n_img * groups):
        wide_vectors()
        n = item // groups
        g = item - n * groups
        staged = np.zeros(cg * size, dx5.dtype)
        gs = np.zeros(span, dx5.dtype)  # spare columns stay zero: they add nothing
        for o in range(cog):
            gp = go4[n, g, o]
            for oh in range(oh_size):
                for ow in range(ow_size):
                    gs[oh * ld + ow] = gp[oh * ow_size + ow]
            for c in range(cg):
                for i in range(kh):
                    for j in range(kw):
                        wv = w3[g, o, (c * kh + i) * kw + j]
                        start = c * size + _tap_offset(i, j, sh, sw, dh, dw, rows, ld)
                        dst = staged[start : start + span]
                        for q in range(span):
                            dst[q] += wv * gs[q]
        for c in range(cg):
            _unstage(staged[c * size : (c + 1) * size], dx5[n, g, c], pt, pl, sh, sw, rows, ld)


def grouped_backward_weight_loop(x5, go4, gw3, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """``gw3[g, o, (c*KH + i)*KW + j] = sum_{n, oh, ow} go4[n, g, o, oh*OW + ow] *
    x5[n, g, c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]``; prange over groups, each summing the
    batch itself (one dot product of flat runs per image and tap)."""
    n_img, groups, cg, height, width = x5.shape
    cog = go4.shape[2]
    taps = cg * kh * kw
    rows, ld = _layout(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    size = sh * sw * rows * ld
    span = oh_size * ld
    for g in prange(groups):
        wide_vectors()
        staged = np.empty(cg * size, x5.dtype)
        gs = np.zeros(cog * span, x5.dtype)  # spare columns stay zero: they add nothing
        sums = np.zeros(cog * taps, x5.dtype)
        for n in range(n_img):
            for c in range(cg):
                _stage(x5[n, g, c], staged[c * size : (c + 1) * size], pt, pl, sh, sw, rows, ld)
            for o in range(cog):
                gp = go4[n, g, o]
                for oh in range(oh_size):
                    for ow in range(ow_size):
                        gs[o * span + oh * ld + ow] = gp[oh * ow_size + ow]
            for o in range(cog):
                g_run = gs[o * span : (o + 1) * span]
                for c in range(cg):
                    for i in range(kh):
                        for j in range(kw):
                            start = c * size + _tap_offset(i, j, sh, sw, dh, dw, rows, ld)
                            src = staged[start : start + span]
                            total = sums[0] * 0
                            for q in range(span):
                                total += g_run[q] * src[q]
                            sums[o * taps + (c * kh + i) * kw + j] += total
        for o in range(cog):
            for t in range(taps):
                gw3[g, o, t] = sums[o * taps + t]


grouped_forward_core = serial_and_parallel(grouped_forward_loop, nogil=True)
grouped_backward_input_core = serial_and_parallel(grouped_backward_input_loop, nogil=True)
grouped_backward_weight_core = serial_and_parallel(grouped_backward_weight_loop, nogil=True, fastmath=_SUMS)
