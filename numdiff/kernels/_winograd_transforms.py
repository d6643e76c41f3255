"""The transforms of the Winograd F(2x2, 3x3) cores (numdiff.kernels._winograd, method there):
between 3x3 filters, 4x4 input tiles, 2x2 output (or output-gradient) tiles and the 4x4
transformed domain, with the 1-D transforms

    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]    (4x4, input)
    G   = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]      (4x3, filter)
    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]                                 (2x4, output)

* :func:`filter_transform`: ``G f G^T`` of every filter (of the flipped filters for the input
  gradient);
* :func:`input_tiles`: ``B^T d B`` of a block's 4x4 input tiles, one channel;
* :func:`output_tiles`: ``A^T M A`` (plus the bias) written out as a block's 2x2 output tiles;
* :func:`grad_tiles`: ``A dy A^T`` of a block's 2x2 output-gradient tiles (the weight gradient);
* :func:`weight_from_transformed`: ``G^T M G``, the weight gradient from the threads'
  transformed sums.

input_tiles, output_tiles and grad_tiles each run over one channel of a whole block (the layout
below), in scratch memory of the calling thread's; filter_transform and weight_from_transformed
run once a call, over all filters. The cores call them around their GEMMs.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._self_healing_cache import njit


@by_address
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


@by_address
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


@by_address
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


@by_address
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


@by_address
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

