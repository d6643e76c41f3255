"""Compiled cores of the convolution kernels; :mod:`numdiff.kernels.conv` validates the
arguments, works out the geometry and calls these (see its docstring for the method).

Layouts: ``x5``/``dx5`` (N, G, Cg, H, W), ``w3``/``gw3`` (G, Cog, Cg*KH*KW), ``out4``/``go4``
(N, G, Cog, OH*OW) -- free reshapes of the C-contiguous (N, C, H, W), (Co, Cg, KH, KW) and
(N, Co, OH, OW) arrays.

Numba's disk cache keys a core on this file alone, not on the im2col/col2im helpers it calls:
after changing numdiff/kernels/_im2col.py, edit this file too (or clear __pycache__), or a
process may load cores built with the old helpers (last done when the products moved from BLAS
to numdiff.kernels._conv_products, shared with numdiff.kernels._conv_batched). The same holds
for numdiff/kernels/_conv_products.py.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._conv_products import product
from numdiff.kernels._im2col import col2im_rows_add, im2col_rows, staging_size
from numdiff.kernels._parallel import contiguous_run, serial_and_parallel

# Geometry tuple shared by the cores:
#   (kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, rows_per_tile, pointwise, blocks, parts, loops)
# loops: the products' route, numdiff.kernels._conv_route (True: Numba loops; None: BLAS, the loops left out of the build).


def forward_core(
    x5,
    w3,
    bias,
    has_bias,
    out4,
    kh,
    kw,
    sh,
    sw,
    pt,
    pl,
    dh,
    dw,
    oh_size,
    ow_size,
    rows,
    pointwise,
    blocks,
    parts,
    loops,
):
    n_img, groups, cg, height, width = x5.shape
    k = w3.shape[2]
    colbuf = np.empty((parts, 0 if pointwise else k * rows * ow_size), x5.dtype)
    stage = 0 if pointwise else staging_size(cg, rows, kh, kw, sh, sw, dh, dw, ow_size)
    stagebuf = np.empty((parts, stage), x5.dtype)
    # Each thread takes one contiguous run of the output rows of all (image, group) planes (see
    # contiguous_run), cut into tiles of at most `rows` at plane ends and at the run's end.
    total = n_img * groups * oh_size
    for t in prange(parts):
        r, end = contiguous_run(total, parts, t)
        while r < end:
            n, g = r // (groups * oh_size), (r // oh_size) % groups
            oh0 = r % oh_size
            oh1 = min(oh_size, oh0 + rows, oh0 + end - r)
            r += oh1 - oh0
            p0, p1 = oh0 * ow_size, oh1 * ow_size
            if pointwise:
                col = x5[n, g].reshape((cg, height * width))[:, p0:p1]
            else:
                patches = colbuf[t, : k * (p1 - p0)].reshape((k, p1 - p0))
                im2col_rows(x5[n, g], oh0, oh1, kh, kw, sh, sw, pt, pl, dh, dw, ow_size, patches, stagebuf[t])
                col = patches
            dst = out4[n, g][:, p0:p1]
            product(loops, False, False, w3[g], col, 0.0, dst)
            if has_bias:
                cog = dst.shape[0]
                for co in range(cog):
                    shift = bias[g * cog + co]
                    for p in range(p1 - p0):
                        dst[co, p] += shift


def backward_input_core(
    go4, w3, dx5, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, rows, pointwise, blocks, parts, loops
):
    n_img, groups, cg, height, width = dx5.shape
    taps = kh * kw
    tiles = (oh_size + rows - 1) // rows
    max_block = (cg + blocks - 1) // blocks
    colbuf = np.empty((parts, 0 if pointwise else max_block * taps * rows * ow_size), dx5.dtype)
    stage = 0 if pointwise else staging_size(max_block, rows, kh, kw, sh, sw, dh, dw, ow_size)
    stagebuf = np.empty((parts, stage), dx5.dtype)
    # Each thread takes one contiguous run of the input channels of all (image, group) planes (see
    # contiguous_run), cut at plane ends into blocks of at most max_block channels.
    total = n_img * groups * cg
    for t in prange(parts):
        c, end = contiguous_run(total, parts, t)
        while c < end:
            n, g = c // (groups * cg), (c // cg) % groups
            c0 = c % cg
            c1 = min(cg, c0 + max_block, c0 + end - c)
            c += c1 - c0
            dxg = dx5[n, g]
            w_blk = w3[g][:, c0 * taps : c1 * taps]
            if not pointwise:
                dxg[c0:c1] = 0
            for tile in range(tiles):
                oh0 = tile * rows
                oh1 = min(oh_size, oh0 + rows)
                p0, p1 = oh0 * ow_size, oh1 * ow_size
                dout = go4[n, g][:, p0:p1]
                if pointwise:
                    # col2im is the identity here: write the input gradient in place.
                    product(loops, True, False, w_blk, dout, 0.0, dxg.reshape((cg, height * width))[c0:c1, p0:p1])
                else:
                    dcol = colbuf[t, : (c1 - c0) * taps * (p1 - p0)].reshape(((c1 - c0) * taps, p1 - p0))
                    product(loops, True, False, w_blk, dout, 0.0, dcol)
                    col2im_rows_add(dcol, c0, c1, oh0, oh1, kh, kw, sh, sw, pt, pl, dh, dw, ow_size, dxg, stagebuf[t])


def backward_weight_core(
    x5, go4, gw3, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, rows, pointwise, blocks, parts, loops
):
    n_img, groups, cg, height, width = x5.shape
    k = gw3.shape[2]
    colbuf = np.empty((parts, 0 if pointwise else k * rows * ow_size), x5.dtype)
    stage = 0 if pointwise else staging_size(cg, rows, kh, kw, sh, sw, dh, dw, ow_size)
    stagebuf = np.empty((parts, stage), x5.dtype)
    # Accumulated transposed, (Cg*KH*KW, Cog): col @ dout.T copies the (Cog, T) dout tile into
    # T rows (numdiff.kernels._conv_products), where dout @ col.T would copy the larger (K, T) col.
    acc = np.zeros((parts, gw3.shape[0], gw3.shape[2], gw3.shape[1]), x5.dtype)
    # Contiguous runs of output rows, as in forward_core.
    total = n_img * groups * oh_size
    for t in prange(parts):
        r, end = contiguous_run(total, parts, t)
        while r < end:
            n, g = r // (groups * oh_size), (r // oh_size) % groups
            oh0 = r % oh_size
            oh1 = min(oh_size, oh0 + rows, oh0 + end - r)
            r += oh1 - oh0
            p0, p1 = oh0 * ow_size, oh1 * ow_size
            if pointwise:
                col = x5[n, g].reshape((cg, height * width))[:, p0:p1]
            else:
                patches = colbuf[t, : k * (p1 - p0)].reshape((k, p1 - p0))
                im2col_rows(x5[n, g], oh0, oh1, kh, kw, sh, sw, pt, pl, dh, dw, ow_size, patches, stagebuf[t])
                col = patches
            product(loops, False, True, col, go4[n, g][:, p0:p1], 1.0, acc[t, g])
    # Element by element: an array assigned to a slice makes Numba compile its shape-mismatch
    # message formatting, 2.5 s of a cold start.
    for g in range(gw3.shape[0]):
        for co in range(gw3.shape[1]):
            for q in range(k):
                total = acc[0, g, q, co]
                for t in range(1, parts):
                    total += acc[t, g, q, co]
                gw3[g, co, q] = total


# Each core as a serial and a parallel build (numdiff.kernels._parallel): the caller picks by work.
forward_core = serial_and_parallel(forward_core, nogil=True)
backward_input_core = serial_and_parallel(backward_input_core, nogil=True)
backward_weight_core = serial_and_parallel(backward_weight_core, nogil=True)
