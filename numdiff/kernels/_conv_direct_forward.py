"""Direct forward and input gradient of 3x3 convolutions on small images (CPU, Numba, no BLAS).

:mod:`numdiff.kernels.conv` validates the arguments, decides when these run (the rule and
its measurements: numdiff.kernels._conv_routing) and calls them with the same array arguments
as the im2col cores of :mod:`numdiff.kernels._conv_cores`; only the sizes after the arrays
differ. The input gradient of a stride-1 3x3 convolution is itself one, from the output
gradient (padded by ``2 - pad``) with the filters rotated by 180 degrees and their channel axes
swapped, so both run one loop.

Layout: as for the direct weight gradient (numdiff.kernels._conv_direct: a block of images with
their rows side by side, rows ``ld`` long, three column-shifted copies of each input channel),
but each copy holds its even rows first and then its odd rows, and so do the block's output
planes. Output rows 2a and 2a + 1 read staged rows 2a .. 2a + 3, so with E/O the even/odd halves
of copy j and q = a*ld + (k, w) one flat index over a half plane,

    out[2a]   += sum_j w[0, j] E_j[q] + w[1, j] O_j[q] + w[2, j] E_j[q + ld]
    out[2a+1] += sum_j w[0, j] O_j[q] + w[1, j] E_j[q + ld] + w[2, j] O_j[q + ld]

per input channel, for a pair of output channels at once: 12 loads of the staged input and 4
loads and stores of the output feed 36 multiply-adds, the 18 filter values in registers; LLVM
vectorises the loop 512 bits wide (numdiff.kernels._vecmath.wide_vectors). Measured (N32
16->32 8x8, one thread, thread CPU time): the loop alone 130 GFLOP/s, where one output row at a
time (9 loads + 2 loads and stores per 18 multiply-adds, the filter values partly spilled to the
stack) ran at 105-110, and four output channels of one tap row at a time at 85; the kernels
0.20-0.22 ms (forward; Winograd 0.22-0.29) and 0.21-0.22 ms (input gradient; im2col 0.25-0.27),
the rest of their time staging the input and writing the output back. An
odd output height computes a spare last row that is not written out; an odd last output channel
pairs with a zero filter. Extra memory per thread: the block's output planes ``(Co + 1)*(OH + 1)
*ld`` and the staged copies of one channel ``3*(OH + 3)*ld`` elements.

Accuracy: the same terms as the direct sum, added in another order; no transforms.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._conv_direct import _SUMS, _aligned, _edges, _stage
from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._moves import move8
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import wide_vectors

# Sizes after the arrays: (top, left, oh_size, ow_size, images, parts): the routine's top and
# left pads (for the input gradient 2 - pad), the forward output's size, the images in a block,
# the work items' count.


@by_address
@njit(cache=True, nogil=True)
def _pair_filters(w3, g, rotate, f):
    """``f[i, pair, 9*m + tap]``: the tap of output channel 2*pair + m (zero past the last) from
    input channel i, one contiguous run per pair. Without rotate, ``w3[g, o, i*9 + tap]``
    (w3: G, Co, Ci*9); with rotate (the input gradient), ``w3[g, i, o*9 + 8 - tap]``."""
    c_in, pairs = f.shape[0], f.shape[1]
    c_out = w3.shape[2] // 9 if rotate else w3.shape[1]
    for i in range(c_in):
        for pair in range(pairs):
            for m in range(2):
                o = 2 * pair + m
                for q in range(9):
                    if o >= c_out:
                        f[i, pair, 9 * m + q] = 0
                    elif rotate:
                        f[i, pair, 9 * m + q] = w3[g, i, o * 9 + 8 - q]
                    else:
                        f[i, pair, 9 * m + q] = w3[g, o, i * 9 + q]


@by_address
@njit(cache=True, nogil=True)
def _scatter_rows(acc, n0, nb, g, out_h, out_w, ld, bias, has_bias, dst4):
    """``dst4[n0 + k, g, o, oh*out_w + w] = bias[g*Co + o] + acc[...]`` (bias where has_bias)
    from the block's output planes: channel o's even rows, then its odd rows, each half
    ``(out_h + 1) // 2`` rows of ``ld``. Rows move 8 elements at a time (numdiff.kernels._moves)."""
    groups, c_out = dst4.shape[1], dst4.shape[2]
    half = (out_h + 1) // 2
    size = out_h * out_w
    dst = dst4.reshape(-1)
    for o in range(c_out):
        shift = bias[g * c_out + o] if has_bias else dst4.dtype.type(0)
        for k in range(nb):
            d0 = (((n0 + k) * groups + g) * c_out + o) * size
            for oh in range(out_h):
                s0 = (2 * o * half + (oh % 2) * half + oh // 2) * ld + k * out_w
                d1 = d0 + oh * out_w
                for w in range(0, out_w - 7, 8):
                    move8(dst, d1 + w, acc, s0 + w, shift)
                for w in range(out_w - out_w % 8, out_w):
                    dst[np.uint64(d1 + w)] = acc[np.uint64(s0 + w)] + shift


@by_address
@njit(cache=True, nogil=True, fastmath=_SUMS)
def _conv_part(t, parts, src5, w3, bias, has_bias, dst4, top, left, out_h, out_w, rotate, images):
    """Thread t's image blocks of the stride-1 3x3 convolution from src5 (N, G, Ci, Hs, Ws) to
    dst4 (N, G, Co, out_h*out_w), filters as :func:`_pair_filters` reads them."""
    wide_vectors()
    n_img, groups, c_in = src5.shape[0], src5.shape[1], src5.shape[2]
    c_out = dst4.shape[2]
    pairs = (c_out + 1) // 2
    half = (out_h + 1) // 2
    rows = 2 * half + 2
    ld_max = (images * out_w + 15) // 16 * 16
    xs = _aligned(3 * rows * ld_max, src5)
    acc = _aligned(4 * pairs * half * ld_max, src5)
    f = np.empty((c_in, pairs, 18), src5.dtype)
    inner = np.zeros(2 * ld_max, np.uint8)
    for blk in range(t, (n_img + images - 1) // images, parts):
        n0 = blk * images
        nb = min(images, n_img - n0)
        ld = (nb * out_w + 15) // 16 * 16
        span = half * ld  # one output plane's even (or odd) rows
        copy = rows * ld  # one staged copy: its even rows, then from `odd` its odd rows
        odd = (half + 1) * ld
        _edges(nb, out_w, ld, inner)
        for g in range(groups):
            _pair_filters(w3, g, rotate, f)
            for q in range(4 * pairs * span):
                acc[q] = 0
            for i in range(c_in):
                _stage(src5, n0, nb, g, i, top, left, rows, out_w, ld, True, inner, xs)
                # Copy j's even rows a (xe[j]) and a + 1 (xe[3 + j]), odd rows likewise (xo).
                xe0, xe1, xe2 = xs[0:span], xs[copy : copy + span], xs[2 * copy : 2 * copy + span]
                a = ld
                xe3, xe4, xe5 = xs[a : a + span], xs[copy + a : copy + a + span], xs[2 * copy + a : 2 * copy + a + span]
                a = odd
                xo0, xo1, xo2 = xs[a : a + span], xs[copy + a : copy + a + span], xs[2 * copy + a : 2 * copy + a + span]
                a = odd + ld
                xo3, xo4, xo5 = xs[a : a + span], xs[copy + a : copy + a + span], xs[2 * copy + a : 2 * copy + a + span]
                for pair in range(pairs):
                    u0, u1, u2, u3, u4, u5, u6, u7, u8 = f[i, pair, 0:9]
                    v0, v1, v2, v3, v4, v5, v6, v7, v8 = f[i, pair, 9:18]
                    at = 4 * pair * span
                    pe, po = acc[at : at + span], acc[at + span : at + 2 * span]
                    qe, qo = acc[at + 2 * span : at + 3 * span], acc[at + 3 * span : at + 4 * span]
                    for q in range(span):
                        wide_vectors()
                        e0, e1, e2, e3, e4, e5 = xe0[q], xe1[q], xe2[q], xe3[q], xe4[q], xe5[q]
                        o0, o1, o2, o3, o4, o5 = xo0[q], xo1[q], xo2[q], xo3[q], xo4[q], xo5[q]
                        pe[q] += (u0 * e0 + u1 * e1 + u2 * e2) + (u3 * o0 + u4 * o1 + u5 * o2) + (u6 * e3 + u7 * e4 + u8 * e5)
                        po[q] += (u0 * o0 + u1 * o1 + u2 * o2) + (u3 * e3 + u4 * e4 + u5 * e5) + (u6 * o3 + u7 * o4 + u8 * o5)
                        qe[q] += (v0 * e0 + v1 * e1 + v2 * e2) + (v3 * o0 + v4 * o1 + v5 * o2) + (v6 * e3 + v7 * e4 + v8 * e5)
                        qo[q] += (v0 * o0 + v1 * o1 + v2 * o2) + (v3 * e3 + v4 * e4 + v5 * e5) + (v6 * o3 + v7 * o4 + v8 * o5)
            _scatter_rows(acc, n0, nb, g, out_h, out_w, ld, bias, has_bias, dst4)


def direct_forward_core(x5, w3, bias, has_bias, out4, top, left, oh_size, ow_size, images, parts):
    for t in prange(parts):
        _conv_part(t, parts, x5, w3, bias, has_bias, out4, top, left, oh_size, ow_size, False, images)


def direct_backward_input_core(go4, w3, dx5, top, left, oh_size, ow_size, images, parts):
    n_img, groups, cg, height, width = dx5.shape
    src5 = go4.reshape((n_img, groups, go4.shape[2], oh_size, ow_size))
    dst4 = dx5.reshape((n_img, groups, cg, height * width))
    no_bias = np.zeros(0, dx5.dtype)
    for t in prange(parts):
        _conv_part(t, parts, src5, w3, no_bias, False, dst4, top, left, height, width, True, images)


# Each core as a serial and a parallel build (numdiff.kernels._parallel): the caller picks by work.
direct_forward_core = serial_and_parallel(direct_forward_core, nogil=True)
direct_backward_input_core = serial_and_parallel(direct_backward_input_core, nogil=True)
