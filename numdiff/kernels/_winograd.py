"""Winograd F(2x2, 3x3) cores for stride-1, undilated 3x3 convolutions (CPU, Numba + BLAS).

:mod:`numdiff.kernels.conv` validates the arguments, decides when these run (the rule and
its measurements: numdiff.kernels._conv_routing) and calls them with the same array arguments
as the im2col cores of :mod:`numdiff.kernels._conv_cores`; only the sizes after the arrays
differ.

Method (Lavin and Gray's minimal filtering). The output is cut into 2x2 tiles; tile (a, b) of
one image reads the 4x4 input patch ``d`` from row ``2a - pt``, column ``2b - pl`` (zero outside
the image), and with the 1-D transforms B^T (4x4, input), G (4x3, filter) and A^T (2x4, output)
(written out in :mod:`numdiff.kernels._winograd_transforms`, beside the loops that apply them)
the tile's output is ``A^T [sum_c (G w[co, c] G^T) . (B^T d_c B)] A`` (``.`` elementwise). Per
element xi of the 4x4 transformed domain the channel sum is a matrix product, so a block of tiles
costs 16 GEMMs ``M[xi] (Co, T) = U[xi] (Co, C) @ V[xi] (C, T)`` with U the transformed filters and
V the transformed input tiles: 16 multiplies per 4 outputs and input channel against im2col's 36.

* forward: the above; bias added in the output transform.
* backward_input (stride 1): the input gradient is the 3x3 convolution of the output gradient
  with the weights flipped in both spatial axes and their channel axes swapped, padded by
  ``2 - pt`` on top and ``2 - pl`` on the left (negative: a crop), so it is the forward routine
  with the filter transform reading the weights that way.
* backward_weight: F(3x3, 2x2), the transpose of the forward algorithm: with the same input
  tiles ``V``, the output-gradient tile ``dy`` (2x2, zero past the output's edge) transformed as
  ``A dy A^T`` (4x4), 16 GEMMs accumulate ``M[xi] (C, Co) += V[xi] (C, T) @ Y[xi]^T (T, Co)``
  over all tiles, and ``dW[co, c] = G^T M[:, c, co] G`` (3x3) once at the end.

Work items are blocks: ``rows`` tile rows (a tile row is one image's row of 2x2 output tiles)
of ``images`` images, the images side by side: a block's staged input rows hold one padded row
of each image in turn, so every transform is one loop over all the block's tiles, however narrow
the images (measured for 32 images 16->32 8x8: per-image loops made the forward 1.4x slower than
im2col, side by side 0.8x). Large images come one to a block, in chunks of tile rows; small ones
several whole images to a block (``_conv_routing.winograd_blocks`` chooses). Per block, transform
the input tiles into ``V`` (16, C, T), run the 16 GEMMs (single-threaded BLAS, as in the im2col
cores), and transform back into the output (or into the thread's weight-gradient accumulator).
Blocks go round-robin to the Numba threads; a block owns its output tiles, so no two threads
write one output element. Extra memory per thread: ``V`` and ``M`` (16 * (C + Co) * T elements,
T = rows * images * (tiles_w + 1) the tiles of a block with their spare columns, sized by
``_conv_routing.WINOGRAD_BLOCK_ELEMENTS`` to stay in L2), a staging strip of 2*(rows + 1)
padded rows of 2T/rows elements and the row transforms (8*(rows + 1)*T/rows), and for the
weight gradient one (G, 16, C, Co) accumulator.

Accuracy: the transforms add at most 4 terms (with factors 1 and 1/2, exact in binary), so the
rounding error stays within a few ulp of the sum of the absolute values of the products, as for
the direct sum (measured in tests/kernels/test_winograd_kernels.py against float64 NumPy). With
a non-finite input the transformed sums may turn inf into NaN inside the 2x2 output tiles that
read it; the weight gradient mixes all nine taps of a filter, so an inf in x can give NaN in
taps that never read it (im2col keeps those finite).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._blas import gemm
from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._winograd_transforms import (
    filter_transform,
    grad_tiles,
    input_tiles,
    output_tiles,
    weight_from_transformed,
)

# Geometry tuple shared by the cores: (pt, pl, oh_size, ow_size, images, rows, parts), where
# (oh_size, ow_size) is the forward output's size (what forward writes, what the input gradient
# reads), and a block is `rows` tile rows of `images` images of what the core writes; for
# backward_input, pt/pl are already 2 - pad.


@by_address
@njit(cache=True, nogil=True)
def input_block(src, channels, height, width, pt, pl, qc, n0, images, a0, rows, bufs):
    """Transform the input tiles of tile rows a0..a0+rows-1 of images n0..n0+images-1 into the
    buffers' v: channel c's at row c of each matrix, in the column layout of
    :func:`input_tiles`. src is the input (N, channels, H, W) flat, read from (2a - pt, -pl)
    for tile row a of an image."""
    ld, half, v, _, stage, h = bufs
    in_plane = height * width
    vp, vf = v.shape[1] * v.shape[2], v.reshape(-1)
    for c in range(channels):
        plane0 = (n0 * channels + c) * in_plane
        input_tiles(
            src, plane0, channels * in_plane, images, height, width, 2 * a0 - pt, -pl, rows, qc, stage, half, h, vf, c * ld, vp
        )


@by_address
@njit(cache=True, nogil=True)
def conv_block(src, ci, height, width, u, shifts, dst, co, oh_size, ow_size, pt, pl, n0, images, a0, rows, bufs):
    """One work item of the forward routine: tile rows a0..a0+rows-1 of the output of images
    n0..n0+images-1.

    src: the input (N, G, Ci, H, W) flat; dst: the output (N, G, Co, OH, OW) flat;
    u (G, 16, Co, Ci); shifts (G*Co,) added to each output channel; bufs: the thread's
    buffers from :func:`_buffers`, v holding the transformed input and m the products.
    """
    ld, _, v, m, stage, _ = bufs
    groups = u.shape[0]
    qc = (ow_size + 1) // 2 + 1
    out_plane = oh_size * ow_size
    mp, mf = m.shape[1] * m.shape[2], m.reshape(-1)
    input_block(src, groups * ci, height, width, pt, pl, qc, n0, images, a0, rows, bufs)
    count = rows * images * qc
    for g in range(groups):
        for xi in range(16):
            gemm(
                False,
                False,
                1.0,
                u[g, xi],
                v[xi, g * ci : (g + 1) * ci, :count],
                0.0,
                m[xi, g * co : (g + 1) * co, :count],
            )
    image_step = groups * co * out_plane
    for k in range(groups * co):
        o0 = n0 * image_step + k * out_plane + 2 * a0 * ow_size
        output_tiles(mf, k * ld, mp, rows, qc, images, shifts[k], stage, dst, o0, image_step, oh_size - 2 * a0, ow_size)


@by_address
@njit(cache=True, nogil=True)
def _buffers(ci, co, images, rows, tiles_w, like):
    """One thread's buffers for blocks of ``rows`` tile rows of ``images`` images:
    (ld, half, v, m, stage, h) with v (16, >= ci, ld) and m (16, >= co, ld) the transformed
    matrices, ld >= rows*lq (lq = images*qc, the tile columns of a block row), stage
    (2*half) and h the transforms' scratch. The distance between matrices xi and xi + 1 is an
    odd number of cache lines: at a multiple of 4 KiB (64 channels, 112 tiles a block) the 16
    streams of a transform loop fell into one set of the L1 cache and the input transform ran
    6x slower."""
    lq = images * (tiles_w + 1)
    line = max(1, 64 // like.itemsize)
    ld = (((rows * lq + line - 1) // line) | 1) * line
    v = np.empty((16, ci | 1, ld), like.dtype)
    m = np.empty((16, co | 1, ld), like.dtype)
    half = (rows + 1) * 2 * lq + 2
    stage = np.zeros(2 * half, like.dtype)
    h = np.empty(8 * (rows + 1) * lq, like.dtype)
    return ld, half, v, m, stage, h


@njit(cache=True, nogil=True, inline="always")
def _items(n_img, images, tiles_h, rows):
    """How many work items there are when each is `rows` of the tiles_h tile rows of `images`
    of the n_img images (numbered image block by image block, tile rows fastest)."""
    return (n_img + images - 1) // images * ((tiles_h + rows - 1) // rows)


@njit(cache=True, nogil=True, inline="always")
def _block(item, n_img, images, tiles_h, rows):
    """``(n0, nb, a0, ra)``: work item `item` (numbered as in :func:`_items`) is tile rows
    a0..a0+ra-1 of images n0..n0+nb-1 (the last block of each kind may be short)."""
    chunks = (tiles_h + rows - 1) // rows
    n0, a0 = (item // chunks) * images, (item % chunks) * rows
    return n0, min(images, n_img - n0), a0, min(rows, tiles_h - a0)


@njit(cache=True, nogil=True, inline="always")
def conv_blocks(t, parts, src, ci, height, width, u, shifts, dst, co, oh_size, ow_size, pt, pl, n_img, images, rows):
    """Thread t's share of a forward routine (the forward, or the input gradient as one): work
    items t, t + parts, ... of :func:`_items`, each a :func:`conv_block` (arguments as there),
    with buffers of the thread's own."""
    groups = u.shape[0]
    tiles_h = (oh_size + 1) // 2
    bufs = _buffers(groups * ci, groups * co, images, rows, (ow_size + 1) // 2, src)
    for item in range(t, _items(n_img, images, tiles_h, rows), parts):
        n0, nb, a0, ra = _block(item, n_img, images, tiles_h, rows)
        conv_block(src, ci, height, width, u, shifts, dst, co, oh_size, ow_size, pt, pl, n0, nb, a0, ra, bufs)


def winograd_forward_core(x5, w3, bias, has_bias, out4, pt, pl, oh_size, ow_size, images, rows, parts):
    n_img, groups, cg, height, width = x5.shape
    cog = w3.shape[1]
    u = np.empty((groups, 16, cog, cg), x5.dtype)
    filter_transform(w3, False, u)
    shifts = np.zeros(groups * cog, x5.dtype)
    if has_bias:
        for q in range(groups * cog):
            shifts[q] = bias[q]
    src, dst = x5.reshape(-1), out4.reshape(-1)
    for t in prange(parts):
        conv_blocks(t, parts, src, cg, height, width, u, shifts, dst, cog, oh_size, ow_size, pt, pl, n_img, images, rows)


def winograd_backward_input_core(go4, w3, dx5, pt, pl, go_h, go_w, images, rows, parts):
    n_img, groups, cg, height, width = dx5.shape
    cog = w3.shape[1]
    u = np.empty((groups, 16, cg, cog), go4.dtype)
    filter_transform(w3, True, u)
    shifts = np.zeros(groups * cg, go4.dtype)
    src, dst = go4.reshape(-1), dx5.reshape(-1)
    for t in prange(parts):
        conv_blocks(t, parts, src, cog, go_h, go_w, u, shifts, dst, cg, height, width, pt, pl, n_img, images, rows)


@by_address
@njit(cache=True, nogil=True)
def weight_block(src, go, cg, cog, height, width, oh_size, ow_size, pt, pl, n0, images, a0, rows, bufs, acc):
    """One work item of the weight gradient: tile rows a0..a0+rows-1 of images
    n0..n0+images-1 of the output gradient ``go`` (N, G, Co, OH, OW) flat, against the input
    ``src`` (N, G, C, H, W) flat,
    accumulated into ``acc`` (G, 16, C, Co). Buffers as for :func:`conv_block`, the
    transformed output gradient in m's place."""
    ld, half, v, y, stage, _ = bufs
    groups = acc.shape[0]
    qc = (ow_size + 1) // 2 + 1
    out_plane = oh_size * ow_size
    yp, yf = y.shape[1] * y.shape[2], y.reshape(-1)
    input_block(src, groups * cg, height, width, pt, pl, qc, n0, images, a0, rows, bufs)
    image_step = groups * cog * out_plane
    for k in range(groups * cog):
        plane0 = n0 * image_step + k * out_plane
        grad_tiles(go, plane0, image_step, images, oh_size, ow_size, 2 * a0, rows, qc, stage, half, yf, k * ld, yp)
    count = rows * images * qc
    for g in range(groups):
        for xi in range(16):
            gemm(
                False,
                True,
                1.0,
                v[xi, g * cg : (g + 1) * cg, :count],
                y[xi, g * cog : (g + 1) * cog, :count],
                1.0,
                acc[g, xi],
            )


def winograd_backward_weight_core(x5, go4, gw3, pt, pl, oh_size, ow_size, images, rows, parts):
    n_img, groups, cg, height, width = x5.shape
    cog = gw3.shape[1]
    tiles_h = (oh_size + 1) // 2
    items = _items(n_img, images, tiles_h, rows)
    acc = np.zeros((parts, groups, 16, cg, cog), x5.dtype)
    src, go = x5.reshape(-1), go4.reshape(-1)
    for t in prange(parts):
        bufs = _buffers(groups * cg, groups * cog, images, rows, (ow_size + 1) // 2, x5)
        for item in range(t, items, parts):
            n0, nb, a0, ra = _block(item, n_img, images, tiles_h, rows)
            weight_block(src, go, cg, cog, height, width, oh_size, ow_size, pt, pl, n0, nb, a0, ra, bufs, acc[t])
    weight_from_transformed(acc, gw3)



# Each core as a serial and a parallel build (numdiff.kernels._parallel): the caller picks by work.
winograd_forward_core = serial_and_parallel(winograd_forward_core, nogil=True)
winograd_backward_input_core = serial_and_parallel(winograd_backward_input_core, nogil=True)
winograd_backward_weight_core = serial_and_parallel(winograd_backward_weight_core, nogil=True)
