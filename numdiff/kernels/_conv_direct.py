"""Direct weight gradient of 3x3 convolutions on small images (CPU, Numba, no BLAS).

:mod:`numdiff.kernels.conv` validates the arguments, decides when this runs (stride 1,
undilated 3x3 filters on narrow images; numdiff.kernels._conv_routing has the rule and the
measurements) and calls it with the same array arguments as the im2col core of
:mod:`numdiff.kernels._conv_cores`; only the sizes after the arrays differ.

Layout. A block of ``nb`` images is laid out one channel plane at a time with the images' rows
side by side: element ``(r, k, w)`` (row r of image k, column w) sits at ``r*ld + k*OW + w``,
``ld`` = nb*OW rounded up to 16 elements. The input x is staged in three copies per channel,
copy ``j`` shifted by j - left columns and zero outside the image, rows from ``-top``:

    xs[j][r*ld + k*OW + w] = x[k, c, r - top, w + j - left]

so that filter tap (i, j) at output position p = (oh, k, ow) reads ``xs[j][p + i*ld]``: for
every tap, all output positions of the block are one contiguous run, at an offset. The zero rows
above and below an image are shared by all images, and no position is wasted apart from the
rounding of ``ld``. The output gradient is laid out the same way (``gt``, zero in the rounding
columns). Then for each input channel c and pair of output channels, the 18 sums

    dW[co, c, i, j] += sum_p gt[co][p] * xs[j][p + i*ld]

run as one flat loop over the block's OH*ld positions, which LLVM vectorises 512 bits wide
(:func:`numdiff.kernels._vecmath.wide_vectors`) with 18 vector accumulators: 2 + 9 loads feed 18
multiply-adds and nothing is stored. An odd last output channel runs as a pair with a zero
channel. The copies are unsigned-indexed loops in functions of their own, without wide vectors;
rows of the input and of the output gradient move 8 elements at a time (numdiff.kernels._moves:
a loop over a row of 8 ran one element at a time).

Measured (N32 C16->32 8x8, one thread, thread CPU time): the loop alone runs at 135-160 GFLOP/s
(65-80% of the float32 peak), 0.15 ms of the kernel's 0.20-0.22 ms (im2col's core: 0.31-0.34,
PyTorch: 0.19); the rest is staging x (16 channels: 14-17 us timed alone, but 50 us inside the
kernel, not understood yet; marking the copies noinline did not change it) and the output
gradient's layout (15 us). The work buffers start on 64-byte boundaries and ``ld`` is a multiple
of 16, so each 512-bit float32 load stays in one cache line (unaligned, the loop ran a quarter
slower). Three output channels at once (27 accumulators) spilled registers and ran at 90
GFLOP/s; smaller blocks of images (16, 8, 4) were no faster. The same layout for the forward
(``o[co][p] += sum_ij w * xs[j][p + i*ld]``, one output row at a time) ran at ~110 GFLOP/s, the
loads and stores of the output planes and filter values spilled from registers bounding it; see
numdiff.kernels._conv_direct_forward for the layout that does better.

Work items are image blocks, round-robin over the Numba threads, each thread adding into its own
weight-sized accumulator; the accumulators are summed at the end. Extra memory per thread: the
block's output-gradient planes ``(Co + 1)*OH*ld`` and three staged planes ``3*(OH + 2)*ld``
elements, and the accumulator.

Accuracy: the same terms as the im2col GEMM, summed in another order (16 vector lanes, then
across them); no transforms.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._moves import copy8
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import wide_vectors

# The loops' sums may be reordered (vector lanes) and fused into FMAs; NaN and inf keep their
# IEEE meaning.
_SUMS = {"reassoc", "contract"}

# Sizes after the arrays: (top, left, oh_size, ow_size, images, parts): the top and left pads,
# the output's size, the images in a block (``_conv_routing.direct_images``), the work items' count.


@njit(cache=True, nogil=True)
def _aligned(size, like):
    """A 1-D array of `size` elements of `like`'s dtype (not initialised) starting on a 64-byte
    boundary."""
    step = like.itemsize
    buf = np.empty(size + 64 // step, like.dtype)
    skip = (-buf.ctypes.data % 64) // step
    return buf[skip : skip + size]


@njit(cache=True, nogil=True, inline="always")
def _edges(nb, ow_size, ld, inner):
    """``inner[q]`` (q < ld): 1 where column q of a staged row has a left neighbour in its own
    image, ``inner[ld + q]``: a right neighbour; 0 in the columns past nb*ow_size."""
    for q in range(ld):
        w = q % ow_size
        inner[q] = q < nb * ow_size and w > 0
        inner[ld + q] = q < nb * ow_size and w < ow_size - 1


@njit(cache=True, nogil=True, inline="always")
def _row(r, rows, ld, split):
    """Where staged row r of `rows` starts in a copy: at r*ld, or with split the even rows
    first, then the odd ones."""
    return ((r % 2) * ((rows + 1) // 2) + r // 2) * ld if split else r * ld


@by_address
@njit(cache=True, nogil=True)
def _stage(src5, n0, nb, g, c, top, left, rows, ow_size, ld, split, inner, xs):
    """The three column-shifted copies of channel c of images n0 .. n0 + nb - 1 of ``src5``
    (N, G, C, H, W): ``xs[j*rows*ld + r*ld + k*ow_size + w] = src5[n0 + k, g, c, r - top,
    w + j - left]``, zero outside the image and in the columns past nb*ow_size; with split, each
    copy holds its even rows first, then its odd rows (:func:`_row`).

    Copy 1 is gathered row by row; copies 0 and 2 are copy 1 moved by one column, in loops
    over whole rows of the block, masked by `inner` (:func:`_edges`) at the images' edges, where
    the column they need is padding unless a pad is below one (then a fix-up per row reads it).
    Indices are unsigned: Numba's negative-index handling would turn the loads into gathers."""
    groups, channels, height, width = src5.shape[1], src5.shape[2], src5.shape[3], src5.shape[4]
    src = src5.reshape(-1)
    plane = rows * ld
    shift = 1 - left
    lo = min(ow_size, max(0, -shift))
    hi = max(lo, min(ow_size, width - shift))
    for r in range(rows):
        h = r - top
        at = plane + _row(r, rows, ld, split)
        if h < 0 or h >= height:
            for q in range(ld):
                xs[np.uint64(at + q)] = 0
            continue
        for k in range(nb):
            d0 = at + k * ow_size
            s0 = (((n0 + k) * groups + g) * channels + c) * height * width + h * width + shift
            for w in range(lo):
                xs[np.uint64(d0 + w)] = 0
            for w in range(lo, hi - 7, 8):
                copy8(xs, d0 + w, src, s0 + w)
            for w in range(hi - (hi - lo) % 8, hi):
                xs[np.uint64(d0 + w)] = src[np.uint64(s0 + w)]
            for w in range(hi, ow_size):
                xs[np.uint64(d0 + w)] = 0
        for q in range(nb * ow_size, ld):
            xs[np.uint64(at + q)] = 0
    for r in range(rows):
        at = _row(r, rows, ld, split)
        for q in range(ld):
            moved = xs[np.uint64(plane + at + q - 1)]
            xs[np.uint64(at + q)] = moved if inner[q] else 0
        for q in range(ld):
            moved = xs[np.uint64(plane + at + q + 1)]
            xs[np.uint64(2 * plane + at + q)] = moved if inner[ld + q] else 0
    first, last = -left, ow_size + 1 - left
    if 0 <= first < width or 0 <= last < width:
        for r in range(max(0, top), min(rows, height + top)):
            for k in range(nb):
                at = _row(r, rows, ld, split) + k * ow_size
                if 0 <= first < width:
                    xs[at] = src5[n0 + k, g, c, r - top, first]
                if 0 <= last < width:
                    xs[2 * plane + at + ow_size - 1] = src5[n0 + k, g, c, r - top, last]


@by_address
@njit(cache=True, nogil=True)
def _gather_planes(src4, n0, nb, g, ow_size, ld, dst):
    """``dst[o*plane + oh*ld + k*ow_size + w] = src4[n0 + k, g, o, oh*ow_size + w]`` for the
    block's images, plane = OH*ld; src4 (N, G, Co, OH*OW). The other columns are left alone.
    Rows move 8 elements at a time (numdiff.kernels._moves)."""
    groups, c_out, size = src4.shape[1], src4.shape[2], src4.shape[3]
    oh_size = size // ow_size
    plane = oh_size * ld
    src = src4.reshape(-1)
    for o in range(c_out):
        for k in range(nb):
            s0 = (((n0 + k) * groups + g) * c_out + o) * size
            for oh in range(oh_size):
                d0 = o * plane + oh * ld + k * ow_size
                s1 = s0 + oh * ow_size
                for w in range(0, ow_size - 7, 8):
                    copy8(dst, d0 + w, src, s1 + w)
                for w in range(ow_size - ow_size % 8, ow_size):
                    dst[np.uint64(d0 + w)] = src[np.uint64(s1 + w)]


@by_address
@njit(cache=True, nogil=True, fastmath=_SUMS)
def _weight_part(t, parts, x5, go4, gw, top, left, oh_size, ow_size, images):
    """Thread t's image blocks of the weight gradient, added into gw (G, Co, Ci*9):
    ``gw[g, o, i*9 + tap] += sum over the blocks' output positions of go4[n, g, o] *
    (x5[n, g, i] shifted by the tap, top/left padded)``; x5 (N, G, Ci, H, W), go4
    (N, G, Co, OH*OW)."""
    wide_vectors()
    n_img, groups, c_in = x5.shape[0], x5.shape[1], x5.shape[2]
    c_out = go4.shape[2]
    pairs = (c_out + 1) // 2
    rows = oh_size + 2
    ld_max = (images * ow_size + 15) // 16 * 16
    xs = _aligned(3 * rows * ld_max, x5)
    gt = _aligned(2 * pairs * oh_size * ld_max, x5)
    zero = x5.dtype.type(0)
    inner = np.zeros(2 * ld_max, np.uint8)
    for blk in range(t, (n_img + images - 1) // images, parts):
        n0 = blk * images
        nb = min(images, n_img - n0)
        ld = (nb * ow_size + 15) // 16 * 16
        plane = oh_size * ld
        srows = rows * ld
        _edges(nb, ow_size, ld, inner)
        for g in range(groups):
            # The output gradient in the block layout; junk columns and a padding channel zero.
            if ld > nb * ow_size:
                for p in range(c_out * plane):
                    gt[p] = 0
            for p in range(c_out * plane, 2 * pairs * plane):
                gt[p] = 0
            _gather_planes(go4, n0, nb, g, ow_size, ld, gt)
            for i in range(c_in):
                _stage(x5, n0, nb, g, i, top, left, rows, ow_size, ld, False, inner, xs)
                x0, x1, x2 = xs[0:plane], xs[srows : srows + plane], xs[2 * srows : 2 * srows + plane]
                x3, x4, x5_ = xs[ld : ld + plane], xs[srows + ld : srows + ld + plane], xs[2 * srows + ld : 2 * srows + ld + plane]
                x6, x7 = xs[2 * ld : 2 * ld + plane], xs[srows + 2 * ld : srows + 2 * ld + plane]
                x8 = xs[2 * srows + 2 * ld : 2 * srows + 2 * ld + plane]
                for o in range(0, c_out, 2):
                    d0 = gt[o * plane : (o + 1) * plane]
                    d1 = gt[(o + 1) * plane : (o + 2) * plane]
                    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = s8 = zero
                    r0 = r1 = r2 = r3 = r4 = r5 = r6 = r7 = r8 = zero
                    for p in range(plane):
                        wide_vectors()
                        a, b = d0[p], d1[p]
                        e0, e1, e2, e3, e4, e5, e6, e7, e8 = x0[p], x1[p], x2[p], x3[p], x4[p], x5_[p], x6[p], x7[p], x8[p]
                        s0 += a * e0
                        s1 += a * e1
                        s2 += a * e2
                        s3 += a * e3
                        s4 += a * e4
                        s5 += a * e5
                        s6 += a * e6
                        s7 += a * e7
                        s8 += a * e8
                        r0 += b * e0
                        r1 += b * e1
                        r2 += b * e2
                        r3 += b * e3
                        r4 += b * e4
                        r5 += b * e5
                        r6 += b * e6
                        r7 += b * e7
                        r8 += b * e8
                    at = i * 9
                    gw[g, o, at] += s0
                    gw[g, o, at + 1] += s1
                    gw[g, o, at + 2] += s2
                    gw[g, o, at + 3] += s3
                    gw[g, o, at + 4] += s4
                    gw[g, o, at + 5] += s5
                    gw[g, o, at + 6] += s6
                    gw[g, o, at + 7] += s7
                    gw[g, o, at + 8] += s8
                    if o + 1 < c_out:
                        gw[g, o + 1, at] += r0
                        gw[g, o + 1, at + 1] += r1
                        gw[g, o + 1, at + 2] += r2
                        gw[g, o + 1, at + 3] += r3
                        gw[g, o + 1, at + 4] += r4
                        gw[g, o + 1, at + 5] += r5
                        gw[g, o + 1, at + 6] += r6
                        gw[g, o + 1, at + 7] += r7
                        gw[g, o + 1, at + 8] += r8


def direct_backward_weight_core(x5, go4, gw3, top, left, oh_size, ow_size, images, parts):
    acc = np.zeros((parts,) + gw3.shape, gw3.dtype)
    for t in prange(parts):
        _weight_part(t, parts, x5, go4, acc[t], top, left, oh_size, ow_size, images)
    # Element by element (see the im2col weight-gradient core for why not a slice assignment).
    for g in range(gw3.shape[0]):
        for o in range(gw3.shape[1]):
            for q in range(gw3.shape[2]):
                total = acc[0, g, o, q]
                for t in range(1, parts):
                    total += acc[t, g, o, q]
                gw3[g, o, q] = total


# Each core as a serial and a parallel build (numdiff.kernels._parallel): the caller picks by work.
direct_backward_weight_core = serial_and_parallel(direct_backward_weight_core, nogil=True)
