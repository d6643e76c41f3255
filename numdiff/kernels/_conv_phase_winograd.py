"""Forward of a stride-2 4x4 convolution as Winograd F(2x2, 2x2) over the input's phases (CPU, Numba + BLAS).

:mod:`numdiff.kernels.conv` validates the arguments, decides when this runs
(numdiff.kernels._conv_routing.use_phase_winograd, with the measurements) and calls it with the
same array arguments as the im2col forward cores; only the sizes after the arrays differ.

Method. Split the zero-padded input into its four phases ``P[c, ri, rj][m, l] = x[c, 2m + ri - pt,
2l + rj - pl]`` and the filter likewise, ``g[co, c, ri, rj][a, b] = w[co, c, 2a + ri, 2b + rj]``:
the stride-2 4x4 convolution is then a stride-1 2x2 convolution from 4C phase channels, every tap
used (no zero-stuffing). That one runs as Winograd F(2x2, 2x2): with the 1-D transforms

    input  B^T = [[1, -1, 0], [0, 1, 0], [0, -1, 1]]   (3 values of a phase row -> 3)
    filter G   = [[1, 0], [1, 1], [0, 1]]                (2 taps -> 3)
    output A^T = [[1, 1, 0], [0, 1, 1]]                  (3 -> 2 outputs)

an output tile of 2x2 reads a 3x3 patch of each phase (a 6x6 patch of the input, from row 4a - pt
and column 4b - pl for tile (a, b)), and per element xi of the 3x3 transformed domain the sum over
phase channels is a matrix product: ``M[xi] (Co, T) = U[xi] (Co, 4C) @ V[xi] (4C, T)``, 9 GEMMs
with 9 multiplies per 4 outputs and phase channel against the direct sum's (and im2col's) 16.

Work items are blocks of ``images`` whole images (T = their tiles); a block transforms its input
into V, runs the 9 GEMMs (single-threaded BLAS, numdiff.kernels._blas), and transforms M back into
the output, adding the bias. Blocks go round-robin to the Numba threads and own their output
images. Extra memory per thread: V and M, ``9 * (4C + Co) * T`` elements (sized by
``_conv_routing.phase_winograd_images`` to stay near L2), and a zero-padded copy of one image's
channel, ``(4*TH + 2) * (4*TW + 2)`` elements (TH, TW: tile rows and columns).

Accuracy: the transforms add at most 3 terms with factors +-1 (exact), so the rounding error stays
within a few ulp of the sum of the absolute values of the products, as for the direct sum
(tests/kernels/test_conv_phase_winograd.py compares against float64). With a non-finite input
the transformed sums may turn inf into NaN inside the 2x2 output tiles that read it.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._blas import gemm
from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

# Sizes after the arrays: (pt, pl, oh_size, ow_size, images, parts).


@by_address
@njit(cache=True, nogil=True)
def filter_transform(w3, u):
    """``u[xi, co, (c*2 + ri)*2 + rj] = (G g G^T)[xi]`` for the phase filter g = w[co, c, ri::2, rj::2]
    (w3: 1, Co, C*16, the filter flat; u: 9, Co, 4C)."""
    c_out, c_in = w3.shape[1], w3.shape[2] // 16
    for co in range(c_out):
        for c in range(c_in):
            for ri in range(2):
                for rj in range(2):
                    r = (c * 2 + ri) * 2 + rj
                    at = c * 16 + ri * 4 + rj
                    g00, g01 = w3[0, co, at], w3[0, co, at + 2]
                    g10, g11 = w3[0, co, at + 8], w3[0, co, at + 10]
                    t00, t01 = g00, g01  # G along the rows: g0, g0 + g1, g1
                    t10, t11 = g00 + g10, g01 + g11
                    t20, t21 = g10, g11
                    u[0, co, r], u[1, co, r], u[2, co, r] = t00, t00 + t01, t01
                    u[3, co, r], u[4, co, r], u[5, co, r] = t10, t10 + t11, t11
                    u[6, co, r], u[7, co, r], u[8, co, r] = t20, t20 + t21, t21


@by_address
@njit(cache=True, nogil=True)
def input_block(x5, n0, nb, pt, pl, tiles_h, tiles_w, row, s, v):
    """``v[xi, (c*2 + ri)*2 + rj, t] = (B^T d B)[xi]``, d the 3x3 patch of phase (ri, rj) of channel
    c under tile (a, b) of image n0 + k, t = (a*nb + k)*TW + b: a tile row of all the block's images
    is one unit-stride run, so every transform loop runs over nb*TW tiles however small the image.

    row (4*TW + 2) holds one zero-padded input row (its column 4b + 2q + rj is input column
    4b + 2q + rj - pl); ``s[ri, rj, q, m, k*TW + b]`` is phase row m's patch column q for tile
    column b, transformed along the columns (B^T: d0 - d1, d1, d2 - d1), for the row transform."""
    c_in, height, width = x5.shape[2], x5.shape[3], x5.shape[4]
    lane = nb * tiles_w
    # Input columns past the last tile's patch are read by no output: left out.
    cols = min(width, row.shape[0] - pl)
    for c in range(c_in):
        for k in range(nb):
            for padded in range(4 * tiles_h + 2):
                h = padded - pt
                if 0 <= h < height:
                    for w in range(cols):
                        row[w + pl] = x5[n0 + k, 0, c, h, w]
                else:
                    for w in range(cols):
                        row[w + pl] = 0
                ri, m = padded % 2, padded // 2
                for rj in range(2):
                    s0, s1, s2 = s[ri, rj, 0, m], s[ri, rj, 1, m], s[ri, rj, 2, m]
                    for b in range(tiles_w):
                        d0, d1, d2 = row[4 * b + rj], row[4 * b + rj + 2], row[4 * b + rj + 4]
                        s0[k * tiles_w + b] = d0 - d1
                        s1[k * tiles_w + b] = d1
                        s2[k * tiles_w + b] = d2 - d1
        for ri in range(2):
            for rj in range(2):
                r = (c * 2 + ri) * 2 + rj
                for a in range(tiles_h):
                    t0 = a * lane
                    for q in range(3):
                        top, mid, bot = s[ri, rj, q, 2 * a], s[ri, rj, q, 2 * a + 1], s[ri, rj, q, 2 * a + 2]
                        v0, v1, v2 = (
                            v[q, r, t0 : t0 + lane],
                            v[3 + q, r, t0 : t0 + lane],
                            v[6 + q, r, t0 : t0 + lane],
                        )
                        for j in range(lane):
                            v0[j] = top[j] - mid[j]
                            v1[j] = mid[j]
                            v2[j] = bot[j] - mid[j]


@by_address
@njit(cache=True, nogil=True)
def output_block(m, n0, nb, tiles_h, tiles_w, bias, has_bias, out4, oh_size, ow_size):
    """``out[n0 + k, co, 2a + r, 2b + s] = bias[co] + (A^T M A)[r, s]`` for tile (a, b) of image
    n0 + k (column (a*nb + k)*TW + b of M), within the output's edges."""
    c_out = out4.shape[2]
    lane = nb * tiles_w
    for co in range(c_out):
        shift = bias[co] if has_bias else out4.dtype.type(0)
        for a in range(tiles_h):
            oh = 2 * a
            for k in range(nb):
                dst = out4[n0 + k, 0, co]
                t0 = a * lane + k * tiles_w
                for b in range(tiles_w):
                    t = t0 + b
                    m0, m1, m2 = m[0, co, t], m[1, co, t], m[2, co, t]
                    m3, m4, m5 = m[3, co, t], m[4, co, t], m[5, co, t]
                    m6, m7, m8 = m[6, co, t], m[7, co, t], m[8, co, t]
                    s0, s1, s2 = m0 + m3, m1 + m4, m2 + m5  # A^T along the rows: row 0 = m0 + m1
                    s3, s4, s5 = m3 + m6, m4 + m7, m5 + m8  # row 1 = m1 + m2
                    ow = 2 * b
                    dst[oh * ow_size + ow] = shift + (s0 + s1)
                    if ow + 1 < ow_size:
                        dst[oh * ow_size + ow + 1] = shift + (s1 + s2)
                    if oh + 1 < oh_size:
                        dst[(oh + 1) * ow_size + ow] = shift + (s3 + s4)
                        if ow + 1 < ow_size:
                            dst[(oh + 1) * ow_size + ow + 1] = shift + (s4 + s5)


def phase_winograd_forward_core(x5, w3, bias, has_bias, out4, pt, pl, oh_size, ow_size, images, parts):
    n_img, c_in = x5.shape[0], x5.shape[2]
    c_out = w3.shape[1]
    tiles_h, tiles_w = (oh_size + 1) // 2, (ow_size + 1) // 2
    u = np.empty((9, c_out, 4 * c_in), x5.dtype)
    filter_transform(w3, u)
    blocks = (n_img + images - 1) // images
    count = images * tiles_h * tiles_w
    for t in prange(parts):
        v = np.empty((9, 4 * c_in, count), x5.dtype)
        m = np.empty((9, c_out, count), x5.dtype)
        row = np.zeros(4 * tiles_w + 2, x5.dtype)
        s = np.empty((2, 2, 3, 2 * tiles_h + 1, images * tiles_w), x5.dtype)
        for blk in range(t, blocks, parts):
            n0 = blk * images
            nb = min(images, n_img - n0)
            input_block(x5, n0, nb, pt, pl, tiles_h, tiles_w, row, s, v)
            used = nb * tiles_h * tiles_w
            for xi in range(9):
                gemm(False, False, 1.0, u[xi], v[xi, :, :used], 0.0, m[xi, :, :used])
            output_block(m, n0, nb, tiles_h, tiles_w, bias, has_bias, out4, oh_size, ow_size)


# A serial and a parallel build (numdiff.kernels._parallel): the caller picks by work.
phase_winograd_forward_core = serial_and_parallel(phase_winograd_forward_core, nogil=True)
