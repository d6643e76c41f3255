"""Convolution cores for small outputs: several images' patches side by side in one GEMM.

The im2col cores (numdiff.kernels._conv_cores) run one GEMM per image (or row tile), with as
many columns as the image has output positions. Where an image has few (a strided 4x4
convolution down to 4x4 or 1x1, a DCGAN generator's first transposed convolution from 1x1), those
GEMMs are a few columns wide and OpenBLAS runs them at a fraction of its rate (the 128 -> 1
4x4 convolution to 1x1: a 1 x 2048 x 1 product, 4.5 us of call for 2048 multiply-adds), and the
gather's loop nest runs its innermost loop a handful of times per tap. Here a work item is a
block of ``images`` images of one group; with ``P = OH*OW`` and ``K = Cg*KH*KW``:

* forward:          ``prod (Cog, images*P) = W_g @ col (K, images*P)``, then copied into out
  with the bias added;
* backward_input:   ``dcol (K, images*P) = W_g.T @ dout (Cog, images*P)``, then per image a
  scatter-add into a zero-padded block and its in-image part written into grad_in;
* backward_weight:  ``dW_g += dout @ colT`` into a per-thread (Cog, K) accumulator, with the
  patches gathered transposed, ``colT (images*P, K)``: the product's rows run along K, the long
  side, and need no transposing copy; on the BLAS route with rows of :data:`PHASE_MIN_RUN` or
  more, gathered as the forward's ``col`` and multiplied as ``dout @ col.T`` by BLAS.

``dout`` is the output gradient of the block's images copied side by side. Where output rows
are at least :data:`PHASE_MIN_RUN` long, the forward and input gradient move one image's patches
as unit-stride runs of its zero-padded copy split into column phases
(numdiff.kernels._im2col.stage_phases, :func:`gather_phases`), and so does the weight gradient
on the BLAS route; shorter rows, and the weight gradient's transposed gather, go through a table of offsets into the plain zero-padded copy
(numdiff.kernels._im2col.stage_rows), one flat loop over ``K*P`` whatever the geometry, made once
a call. Extra memory per thread: the column block (at most ``routing.TILE_ELEMENTS`` elements,
or K*P for one image), a (Cog, images*P) block, one zero-padded image; for the weight gradient
one weight-sized accumulator. Parallelism: items (image block, group) go round-robin to the
Numba threads, each running its products on its own (numdiff.kernels._conv_products, which
the per-image cores share; ``loops``, the last argument, picks its route: numdiff.kernels._conv_route);
blocks are sized so every thread gets one.
Which convolutions come here, and the measurements: :func:`numdiff.kernels._conv_routing.batched_images`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._conv_products import product
from numdiff.kernels._im2col import phase_width, stage_phases, stage_rows, unstage_add, unstage_phases_add
from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

PHASE_MIN_RUN = 8
"""Shortest output row (OW) for which the forward and input gradient gather or scatter patches
as unit-stride runs of a phase-split block (:func:`gather_phases`) instead of through
:func:`tap_offsets`'s table. Measured (one thread, float32, thread CPU time, load 13, forward,
table -> runs): dcgan's 32 x 32->64 4x4 s2 16x16 -> 8x8 1.33-1.38 -> 1.11-1.24 ms (torch 0.62),
32 x 3->32 32x32 -> 16x16 0.35 -> 0.26-0.28; but with OW 4 (32 x 64->128 8x8 -> 4x4) 0.92-0.98 ->
1.23-1.30, and OW 1 (128->1 4x4 -> 1x1) 0.11 -> 0.42: short runs pay the loop nest per tap and row."""

# Sizes shared by the cores: (kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts)


@njit(cache=True, nogil=True, inline="always")
def _block_size(kh, kw, sh, sw, dh, dw, oh_size, ow_size):
    """(rows, columns) of the zero-padded copy of an image that every tap reads from."""
    return (oh_size - 1) * sh + (kh - 1) * dh + 1, (ow_size - 1) * sw + (kw - 1) * dw + 1


@njit(cache=True, nogil=True, inline="always")
def _phase_run(c, i, j, oh, cg, sh, sw, dh, dw, block_h, wq):
    """Where in a phase-split block (numdiff.kernels._im2col.stage_phases) the unit-stride run of
    tap (i, j) of channel c along output row oh starts."""
    return ((((j * dw) % sw) * cg + c) * block_h + oh * sh + i * dh) * wq + (j * dw) // sw


@by_address
@njit(cache=True, nogil=True)
def gather_phases(stage, cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size, block_h, block_w, col, column0):
    """``col[r, column0 + oh*OW + ow]`` = the input under tap (i, j) of channel c for output (oh, ow),
    ``r = (c*KH + i)*KW + j``, read from one image's phase-split block ``stage``. Loop nest: c, i,
    j, oh, then a unit-stride copy of OW elements (no index table, no bounds test)."""
    wq = phase_width(block_w, sw)
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                row = col[(c * kh + i) * kw + j]
                for oh in range(oh_size):
                    s0 = _phase_run(c, i, j, oh, cg, sh, sw, dh, dw, block_h, wq)
                    d0 = column0 + oh * ow_size
                    for ow in range(ow_size):
                        row[np.uint64(d0 + ow)] = stage[np.uint64(s0 + ow)]


@by_address
@njit(cache=True, nogil=True)
def scatter_phases_add(dcol, column0, cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size, block_h, block_w, stage):
    """The adjoint of :func:`gather_phases`: add ``dcol[r, column0 + oh*OW + ow]`` into one
    image's phase-split block ``stage`` where the gather read it."""
    wq = phase_width(block_w, sw)
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                row = dcol[(c * kh + i) * kw + j]
                for oh in range(oh_size):
                    d0 = _phase_run(c, i, j, oh, cg, sh, sw, dh, dw, block_h, wq)
                    s0 = column0 + oh * ow_size
                    for ow in range(ow_size):
                        stage[np.uint64(d0 + ow)] += row[np.uint64(s0 + ow)]


@njit(cache=True, nogil=True, inline="always")
def _stage_size(cg, block_h, block_w, sw):
    """Elements of a staging buffer that holds an image's zero-padded block either way: plain
    (numdiff.kernels._im2col.stage_rows) or split into its column phases (stage_phases)."""
    return max(cg * block_h * block_w, sw * cg * block_h * phase_width(block_w, sw))


@by_address
@njit(cache=True, nogil=True)
def _gather_plan(cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size):
    """(phased, table): whether the patches move as unit-stride runs of a phase-split block
    (output rows of at least PHASE_MIN_RUN), else :func:`tap_offsets`'s table (empty if phased)."""
    if ow_size >= PHASE_MIN_RUN:
        return True, np.empty(0, np.int64)
    return False, tap_offsets(cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size)


@by_address
@njit(cache=True, nogil=True)
def tap_offsets(cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size):
    """``table[r*P + p]``: where in an image's zero-padded copy (Cg, BH, BW) column p of im2col row
    ``r = (c*KH + i)*KW + j`` reads, for output position ``p = oh*OW + ow``."""
    block_h, block_w = _block_size(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    positions = oh_size * ow_size
    table = np.empty(cg * kh * kw * positions, np.int64)
    q = 0
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                for oh in range(oh_size):
                    base = (c * block_h + oh * sh + i * dh) * block_w + j * dw
                    for ow in range(ow_size):
                        table[q] = base + ow * sw
                        q += 1
    return table


# Shared by two cores, so called by address (numdiff.kernels._kernel_address): inline, each core's
# build compiled a copy of its own.


@by_address
@njit(cache=True, nogil=True)
def gather_images(go4, n0, m, g, dout):
    """``dout[co, b*P + p] = go4[n0 + b, g, co, p]``: the output gradient of images n0..n0+m-1 side by side."""
    positions = go4.shape[3]
    for b in range(m):
        for co in range(go4.shape[2]):
            for p in range(positions):
                dout[co, b * positions + p] = go4[n0 + b, g, co, p]


def batched_forward_core(
    x5, w3, bias, has_bias, out4, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts, loops
):
    n_img, groups, cg, height, width = x5.shape
    cog, k = w3.shape[1], w3.shape[2]
    positions = oh_size * ow_size
    block_h, block_w = _block_size(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    phased, table = _gather_plan(cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    blocks = (n_img + images - 1) // images
    items = blocks * groups
    colbuf = np.empty((parts, k * images * positions), x5.dtype)
    prodbuf = np.empty((parts, cog * images * positions), x5.dtype)
    stagebuf = np.empty((parts, _stage_size(cg, block_h, block_w, sw)), x5.dtype)
    for t in prange(parts):
        stage = stagebuf[t]
        for item in range(t, items, parts):
            n0 = (item // groups) * images
            g = item % groups
            m = min(n_img, n0 + images) - n0
            cols = m * positions
            col = colbuf[t, : k * cols].reshape((k, cols))
            for b in range(m):
                if phased:
                    stage_phases(x5[n0 + b, g], -pt, pl, block_h, block_w, sw, stage)
                    gather_phases(stage, cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size, block_h, block_w, col, b * positions)
                    continue
                stage_rows(x5[n0 + b, g], -pt, pl, block_h, block_w, stage)
                for r in range(k):
                    for p in range(positions):
                        col[r, b * positions + p] = stage[table[r * positions + p]]
            prod = prodbuf[t, : cog * cols].reshape((cog, cols))
            product(loops, False, False, w3[g], col, 0.0, prod)
            for b in range(m):
                for co in range(cog):
                    shift = bias[g * cog + co] if has_bias else 0.0
                    for p in range(positions):
                        out4[n0 + b, g, co, p] = prod[co, b * positions + p] + shift


def batched_backward_input_core(
    go4, w3, dx5, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts, loops
):
    n_img, groups, cg, height, width = dx5.shape
    cog, k = w3.shape[1], w3.shape[2]
    positions = oh_size * ow_size
    block_h, block_w = _block_size(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    phased, table = _gather_plan(cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    blocks = (n_img + images - 1) // images
    items = blocks * groups
    colbuf = np.empty((parts, k * images * positions), dx5.dtype)
    doutbuf = np.empty((parts, cog * images * positions), dx5.dtype)
    stagebuf = np.empty((parts, _stage_size(cg, block_h, block_w, sw)), dx5.dtype)
    for t in prange(parts):
        stage = stagebuf[t]
        for item in range(t, items, parts):
            n0 = (item // groups) * images
            g = item % groups
            m = min(n_img, n0 + images) - n0
            cols = m * positions
            dout = doutbuf[t, : cog * cols].reshape((cog, cols))
            gather_images(go4, n0, m, g, dout)
            dcol = colbuf[t, : k * cols].reshape((k, cols))
            product(loops, True, False, w3[g], dout, 0.0, dcol)
            for b in range(m):
                stage[:] = 0
                dxg = dx5[n0 + b, g]
                dxg[:] = 0
                if phased:
                    scatter_phases_add(dcol, b * positions, cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size, block_h, block_w, stage)
                    unstage_phases_add(stage, -pt, pl, block_h, block_w, sw, dxg)
                    continue
                for r in range(k):
                    for p in range(positions):
                        stage[table[r * positions + p]] += dcol[r, b * positions + p]
                unstage_add(stage, 0, cg, -pt, pl, block_h, block_w, dxg)


def batched_backward_weight_core(
    x5, go4, gw3, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts, loops
):
    n_img, groups, cg, height, width = x5.shape
    cog, k = gw3.shape[1], gw3.shape[2]
    positions = oh_size * ow_size
    block_h, block_w = _block_size(kh, kw, sh, sw, dh, dw, oh_size, ow_size)
    # Rows of PHASE_MIN_RUN or more on the BLAS route: the patches move as runs of a phase-split
    # block into col (K, T), as the forward's, and BLAS reads it transposed, dout (Cog, T) @ col.T
    # (one thread, float32, load 17, table -> runs, ms: dcgan's 32x32->64 16x16 k4 s2 1.78-1.99 ->
    # 1.76-1.81, 32x64->32 16x16 2.98-3.18 -> 2.81-3.24, 32x3->32 32x32 0.70-0.92 -> 0.68-0.77, 8x16->32
    # 24x24 k5 s2 0.61 -> 0.54-0.69). The loops route would copy col.T into scratch first (measured
    # 3-4x slower), so it and shorter rows gather transposed through the table, one row of K per
    # output position, and run dout @ colT (T, K) with long rows of K. Both accumulate in gw3's layout.
    phased = ow_size >= PHASE_MIN_RUN and (loops is None or not loops)
    table = np.empty((0, k), np.int64)
    if not phased:
        table = np.ascontiguousarray(tap_offsets(cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size).reshape((k, positions)).T)
    blocks = (n_img + images - 1) // images
    items = blocks * groups
    colbuf = np.empty((parts, k * images * positions), x5.dtype)
    doutbuf = np.empty((parts, cog * images * positions), x5.dtype)
    stagebuf = np.empty((parts, _stage_size(cg, block_h, block_w, sw)), x5.dtype)
    acc = np.zeros((parts, groups, cog, k), x5.dtype)
    for t in prange(parts):
        stage = stagebuf[t]
        for item in range(t, items, parts):
            n0 = (item // groups) * images
            g = item % groups
            m = min(n_img, n0 + images) - n0
            cols = m * positions
            col = colbuf[t, : k * cols].reshape((k, cols))
            col_t = colbuf[t, : cols * k].reshape((cols, k))
            dout = doutbuf[t, : cog * cols].reshape((cog, cols))
            gather_images(go4, n0, m, g, dout)
            for b in range(m):
                if phased:
                    stage_phases(x5[n0 + b, g], -pt, pl, block_h, block_w, sw, stage)
                    gather_phases(stage, cg, kh, kw, sh, sw, dh, dw, oh_size, ow_size, block_h, block_w, col, b * positions)
                    continue
                stage_rows(x5[n0 + b, g], -pt, pl, block_h, block_w, stage)
                for p in range(positions):
                    row = col_t[b * positions + p]
                    taps = table[p]
                    for r in range(k):
                        row[r] = stage[taps[r]]
            if phased:
                product(loops, False, True, dout, col, 1.0, acc[t, g])
            else:
                product(loops, False, False, dout, col_t, 1.0, acc[t, g])
    # Element by element, as in _conv_cores (no array-to-slice assignment to compile).
    for g in range(groups):
        for co in range(cog):
            for q in range(k):
                total = acc[0, g, co, q]
                for t in range(1, parts):
                    total += acc[t, g, co, q]
                gw3[g, co, q] = total


# Each core as a serial and a parallel build (numdiff.kernels._parallel): the caller picks by work.
batched_forward_core = serial_and_parallel(batched_forward_core, nogil=True)
batched_backward_input_core = serial_and_parallel(batched_backward_input_core, nogil=True)
batched_backward_weight_core = serial_and_parallel(batched_backward_weight_core, nogil=True)
