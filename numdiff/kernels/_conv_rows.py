"""The forward and weight gradient of 1-d convolutions over staged rows of the input (CPU, Numba,
no im2col): one product per filter tap.

:mod:`numdiff.kernels.conv` validates the arguments and calls :func:`rows_forward_core` and
:func:`rows_backward_weight_core` with the same array arguments as the im2col cores of
:mod:`numdiff.kernels._conv_cores` for a convolution whose input, filter and output are one row
high (conv1d, which numdiff.ops.conv runs as conv2d with H = 1), where :func:`use_rows` says so.
Only the sizes after the arrays differ: ``(kw, sw, pl, dw, ow_size, images, parts)``.

Method. A block of `images` images is staged once per group, each channel's rows side by side,
zero-padded and split into their ``sw`` stride phases: ``stage[ph, c, i*Lq + j] = x[n0 + i, c,
j*sw + ph - pl]`` (zero outside the row), Lq = :func:`staged_length`. The input tap k reads at
output position l, ``x[c, l*sw + k*dw - pl]``, is then ``stage[(k*dw) % sw, c, i*Lq + l +
(k*dw) // sw]``; write ``X_k`` for that (Cg, images*Lq) run of the stage and ``W_k = w[:, :, k]``
(Cog, Cg). Then

* forward:          ``acc (Cog, images*Lq) = bias + sum_k W_k @ X_k``, KW products of depth Cg,
  each one call of numdiff.kernels._gemm_loops.accumulate (4 rows of acc by 4 steps of depth in
  registers, a 512-bit loop along the row); each image's first OW columns of acc are its output.
* backward_weight:  ``dW_k (Cog, Cg) += G @ X_k.T`` with G the block's output gradients staged
  the same way (zero in the spare columns), each one call of numdiff.kernels._gemm_loops.dot_rows:
  dot products along the images*Lq columns, both operands read in place.

The ``Lq - OW`` spare columns an image (at least ``(KW-1)*dw // sw``, the taps' overhang) are
computed and dropped, so that the products run over about :data:`ROWS_COLUMNS` columns instead of
OW. The im2col cores gather ``Cg*KW*OW`` patch elements an image for products of depth ``Cg*KW``;
this stages ``Cg*sw*Lq`` (about the padded row) and keeps no patch matrix. Extra memory per
thread: the stage, ``Cg*sw*(images*Lq + (KW-1)*dw//sw)`` elements, and ``Cog*images*Lq`` for acc
or G; the weight gradient's ``G*KW*Cog*Cg`` sums.

Measured (one thread, thread CPU time, min of 9 alternating reps, load 10-12 on 2 cores, float32;
time over PyTorch's, this route / im2col; forward, then weight gradient): tcn's blocks 32x48->48
128 k3 dilation 1, 2, 4: 1.27-1.35 / 1.38-1.73, 1.26-1.29 / 1.53-1.82, 1.23-1.35 / 1.64-1.66;
weight 0.74 / 0.84, 0.69 / 0.97, 0.79 / 1.23; 16x64->64 256 k7 dilation 2: 1.18-1.21 / 1.29-1.37,
weight 1.14 / 1.73; 8x128->256 500 k9: 1.48-1.52 / 1.66-1.70, weight 1.18 / 1.64; the text CNN's
64x40->64 200 k5 1.18-1.20 / 1.13-1.17, weight 0.94 / 1.16; 64x64->128 100 k5 1.01-1.40 /
1.06-1.29, weight 0.98 / 1.06. The input gradient stays on the im2col cores: the same staging
with a scatter-add product per tap, or at stride 1 a forward of the output gradient, measured no
faster (tcn 1.17-1.28 against 1.06-1.40, the text CNN 0.96-1.54 against 0.82-1.62). Blocks of one
image lost to im2col (forward, tcn 1.30-1.64); so did a weight gradient of products ``G @ X_k.T``
by accumulate over a transposed stage (tcn 1.19-1.56).

Parallelism: the (block, group) pairs are split into ``parts`` contiguous runs
(numdiff.kernels._parallel.contiguous_run), one a thread; the weight gradient adds the threads'
sums at the end. Accuracy: the same terms as the direct sum, added in another order.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._gemm_loops import accumulate, dot_rows, one_like
from numdiff.kernels._parallel import contiguous_run, serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "ROWS_COLUMNS",
    "rows_backward_weight_core",
    "rows_cores",
    "rows_forward_core",
    "rows_images",
    "staged_length",
    "use_rows",
]


@njit(cache=True, nogil=True, inline="always")
def staged_length(kw, sw, dw, ow_size):
    """Elements of one stride phase of an image's staged row: the padded row the output reads,
    ``(OW - 1)*sw + (KW - 1)*dw + 1`` elements, in ``sw`` phases. At least ``OW + (KW - 1)*dw
    // sw``, so no tap of an output position reads past its own image."""
    return -(-((ow_size - 1) * sw + (kw - 1) * dw + 1) // sw)


@njit(cache=True, nogil=True)
def _stage(x5, n0, n1, g, pl, sw, length, stage):
    """``stage[ph, c, i*length + j] = x5[n0 + i, g, c, 0, j*sw + ph - pl]`` for the block's images
    i, zero outside the row and in the tail past the last image."""
    cg, width = x5.shape[2], x5.shape[4]
    phases, _, size = stage.shape
    for ph in range(phases):
        for c in range(cg):
            dst = stage[ph, c]
            for i in range(n1 - n0):
                src = x5[n0 + i, g, c, 0]
                base = i * length
                for j in range(length):
                    q = j * sw + ph - pl
                    dst[base + j] = src[q] if 0 <= q < width else 0
            for j in range((n1 - n0) * length, size):
                dst[j] = 0


def rows_forward_core(x5, w3, bias, has_bias, out4, kw, sw, pl, dw, ow_size, images, parts):
    """``out4[n, g, o, l] = bias[g*Cog + o] + sum_{c, k} w3[g, o, c*KW + k] * x5[n, g, c, 0,
    l*sw + k*dw - pl]``. Shapes: x5 (N, G, Cg, 1, W), w3 (G, Cog, Cg*KW), out4 (N, G, Cog, OW).
    Loop nest: prange over runs of (block of `images` images, group); stage the block's rows side
    by side, one product per tap into the block's output rows, copy them out (module docstring)."""
    n_img, groups, cg = x5.shape[0], x5.shape[1], x5.shape[2]
    cog = w3.shape[1]
    length = staged_length(kw, sw, dw, ow_size)
    spare = (kw - 1) * dw // sw
    blocks = -(-n_img // images)
    stages = np.empty((parts, sw, cg, images * length + spare), x5.dtype)
    results = np.empty((parts, cog, images * length), x5.dtype)
    total = blocks * groups
    for t in prange(parts):
        start, stop = contiguous_run(total, parts, t)
        stage, result = stages[t], results[t]
        one = one_like(stage)
        for item in range(start, stop):
            n0, g = (item // groups) * images, item % groups
            n1 = min(n_img, n0 + images)
            cols = (n1 - n0) * length
            _stage(x5, n0, n1, g, pl, sw, length, stage)
            acc = result[:, :cols]
            for o in range(cog):
                acc[o] = bias[g * cog + o] if has_bias else 0
            for k in range(kw):
                ph, off = (k * dw) % sw, (k * dw) // sw
                accumulate(w3[g, :, k::kw], stage[ph, :, off : off + cols], one, acc)
            for i in range(n1 - n0):
                for o in range(cog):
                    out4[n0 + i, g, o] = acc[o, i * length : i * length + ow_size]


@njit(cache=True, nogil=True)
def _stage_gradient(go4, n0, n1, g, length, gstage):
    """``gstage[o, i*length + l] = go4[n0 + i, g, o, l]`` for l < OW, zero in each image's spare
    columns, so that the staged input there adds nothing to a dot product."""
    cog, ow_size = go4.shape[2], go4.shape[3]
    for o in range(cog):
        dst = gstage[o]
        for i in range(n1 - n0):
            base = i * length
            dst[base : base + ow_size] = go4[n0 + i, g, o]
            dst[base + ow_size : base + length] = 0


def rows_backward_weight_core(x5, go4, gw3, kw, sw, pl, dw, ow_size, images, parts):
    """``gw3[g, o, c*KW + k] = sum_{n, l} go4[n, g, o, l] * x5[n, g, c, 0, l*sw + k*dw - pl]``.
    Shapes: x5 (N, G, Cg, 1, W), go4 (N, G, Cog, OW), gw3 (G, Cog, Cg*KW). Loop nest: prange over
    runs of (block of images, group); stage the block's rows as the forward does and its output
    gradients side by side, then per tap the dot products of every output-gradient row with every
    shifted staged row (numdiff.kernels._gemm_loops.dot_rows) into the thread's (G, KW, Cog, Cg)
    sums, which are added into gw3 at the end."""
    n_img, groups, cg = x5.shape[0], x5.shape[1], x5.shape[2]
    cog = gw3.shape[1]
    length = staged_length(kw, sw, dw, ow_size)
    spare = (kw - 1) * dw // sw
    blocks = -(-n_img // images)
    stages = np.empty((parts, sw, cg, images * length + spare), x5.dtype)
    gstages = np.empty((parts, cog, images * length), x5.dtype)
    sums = np.zeros((parts, groups, kw, cog, cg), gw3.dtype)
    total = blocks * groups
    for t in prange(parts):
        start, stop = contiguous_run(total, parts, t)
        stage, gstage = stages[t], gstages[t]
        one = one_like(stage)
        for item in range(start, stop):
            n0, g = (item // groups) * images, item % groups
            n1 = min(n_img, n0 + images)
            cols = (n1 - n0) * length
            _stage(x5, n0, n1, g, pl, sw, length, stage)
            _stage_gradient(go4, n0, n1, g, length, gstage)
            for k in range(kw):
                ph, off = (k * dw) % sw, (k * dw) // sw
                dot_rows(one, gstage[:, :cols], stage[ph, :, off : off + cols], one, sums[t, g, k])
    for g in range(groups):
        for k in range(kw):
            for o in range(cog):
                for c in range(cg):
                    total_sum = sums[0, g, k, o, c]
                    for t in range(1, parts):
                        total_sum += sums[t, g, k, o, c]
                    gw3[g, o, c * kw + k] = total_sum


rows_forward_core = serial_and_parallel(rows_forward_core)
rows_backward_weight_core = serial_and_parallel(rows_backward_weight_core)
rows_cores = {"forward": rows_forward_core, "backward_weight": rows_backward_weight_core}
"""The kernels this route runs; the input gradient stays on the im2col cores (module docstring)."""


ROWS_COLUMNS = 1024
"""Target columns of a block's products (images x staged length)."""


def rows_images(n_img: int, groups: int, length: int, parts: int) -> int:
    """Images in a block of :func:`rows_forward_core`: about :data:`ROWS_COLUMNS` columns of staged
    rows `length` long, at least one image; few enough that every thread gets a block; equal blocks.

    >>> rows_images(32, 1, 130, 1), rows_images(3, 1, 130, 2)
    (7, 2)
    """
    images = max(1, min(n_img, ROWS_COLUMNS // length))
    if groups * -(-n_img // images) < parts:
        images = max(1, min(images, -(-n_img // -(-parts // groups))))
    blocks = -(-n_img // images)
    return -(-n_img // blocks)


def use_rows(height: int, kh: int, pt: int, pb: int, kw: int, sw: int, pl: int, pr: int, loops: bool) -> bool:
    """Whether a convolution's forward runs :func:`rows_forward_core`: one row high (height, KH 1, no top or bottom
    padding: conv1d), not a 1x1 unpadded stride-1 one (the im2col cores hand that one's product
    the input rows directly), and the products run as Numba loops (numdiff.kernels._conv_route;
    with BLAS the im2col cores' one deep product per tile suits it better).

    >>> use_rows(1, 1, 0, 0, 3, 1, 1, 1, True), use_rows(1, 1, 0, 0, 1, 1, 0, 0, True)
    (True, False)
    """
    pointwise = kw == 1 and sw == 1 and pl == 0 and pr == 0
    return loops and height == 1 and kh == 1 and pt == 0 and pb == 0 and not pointwise
