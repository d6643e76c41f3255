"""The per-step product of a recurrent layer, ``c += a @ b.T``, as register-blocked dot products.

A recurrent step multiplies a short batch of states by a fixed weight: (16, 128) @ (128, 512)
in the char LSTM, 64 times forward and 64 times backward. BLAS packs the weight again on every
call and is tuned for larger products. Here both operands are read as they lie, rows
contiguous along the summed axis: ``c[m, n] += sum_k a[m, k] * b[n, k]``. Four rows of `a` and
three rows of `b` give twelve sums in one loop over k, which LLVM vectorises into twelve vector
accumulators (7 loads per 12 multiply-adds, nothing stored inside the loop); the sums are added
to `c` once at the end. The backward step's ``d_gates @ W_hh`` reads the weight's transpose,
which the kernels copy once per sequence. Leftover rows (m % 4, n % 3) run as one-row blocks
and single dot products.

Measured (thread CPU time, one thread, float32, AMD EPYC, AVX2, best of 31): 16x128 by 128x512
in 44 us against 64 us for SciPy's OpenBLAS sgemm on the same views; 16x512 by 512x128 42 us
against 71 us; word_language_model's 20x200 by 200x800 93 us against 181 us. With the blocks as
functions of their own rather than inlined, the first took 56 us. Summation order differs
from BLAS (the vector's lanes, then across them): results agree to rounding. The k loops run 512
bits wide where the core has AVX-512 (numdiff.kernels._gate_math.wide_kernel; LLVM's Intel tuning
chose 256): the backward's d_gates (N, 4H) by W_hh^T rows (H, 4H), 32 steps, Emerald Rapids Xeon,
one thread, thread CPU time, GFLOP/s 256 -> 512 bits: N 16 x H 128 55 -> 68, 24 x 64 74 -> 104,
20 x 200 67 -> 70, 16 x 64 57 -> 75, 8 x 128 66 -> 94 (load 13-15).

The forward steps may read the weight's transpose instead (:func:`add_step_product`): ``c[m] +=
a[m, k] * w_t[k]`` along rows of W_hh^T, the loop nest of numdiff.kernels._conv_products (4 rows
of c x 4 steps of k, the inner loop along c's row, 512 bits wide on AVX-512), with no sums across
lanes to finish. It wins where the summed axis (K = H, the hidden size) is short and W_hh^T stays
in the L2 cache (it is read whole for every 4 batch rows), once the transpose, copied once per
sequence, is paid for by steps x batch rows. Measured on an AVX-512 Zen 5 (one thread; GFLOP/s,
dot products here / rows of W^T, wall-clock best of 150, load 5-7, float32 then float64): 16x128
by 128x512 143 / 199, 104 / 101; 20x200 by 200x800 137 / 225, 108 / 75; 32x64 by 64x256 109 /
190, 74 / 104; the backward's 16x512 by 512x128 175 / 160 and 128x1024 by 1024x4096 88 / 36, so
the backward keeps the dot products. Whole LSTM forward kernels (thread CPU time, load 11-13; dot
products / rows of W^T with its copy, ms): 40 steps x batch 24 x H 64 float32 0.43 / 0.27, float64
0.79 / 0.70; 64 x 16 x 128 1.18 / 0.79, 2.69 / 2.14; 35 x 20 x 200 1.97 / 1.31, float64 (W_hh
1.25 MiB) 3.22 / 3.83; 32 x 32 x 256 float32 (1 MiB) 3.69 / 4.37. Hence
:func:`forward_reads_transposed`: H <= 256, W_hh at most 768 KiB, and 256 rows or more (at 16 x
128 by 128 x 512 the transpose, 36 us, is the gain of ~130 rows).

Where the forward reads W_hh^T, the step is now ``a @ w_t`` through numdiff.kernels._blas.gemm
(float32: OpenBLAS's small-matrix kernels, numdiff.kernels._gemm_tiles), no longer the loops over
its rows; the backward's ``d_gates @ W_hh`` is gemm on W_hh as it lies (numdiff.kernels.
_recurrent_loops), so the dot products here serve only the forwards that skip the transpose.
Measured on the Emerald Rapids Xeon (one step's product, us, one thread, thread CPU time, load 10-14,
rows of W^T by the loops / gemm; float32 then float64): forward 16x128 by 128x512 21.4 / 19.1, 43.6 /
47.7; 20x200 by 200x800 70.7 / 46.0, 140 / 114; 24x64 by 64x256 9.6 / 7.3, 14.7 / 9.6; 8x128 by
128x384 8.5 / 7.0, 11.1 / 9.5; backward (dot products on W^T / gemm on W) 16x512 by 512x128 16.6 /
15.5, 50.0 / 57.3; 20x800 by 800x200 54.3 / 44.5, 181 / 135; 16x2048 by 2048x512 616 / 425; 64x1024
by 1024x256 465 / 235, 638 / 738. The backward also no longer copies W_hh^T (42 us at H = 128).
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._blas import gemm
from numdiff.kernels._gate_math import wide_kernel
from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._self_healing_cache import njit

__all__ = ["add_products_nt", "add_step_product", "forward_reads_transposed"]

TRANSPOSED_MAX_HIDDEN = 256
TRANSPOSED_MAX_BYTES = 3 << 18  # 768 KiB
TRANSPOSED_MIN_ROWS = 256


# reassoc lets LLVM split each sum into vector lanes; contract fuses the multiply-adds.
_OPTIONS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})


@njit(inline="always", **_OPTIONS)
def _dot(a, b):
    total = a.dtype.type(0)
    for k in range(a.shape[0]):
        total += a[k] * b[k]
    return total


@njit(inline="always", **_OPTIONS)
def _block_4x3(a0, a1, a2, a3, b0, b1, b2, c, i, j):
    """c[i:i+4, j:j+3] += the twelve dot products of a0..a3 with b0..b2 (one loop over k)."""
    s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = s30 = s31 = s32 = a0.dtype.type(0)
    for k in range(a0.shape[0]):
        x0, x1, x2, x3 = a0[k], a1[k], a2[k], a3[k]
        y0, y1, y2 = b0[k], b1[k], b2[k]
        s00 += x0 * y0
        s01 += x0 * y1
        s02 += x0 * y2
        s10 += x1 * y0
        s11 += x1 * y1
        s12 += x1 * y2
        s20 += x2 * y0
        s21 += x2 * y1
        s22 += x2 * y2
        s30 += x3 * y0
        s31 += x3 * y1
        s32 += x3 * y2
    c[i, j] += s00
    c[i, j + 1] += s01
    c[i, j + 2] += s02
    c[i + 1, j] += s10
    c[i + 1, j + 1] += s11
    c[i + 1, j + 2] += s12
    c[i + 2, j] += s20
    c[i + 2, j + 1] += s21
    c[i + 2, j + 2] += s22
    c[i + 3, j] += s30
    c[i + 3, j + 1] += s31
    c[i + 3, j + 2] += s32


@njit(inline="always", **_OPTIONS)
def _block_1x3(a0, b0, b1, b2, c, i, j):
    s0 = s1 = s2 = a0.dtype.type(0)
    for k in range(a0.shape[0]):
        x = a0[k]
        s0 += x * b0[k]
        s1 += x * b1[k]
        s2 += x * b2[k]
    c[i, j] += s0
    c[i, j + 1] += s1
    c[i, j + 2] += s2


@by_address
@njit(**_OPTIONS)
def add_products_nt(a, b, c):
    """``c += a @ b.T``: a (M, K), b (N, K), c (M, N), any layout (a and b are read through
    C-contiguous copies unless they are C-contiguous already). Loop nest: blocks of 3 rows of b,
    inside them blocks of 4 rows of a, each one loop over k; runs on the calling thread. Shapes
    are the caller's to check."""
    wide_kernel()
    # Row views of a 3-D array arrive typed as any-layout, and LLVM only vectorises the k loops
    # over rows known to be unit-stride: a C-typed copy of a (N x K, a few KB) is cheaper.
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    rows, cols = c.shape
    rows4 = rows - rows % 4
    cols3 = cols - cols % 3
    for j in range(0, cols3, 3):
        b0, b1, b2 = b[j], b[j + 1], b[j + 2]
        for i in range(0, rows4, 4):
            _block_4x3(a[i], a[i + 1], a[i + 2], a[i + 3], b0, b1, b2, c, i, j)
        for i in range(rows4, rows):
            _block_1x3(a[i], b0, b1, b2, c, i, j)
    for j in range(cols3, cols):
        for i in range(rows):
            c[i, j] += _dot(a[i], b[j])


@njit(cache=True, nogil=True)
def forward_reads_transposed(rows, w):
    """Whether a forward whose steps multiply `rows` state rows in all (steps x batch) by w.T, w
    (G, H), runs faster reading the rows of a copy of w.T (the measurements in the module docstring)."""
    return w.shape[1] <= TRANSPOSED_MAX_HIDDEN and w.size * w.itemsize <= TRANSPOSED_MAX_BYTES and rows >= TRANSPOSED_MIN_ROWS


@njit(inline="always", cache=True, nogil=True)
def add_step_product(a, w, w_t, c):
    """``c += a @ w.T``: ``a @ w_t`` through numdiff.kernels._blas.gemm where w_t = w.T (C-contiguous)
    has rows (the caller has run ``prepare_blas`` for the dtype), else as :func:`add_products_nt`.
    c needs unit stride along its rows. Runs on the calling thread."""
    if w_t.shape[0]:
        gemm(False, False, 1.0, a, w_t, 1.0, c)
    else:
        # a's C-contiguous copy made here, as add_products_nt would make it: the forwards (whose
        # state rows are views typed of any layout) and the backwards (C-contiguous gate
        # gradients) then call one compiled add_products_nt per dtype, not one per layout (~1 s
        # of CPU time each on an empty cache).
        add_products_nt(np.ascontiguousarray(a), w, c)
