"""Direct depthwise and grouped convolutions (CPU, Numba, no im2col, no GEMM).

A convolution with few input channels per group (``Cg = C/groups``, 1 for a depthwise one) is
a per-group stencil: each output plane sums ``Cg*KH*KW`` shifted, scaled copies of its group's
input planes. im2col turned that into one GEMM per (image, group) only ``Cog`` rows by
``Cg*KH*KW`` deep, which BLAS runs far below its peak, after a column gather as large as the
work itself (measured: a depthwise 3x3 on 32 x 64 x 32x32 took 5.5x PyTorch's forward time).

:mod:`numdiff.kernels.conv` validates the arguments, routes here (the rule and its measurements:
numdiff.kernels._conv_routing.use_grouped_direct) and calls these cores with the same array
arguments as the im2col cores (x5 (N, G, Cg, H, W), w3 (G, Cog, Cg*KH*KW), out4 (N, G, Cog,
OH*OW)); the sizes after them are ``(kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images,
parts)``, `images` the images of a block (_conv_routing.grouped_images).

Staging. A work item is one group and a block of `images` images. Each input channel of the
block is copied once, padded and split into its sh*sw stride phases, every image's phase plane
(``rows x ld``, rows = OH + (KH-1)*dh//sh, ld = OW + (KW-1)*dw//sw) after the previous image's
in the same phase. Then tap (i, j) of every image of the block reads one contiguous run from one
offset, so a tap is one loop over the whole block's outputs (``(images-1)*rows*ld + OH*ld``
positions, the columns past OW and the rows past OH of all but the last image computed and
dropped), which LLVM vectorises. The first version staged one image at a time, per (image,
group) item, and paid two allocations and loops of one small plane per item: a depthwise 3x3 on
32 x 128 x 8x8 at stride 2 took 1.55 ms, 5-6x PyTorch's forward.

Loop nests (taps three to a pass where they are left, a third of the loads and stores of the
run they write):

* forward:          prange over (group, image block); stage the block's Cg input channels; for
  o: ``acc[q] = sum_{c, tap} w * staged[start(c, tap) + q]``; copy the valid positions to out4.
* backward_input:   prange over (group, image block); stage the output gradient planes with the
  same layout (zeros where the forward's positions were dropped, and in front, so a tap can read
  before the first image); for c, stride phase: ``dstaged[p] = sum_{o, tap in phase} w *
  gs_o[p - offset(tap)]``, a gather, so no two taps write one element in a pass; unstage into
  dx5 (the adjoint of staging).
* backward_weight:  prange over groups, each reducing over the whole batch block by block in its
  own order (no races, no per-thread copies of the weight): ``gw[o, c, tap] += sum_q gs_o[q] *
  staged[start(c, tap) + q]``, three dot products a pass sharing the loads of gs_o.

Extra memory per work item: the staged block (``Cg*sh*sw*images*rows*ld`` elements) and one run
per output channel of the group (the forward's accumulator, the gradients' staged planes).

Accuracy: the forward and input gradient add each element's terms in order; the weight
gradient's dot products run over the block in vector lanes, summed block after block.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import wide_vectors

# The weight gradient's dot products may be reordered (vector lanes) and fused into FMAs.
_SUMS = {"reassoc", "contract"}


@njit(cache=True, nogil=True)
def _span(size_out, size_in, stride, pad, offset):
    """``(lo, hi)``: the output positions o with ``0 <= o*stride - pad + offset < size_in``."""
    low_edge = pad - offset
    lo = 0 if low_edge <= 0 else (low_edge + stride - 1) // stride
    high_edge = size_in - 1 + pad - offset
    hi = 0 if high_edge < 0 else min(size_out, high_edge // stride + 1)
    return lo, max(lo, hi)


@njit(cache=True, nogil=True)
def _layout(kh, kw, sh, sw, dh, dw, oh_size, ow_size):
    """``(rows, ld)`` of one image's staged phase plane: enough rows and columns for every tap's
    reads of the image's outputs."""
    return oh_size + (kh - 1) * dh // sh, ow_size + (kw - 1) * dw // sw


@njit(cache=True, nogil=True)
def _tap_offset(i, j, sh, sw, dh, dw, phase_size, ld):
    """Where tap (i, j) starts reading in a channel's staged phase planes (`phase_size` elements
    a phase: a block of images' planes)."""
    phase = ((i * dh) % sh) * sw + (j * dw) % sw
    return phase * phase_size + ((i * dh) // sh) * ld + (j * dw) // sw


@njit(cache=True, nogil=True)
def _stage(xp, staged, base, phase_size, pt, pl, sh, sw, rows, ld):
    """``staged[base + (a*sw + b)*phase_size + r*ld + c] = xp[r*sh + a - pt, c*sw + b - pl]``, zero
    outside the plane: one image's padded input split into its sh*sw stride phases."""
    height, width = xp.shape
    for a in range(sh):
        for b in range(sw):
            c_lo, c_hi = _span(ld, width, sw, pl, b)
            start = base + (a * sw + b) * phase_size
            for r in range(rows):
                row = staged[start + r * ld : start + (r + 1) * ld]
                ih = r * sh + a - pt
                if ih < 0 or ih >= height or c_lo == c_hi:
                    for c in range(ld):
                        row[c] = 0
                    continue
                for c in range(c_lo):
                    row[c] = 0
                inside = row[c_lo:c_hi]
                x_row = xp[ih, c_lo * sw + b - pl : (c_hi - 1) * sw + b - pl + 1 : sw]
                for c in range(c_hi - c_lo):
                    inside[c] = x_row[c]
                for c in range(c_hi, ld):
                    row[c] = 0


@njit(cache=True, nogil=True)
def _unstage(staged, base, phase_size, dxp, pt, pl, sh, sw, rows, ld):
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
            start = base + (a * sw + b) * phase_size
            for r in range(rows):
                ih = r * sh + a - pt
                if ih < 0 or ih >= height:
                    continue
                row = staged[start + r * ld + c_lo : start + r * ld + c_hi]
                dx_row = dxp[ih, c_lo * sw + b - pl : (c_hi - 1) * sw + b - pl + 1 : sw]
                for c in range(c_hi - c_lo):
                    dx_row[c] = row[c]


@njit(cache=True, nogil=True)
def _add_taps(dst, count, src, starts, weights, taps):
    """``dst[q] = sum_{t < taps} weights[t] * src[starts[t] + q]`` for q < count: three taps a pass,
    the remainder in a pass of its own."""
    for q in range(count):
        dst[q] = 0
    t = 0
    while t + 3 <= taps:
        w0, w1, w2 = weights[t], weights[t + 1], weights[t + 2]
        s0, s1, s2 = src[starts[t] :], src[starts[t + 1] :], src[starts[t + 2] :]
        for q in range(count):
            dst[q] += w0 * s0[q] + w1 * s1[q] + w2 * s2[q]
        t += 3
    if taps - t == 2:
        w0, w1, s0, s1 = weights[t], weights[t + 1], src[starts[t] :], src[starts[t + 1] :]
        for q in range(count):
            dst[q] += w0 * s0[q] + w1 * s1[q]
    elif taps - t == 1:
        w0, s0 = weights[t], src[starts[t] :]
        for q in range(count):
            dst[q] += w0 * s0[q]


@njit(cache=True, nogil=True)
def _stage_block(x5, staged, n0, nb, g, c, size, plane, phase_size, pt, pl, sh, sw, rows, ld):
    """Stage channel c of group g for images n0 .. n0+nb-1 at ``staged[c*size:]``, and zero the
    `ld` elements after each phase's last image (where it has no successor), which a tap's run
    reads for dropped positions."""
    for m in range(nb):
        _stage(x5[n0 + m, g, c], staged, c * size + m * plane, phase_size, pt, pl, sh, sw, rows, ld)
    for p in range(sh * sw):
        if nb * plane < phase_size or p == sh * sw - 1:  # else the next phase's first image is there
            tail = c * size + p * phase_size + nb * plane
            staged[tail : tail + ld] = 0


@njit(cache=True, nogil=True)
def _block(item, blocks, n_img, images):
    """``(group, first image, images)`` of work item `item` (group-major, `blocks` a group)."""
    g = item // blocks
    n0 = (item - g * blocks) * images
    return g, n0, min(images, n_img - n0)


def grouped_forward_loop(x5, w3, bias, has_bias, out4, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts):
    """``out4[n, g, o, oh*OW + ow] = bias + sum_{c, i, j} w3[g, o, (c*KH + i)*KW + j] *
    x5[n, g, c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]``; prange over (group, image block)."""
    n_img, groups, cg, height, width = x5.shape
    cog = w3.shape[1]
    rows, ld = _layout(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    plane = rows * ld
    phase_size = images * plane
    size = sh * sw * phase_size + ld  # a tap's run ends at most ld - 1 past its phase
    blocks = (n_img + images - 1) // images
    taps = cg * kh * kw
    starts = np.empty(taps, np.int64)
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                starts[(c * kh + i) * kw + j] = c * size + _tap_offset(i, j, sh, sw, dh, dw, phase_size, ld)
    for item in prange(groups * blocks):
        wide_vectors()
        g, n0, nb = _block(item, blocks, n_img, images)
        staged = np.empty(cg * size, x5.dtype)
        acc = np.empty(phase_size, x5.dtype)
        for c in range(cg):
            _stage_block(x5, staged, n0, nb, g, c, size, plane, phase_size, pt, pl, sh, sw, rows, ld)
        count = (nb - 1) * plane + oh_size * ld
        for o in range(cog):
            _add_taps(acc, count, staged, starts, w3[g, o], taps)
            start = bias[g * cog + o] if has_bias else 0
            for m in range(nb):
                out = out4[n0 + m, g, o]
                for oh in range(oh_size):
                    for ow in range(ow_size):
                        out[oh * ow_size + ow] = acc[m * plane + oh * ld + ow] + start


def grouped_backward_input_loop(go4, w3, dx5, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts):
    """``dx5[n, g, c, ih, iw] = sum over (o, i, j) with ih = oh*sh - pt + i*dh, iw = ow*sw - pl +
    j*dw of w3[g, o, (c*KH + i)*KW + j] * go4[n, g, o, oh*OW + ow]``; prange over (group, image
    block): per stride phase of the staged input, a gather of the staged output gradient."""
    n_img, groups, cg, height, width = dx5.shape
    cog = w3.shape[1]
    rows, ld = _layout(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    plane = rows * ld
    phase_size = images * plane
    phases = sh * sw
    # The gradient runs start after `margin` zeros: a tap's gather reads up to its offset before p.
    margin = ((kh - 1) * dh // sh) * ld + (kw - 1) * dw // sw
    run = margin + phase_size
    blocks = (n_img + images - 1) // images
    # The taps sorted by stride phase, each with where it reads in the staged gradient: tap t of
    # phase p is order[firsts[p] + t], reading at reads[...] (in the run of its output channel).
    order = np.empty(kh * kw, np.int64)
    firsts = np.zeros(phases + 1, np.int64)
    for i in range(kh):
        for j in range(kw):
            firsts[((i * dh) % sh) * sw + (j * dw) % sw + 1] += 1
    for p in range(phases):
        firsts[p + 1] += firsts[p]
    filled = firsts[:phases].copy()
    for i in range(kh):
        for j in range(kw):
            p = ((i * dh) % sh) * sw + (j * dw) % sw
            order[filled[p]] = i * kw + j
            filled[p] += 1
    for item in prange(groups * blocks):
        wide_vectors()
        g, n0, nb = _block(item, blocks, n_img, images)
        gs = np.zeros(cog * run, dx5.dtype)  # the positions the forward dropped stay zero
        for o in range(cog):
            for m in range(nb):
                gp = go4[n0 + m, g, o]
                base = o * run + margin + m * plane
                for oh in range(oh_size):
                    for ow in range(ow_size):
                        gs[base + oh * ld + ow] = gp[oh * ow_size + ow]
        reads = np.empty(cog * kh * kw, np.int64)
        weights = np.empty(cog * kh * kw, dx5.dtype)
        dstaged = np.empty(phases * phase_size, dx5.dtype)
        count = nb * plane
        for c in range(cg):
            for p in range(phases):
                taps = firsts[p + 1] - firsts[p]
                for o in range(cog):
                    for t in range(taps):
                        tap = order[firsts[p] + t]
                        i, j = tap // kw, tap % kw
                        reads[o * taps + t] = o * run + margin - ((i * dh) // sh) * ld - (j * dw) // sw
                        weights[o * taps + t] = w3[g, o, c * kh * kw + tap]
                _add_taps(dstaged[p * phase_size :], count, gs, reads, weights, cog * taps)
            for m in range(nb):
                _unstage(dstaged, m * plane, phase_size, dx5[n0 + m, g, c], pt, pl, sh, sw, rows, ld)


def grouped_backward_weight_loop(x5, go4, gw3, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts):
    """``gw3[g, o, (c*KH + i)*KW + j] = sum_{n, oh, ow} go4[n, g, o, oh*OW + ow] *
    x5[n, g, c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]``; prange over groups, each summing the
    batch itself, block by block (three dot products of flat runs a pass)."""
    n_img, groups, cg, height, width = x5.shape
    cog = go4.shape[2]
    taps = cg * kh * kw
    rows, ld = _layout(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    plane = rows * ld
    phase_size = images * plane
    size = sh * sw * phase_size + ld
    blocks = (n_img + images - 1) // images
    starts = np.empty(taps, np.int64)
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                starts[(c * kh + i) * kw + j] = c * size + _tap_offset(i, j, sh, sw, dh, dw, phase_size, ld)
    for g in prange(groups):
        wide_vectors()
        staged = np.empty(cg * size, x5.dtype)
        gs = np.zeros(cog * phase_size, x5.dtype)  # the positions the forward dropped stay zero
        sums = np.zeros(cog * taps, x5.dtype)
        for block in range(blocks):
            _, n0, nb = _block(g * blocks + block, blocks, n_img, images)
            for c in range(cg):
                _stage_block(x5, staged, n0, nb, g, c, size, plane, phase_size, pt, pl, sh, sw, rows, ld)
            for o in range(cog):
                for m in range(nb):
                    gp = go4[n0 + m, g, o]
                    base = o * phase_size + m * plane
                    for oh in range(oh_size):
                        for ow in range(ow_size):
                            gs[base + oh * ld + ow] = gp[oh * ow_size + ow]
            count = (nb - 1) * plane + oh_size * ld
            for o in range(cog):
                g_run = gs[o * phase_size : o * phase_size + count]
                t = 0
                while t < taps:
                    s0 = staged[starts[t] :]
                    s1 = staged[starts[min(t + 1, taps - 1)] :]
                    s2 = staged[starts[min(t + 2, taps - 1)] :]
                    d0 = d1 = d2 = sums[0] * 0
                    for q in range(count):
                        d0 += g_run[q] * s0[q]
                        d1 += g_run[q] * s1[q]
                        d2 += g_run[q] * s2[q]
                    sums[o * taps + t] += d0
                    if t + 1 < taps:
                        sums[o * taps + t + 1] += d1
                    if t + 2 < taps:
                        sums[o * taps + t + 2] += d2
                    t += 3
        for o in range(cog):
            for t in range(taps):
                gw3[g, o, t] = sums[o * taps + t]


grouped_forward_core = serial_and_parallel(grouped_forward_loop, nogil=True)
grouped_backward_input_core = serial_and_parallel(grouped_backward_input_loop, nogil=True)
grouped_backward_weight_core = serial_and_parallel(grouped_backward_weight_loop, nogil=True, fastmath=_SUMS)
