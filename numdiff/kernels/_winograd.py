"""Winograd F(2x2, 3x3) cores for stride-1, undilated 3x3 convolutions (CPU, Numba + BLAS).

:mod:`numdiff.kernels.conv` validates the arguments, decides when these run (see its docstring
for the rule and the measurements) and calls them with the same array arguments as the im2col
cores of :mod:`numdiff.kernels._conv_cores`; only the sizes after the arrays differ.

Method (Lavin and Gray's minimal filtering). The output is cut into 2x2 tiles; tile (a, b) of
one image reads the 4x4 input patch ``d`` from row ``2a - pt``, column ``2b - pl`` (zero outside
the image), and with the 1-D transforms

    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]    (4x4, input)
    G   = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]      (4x3, filter)
    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]                                 (2x4, output)

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
several whole images to a block (conv.py's ``_winograd_blocks`` chooses). Per block, transform
the input tiles into ``V`` (16, C, T), run the 16 GEMMs (single-threaded BLAS, as in the im2col
cores), and transform back into the output (or into the thread's weight-gradient accumulator).
Blocks go round-robin to the Numba threads; a block owns its output tiles, so no two threads
write one output element. Extra memory per thread: ``V`` and ``M`` (16 * (C + Co) * T elements,
T = rows * images * (tiles_w + 1) the tiles of a block with their spare columns, sized by
``conv.WINOGRAD_BLOCK_ELEMENTS`` to stay in L2), a staging strip of 2*(rows + 1) padded rows
of 2T/rows elements and the row transforms (8*(rows + 1)*T/rows), and for the weight gradient
one (G, 16, C, Co) accumulator.

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
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

# Geometry tuple shared by the cores: (pt, pl, oh_size, ow_size, images, rows, parts), where
# (oh_size, ow_size) is the forward output's size (what forward writes, what the input gradient
# reads), and a block is `rows` tile rows of `images` images of what the core writes; for
# backward_input, pt/pl are already 2 - pad.


@njit(cache=True, nogil=True)
def filter_transform(w3, swap, u):
    """``u[g, xi] = (G f G^T)[xi]`` for every 3x3 filter f of ``w3`` (G, Cog, Cg*9).

    swap False: u (G, 16, Cog, Cg) and f = w[co, c]; swap True (the input gradient's filters):
    u (G, 16, Cg, Cog) and f = w[co, c] rotated by 180 degrees.
    """
    groups, cog = w3.shape[0], w3.shape[1]
    cg = w3.shape[2] // 9
    f = np.empty(9)
    t = np.empty(12)
    for g in range(groups):
        for co in range(cog):
            for c in range(cg):
                for q in range(9):
                    f[q] = w3[g, co, c * 9 + (8 - q if swap else q)]
                # t = G f (4x3)
                for j in range(3):
                    f0, f1, f2 = f[j], f[3 + j], f[6 + j]
                    t[j] = f0
                    t[3 + j] = 0.5 * (f0 + f1 + f2)
                    t[6 + j] = 0.5 * (f0 - f1 + f2)
                    t[9 + j] = f2
                # u = t G^T (4x4)
                for k in range(4):
                    t0, t1, t2 = t[3 * k], t[3 * k + 1], t[3 * k + 2]
                    row = 4 * k
                    a, b = (c, co) if swap else (co, c)
                    u[g, row, a, b] = t0
                    u[g, row + 1, a, b] = 0.5 * (t0 + t1 + t2)
                    u[g, row + 2, a, b] = 0.5 * (t0 - t1 + t2)
                    u[g, row + 3, a, b] = t2


# Layout of a block's transformed tiles: tile b of image n's tile row a is column
# a*lq + n*qc + b of each matrix, qc = tiles_w + 1, lq = images*qc. The spare column
# b = tiles_w makes the distance between vertically adjacent tiles the same as between the
# staged rows they read, so every transform is one flat loop over the whole block (measured:
# per-tile-row loops of 16 tiles spent more time in loop set-up than in arithmetic, and the
# input transform cost 2x the GEMMs). Spare columns cost 1/qc of the GEMM work and are never
# written out.
#
# The helpers take flat arrays and element offsets rather than views: a view costs
# reference-count updates, and two threads updating the count of one shared buffer slowed the
# parallel cores down.


@njit(cache=True, nogil=True, inline="always")
def _stage_rows(src, plane0, height, width, top, count, left, pw, stage, half, ld, offset):
    """Rows ``top .. top + count - 1`` of the plane at ``src[plane0:]`` (H, W), columns
    ``left .. left + pw - 1``, zero outside the image: row ``top + i`` goes to
    ``stage[(i % 2)*half + (i // 2)*ld + offset:]`` (even and odd rows apart; staged rows are
    ``ld`` long, holding ``ld // pw`` images side by side)."""
    lo = min(max(-left, 0), pw)
    hi = max(min(width - left, pw), lo)
    for i in range(count):
        d0 = (i % 2) * half + (i // 2) * ld + offset
        ih = top + i
        if ih < 0 or ih >= height:
            for p in range(pw):
                stage[d0 + p] = 0
            continue
        s0 = plane0 + ih * width + left
        for p in range(lo):
            stage[d0 + p] = 0
        for p in range(lo, hi):
            stage[np.uint64(d0 + p)] = src[np.uint64(s0 + p)]
        for p in range(hi, pw):
            stage[d0 + p] = 0


@njit(cache=True, nogil=True, inline="always")
def _horizontal(stage, s0, h, h0, hsize, count):
    """``h[h0 + j*hsize + i] = (e B)[j]`` with ``e = stage[s0 + 2i : s0 + 2i + 4]``, i < count."""
    one, two, three = np.uint64(1), np.uint64(2), np.uint64(3)
    d0, d1, d2, d3 = (
        np.uint64(h0),
        np.uint64(h0 + hsize),
        np.uint64(h0 + 2 * hsize),
        np.uint64(h0 + 3 * hsize),
    )
    for ii in range(count):
        i = np.uint64(ii)
        p = np.uint64(s0) + two * i
        e0, e1, e2, e3 = stage[p], stage[p + one], stage[p + two], stage[p + three]
        h[d0 + i], h[d1 + i], h[d2 + i], h[d3 + i] = e0 - e2, e1 + e2, e2 - e1, e1 - e3


@njit(cache=True, nogil=True, inline="always")
def _vertical(h, even, odd, qc, dst, o, plane, count):
    """``dst[o + 4k*plane + t] = (B^T d)[k]`` for t < count, where the column's four rows are
    ``h[even + t], h[odd + t], h[even + t + qc], h[odd + t + qc]``."""
    e0, e1, q = np.uint64(even), np.uint64(odd), np.uint64(qc)
    o0, o1, o2, o3 = (
        np.uint64(o),
        np.uint64(o + 4 * plane),
        np.uint64(o + 8 * plane),
        np.uint64(o + 12 * plane),
    )
    for tt in range(count):
        t = np.uint64(tt)
        d0, d1, d2, d3 = h[e0 + t], h[e1 + t], h[e0 + t + q], h[e1 + t + q]
        dst[o0 + t], dst[o1 + t], dst[o2 + t], dst[o3 + t] = d0 - d2, d1 + d2, d2 - d1, d1 - d3


@njit(cache=True, nogil=True)
def input_tiles(src, plane0, image_step, images, height, width, top, left, rows, qc, stage, half, h, dst, o, plane):
    """``dst[o + xi*plane + a*lq + n*qc + b] = (B^T d B)[xi]``, lq = images*qc, for the tiles
    (a, b), a < rows, b < qc, of one channel of images n < `images`: tile (a, b) of image n reads
    rows ``top + 2a ..`` and columns ``left + 2b ..`` (4x4) of the plane at
    ``src[plane0 + n*image_step:]`` (H, W), zero outside the image; b = qc - 1 is the spare
    column. The images' rows are staged zero-padded and side by side (``stage``: two halves of
    ``half`` >= (rows + 1)*2lq + 2 elements), so that the transforms along rows into ``h``
    (8*(rows + 1)*lq) and then along columns into ``dst`` each run one loop over all of them."""
    pw = 2 * qc
    lq = images * qc
    hsize = (rows + 1) * lq
    for n in range(images):
        _stage_rows(src, plane0 + n * image_step, height, width, top, 2 * rows + 2, left, pw, stage, half, 2 * lq, n * pw)
    # The last pair of a row reads two elements past it (the next image or row, or the half's
    # 2 spare): only the spare column sees them.
    _horizontal(stage, 0, h, 0, hsize, hsize)
    _horizontal(stage, half, h, 4 * hsize, hsize, hsize)
    for j in range(4):
        _vertical(h, j * hsize, (4 + j) * hsize, lq, dst, o + j * plane, plane, rows * lq)


@njit(cache=True, nogil=True, inline="always")
def _untransform(mf, o, plane):
    """``A^T M A`` (2x2) of the tile whose 16 transformed values are ``mf[o + xi*plane]``."""
    m00, m01, m02, m03 = mf[o], mf[o + plane], mf[o + np.uint64(2) * plane], mf[o + np.uint64(3) * plane]
    m10, m11 = mf[o + np.uint64(4) * plane], mf[o + np.uint64(5) * plane]
    m12, m13 = mf[o + np.uint64(6) * plane], mf[o + np.uint64(7) * plane]
    m20, m21 = mf[o + np.uint64(8) * plane], mf[o + np.uint64(9) * plane]
    m22, m23 = mf[o + np.uint64(10) * plane], mf[o + np.uint64(11) * plane]
    m30, m31 = mf[o + np.uint64(12) * plane], mf[o + np.uint64(13) * plane]
    m32, m33 = mf[o + np.uint64(14) * plane], mf[o + np.uint64(15) * plane]
    s0, s1, s2, s3 = m00 + m10 + m20, m01 + m11 + m21, m02 + m12 + m22, m03 + m13 + m23
    e0, e1, e2, e3 = m10 - m20 - m30, m11 - m21 - m31, m12 - m22 - m32, m13 - m23 - m33
    return s0 + s1 + s2, s1 - s2 - s3, e0 + e1 + e2, e1 - e2 - e3


@njit(cache=True, nogil=True)
def output_tiles(mf, o, plane, rows, qc, images, shift, stage, dst, o0, image_step, out_rows, ow_size):
    """Write ``A^T M A + shift`` of the tiles (a, b), a < rows, b < qc - 1, of one channel of
    images n < `images`, whose transformed values are ``mf[o + xi*plane + a*lq + n*qc + b]``
    (lq = images*qc), as output rows ``2a, 2a + 1 < out_rows`` of ``ow_size`` elements from
    ``dst[o0 + n*image_step]``. The tiles go first, in one loop, to ``stage`` (4*rows*lq
    elements) as rows of 2lq, then row by row and image by image to dst."""
    pw = 2 * qc
    count = rows * images * qc
    odd = np.uint64(count * 2)
    base, step = np.uint64(o), np.uint64(plane)
    one, two = np.uint64(1), np.uint64(2)
    for tt in range(count):
        t = np.uint64(tt)
        y00, y01, y10, y11 = _untransform(mf, base + t, step)
        stage[two * t], stage[two * t + one] = y00, y01
        stage[odd + two * t], stage[odd + two * t + one] = y10, y11
    for r in range(min(2 * rows, out_rows)):
        for n in range(images):
            s0 = np.uint64((r % 2) * 2 * count + (r // 2) * images * pw + n * pw)
            d0 = np.uint64(o0 + n * image_step + r * ow_size)
            for pp in range(ow_size):
                p = np.uint64(pp)
                dst[d0 + p] = stage[s0 + p] + shift


@njit(cache=True, nogil=True, inline="always")
def _column(dst, o, step, e, d):
    """``dst[o + k*step] = (A (e, d))[k]`` = (e, e + d, e - d, -d)."""
    dst[o], dst[o + step], dst[o + np.uint64(2) * step], dst[o + np.uint64(3) * step] = e, e + d, e - d, -d


@njit(cache=True, nogil=True)
def grad_tiles(src, plane0, image_step, images, oh_size, ow_size, top, rows, qc, stage, half, dst, o, plane):
    """``dst[o + xi*plane + a*lq + n*qc + b] = (A dy A^T)[xi]`` (lq = images*qc) for the 2x2
    output-gradient tiles (a, b), a < rows, b < qc, of one channel of images n < `images`: rows
    ``top + 2a, top + 2a + 1``, columns ``2b, 2b + 1`` of the plane at
    ``src[plane0 + n*image_step:]`` (OH, OW), zero past its edge (so the spare column
    b = qc - 1 is zero). With (p, q) a row of dy, ``A (p, q) = (p, p + q, p - q, -q)``; the
    rows of A dy are (dy0, dy0 + dy1, dy0 - dy1, -dy1)."""
    pw = 2 * qc
    lq = images * qc
    for n in range(images):
        _stage_rows(src, plane0 + n * image_step, oh_size, ow_size, top, 2 * rows, 0, pw, stage, half, 2 * lq, n * pw)
    count = rows * lq
    hf = np.uint64(half)
    one, two = np.uint64(1), np.uint64(2)
    o0, o1, o2, o3 = np.uint64(o), np.uint64(o + plane), np.uint64(o + 2 * plane), np.uint64(o + 3 * plane)
    p4 = np.uint64(4 * plane)
    # One loop per column j of A dy A^T (four output streams each, like _vertical).
    for tt in range(count):
        t = np.uint64(tt)
        e, d = stage[two * t], stage[hf + two * t]
        _column(dst, o0 + t, p4, e, d)
    for tt in range(count):
        t = np.uint64(tt)
        e = stage[two * t] + stage[two * t + one]
        d = stage[hf + two * t] + stage[hf + two * t + one]
        _column(dst, o1 + t, p4, e, d)
    for tt in range(count):
        t = np.uint64(tt)
        e = stage[two * t] - stage[two * t + one]
        d = stage[hf + two * t] - stage[hf + two * t + one]
        _column(dst, o2 + t, p4, e, d)
    for tt in range(count):
        t = np.uint64(tt)
        e, d = -stage[two * t + one], -stage[hf + two * t + one]
        _column(dst, o3 + t, p4, e, d)


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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def weight_from_transformed(acc, gw3):
    """``gw3[g, co, c*9:(c+1)*9] = G^T M G`` with ``M[xi] = sum_t acc[t, g, xi, c, co]``."""
    parts, groups, _, cg, cog = acc.shape
    mm = np.empty(16)
    h = np.empty(12)
    for g in range(groups):
        for co in range(cog):
            for c in range(cg):
                for xi in range(16):
                    total = acc[0, g, xi, c, co]
                    for t in range(1, parts):
                        total += acc[t, g, xi, c, co]
                    mm[xi] = total
                # h = G^T M (3x4): rows (m0 + (m1 + m2)/2, (m1 - m2)/2, (m1 + m2)/2 + m3)
                for j in range(4):
                    m0, m1, m2, m3 = mm[j], mm[4 + j], mm[8 + j], mm[12 + j]
                    h[j] = m0 + 0.5 * (m1 + m2)
                    h[4 + j] = 0.5 * (m1 - m2)
                    h[8 + j] = 0.5 * (m1 + m2) + m3
                for i in range(3):
                    h0, h1, h2, h3 = h[4 * i], h[4 * i + 1], h[4 * i + 2], h[4 * i + 3]
                    base = c * 9 + 3 * i
                    gw3[g, co, base] = h0 + 0.5 * (h1 + h2)
                    gw3[g, co, base + 1] = 0.5 * (h1 - h2)
                    gw3[g, co, base + 2] = 0.5 * (h1 + h2) + h3


# Each core as a serial and a parallel build (numdiff.kernels._parallel): the caller picks by work.
winograd_forward_core = serial_and_parallel(winograd_forward_core, nogil=True)
winograd_backward_input_core = serial_and_parallel(winograd_backward_input_core, nogil=True)
winograd_backward_weight_core = serial_and_parallel(winograd_backward_weight_core, nogil=True)
