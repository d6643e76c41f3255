"""Convolution kernels (CPU, Numba): conv1d/conv2d forward, backward_input, backward_weight.

Method: im2col + BLAS GEMM, tiled by output rows. For one image n, group g and a tile of output
rows, the patches are gathered into ``col`` (K, T) with ``K = Cg*KH*KW`` and ``T`` the tile's
output positions, then

* forward:          ``out[n, g-block, tile] = W_g (Cog, K) @ col``   (written in place)
* backward_input:   ``dcol = W_g[:, block].T @ dout[n, g-block, tile]``, then col2im scatter-add
* backward_weight:  ``dW_g.T += col @ dout[n, g-block, tile].T``     (per-thread accumulator)

Tiles hold whole output rows, as many as keep ``K*T <= TILE_ELEMENTS`` (at least one row), so
``col`` stays near the core's L2 cache while BLAS reads it. Extra memory per call is bounded by
``threads * max(TILE_ELEMENTS, K*OW)`` elements for the column buffers, plus per thread a
zero-padded copy of the input rows one tile reads (numdiff.kernels._im2col), plus, for
backward_weight, one weight-sized accumulator per thread; never a whole-batch im2col.
A 1x1, stride-1, unpadded convolution skips im2col and hands BLAS the input planes directly.

Parallelism: work items are (image, group, tile) for forward and backward_weight, and
(image, group, channel block) for backward_input, so that two threads never scatter into the
same input element; items go round-robin to the Numba threads and each thread runs
single-threaded BLAS on its own items (see :mod:`numdiff.kernels._blas` for why BLAS is not
threaded itself). When there are fewer images x groups than threads, tiles (or channel blocks)
are made smaller so every thread gets work.

Measured alternatives: whole-image im2col with threaded BLAS spent more time in the (serial)
gather than in the GEMM on the 8x64x56x56 k3 workload; batching several images into one wide
GEMM did not beat per-image tiles (measured again for 8x8 to 28x28 outputs, forward and weight
gradient, 4 to 32 images per GEMM: 5-100% slower, the copies to and from the (N, C, H, W) layout
included). With im2col vectorised (see numdiff.kernels._im2col), the GEMMs are 65-80% of each
kernel's time, and the gap to PyTorch's oneDNN direct convolution is GEMM efficiency: SciPy's
OpenBLAS runs these short products, e.g. (32x144)@(144x1024), at 55-60% of the fp32 peak where
oneDNN reaches 75-80% (NumPy's own OpenBLAS 0.3.31 was 10-20% faster on the forward products and
no faster on the backward ones). A direct loop nest in Numba cannot close that gap: Numba's
LLVM target on this Xeon emits 256-bit vectors only, half of the AVX-512 peak.

Winograd route (numdiff.kernels._winograd, method there): a stride-1, undilated 3x3 convolution
runs as Winograd F(2x2, 3x3) when the harmonic mean of its input and output channels per group
is at least :data:`WINOGRAD_MIN_CHANNELS` and the routine writes rows at least
:data:`WINOGRAD_MIN_WIDTH` wide (per kernel; the input gradient is itself a 3x3 convolution of
the output gradient, from Cog to Cg channels). It does 16 multiplies per 2x2 output tile and
channel pair against im2col's 36, in 16 GEMMs with K = the input channels that OpenBLAS runs at
115-120 GFLOP/s on one core (70-75% of its peak), and adds input and output transforms
(20-30% of its time). Measured (one thread, thread CPU time, Winograd / im2col, forward, input
gradient, weight gradient): 32x16->32 32x32 0.62 0.75 0.84; 8x64->64 56x56 0.58 0.59 0.80;
32x32->32 24x24 0.50 0.59 0.74. Small images run several to a block, side by side, so that the
transforms run loops over all of them (see _winograd.py); measured so (thread CPU time, best
of 3-7 alternations on a busy machine, +-10%): 8x64->64 14x14 0.65 0.63-0.68 0.89-0.91;
32x16->32 16x16 0.52-0.61 0.66-0.76 0.73-0.84; 32x16->32 12x12 0.69-0.73 0.89-0.94 0.73-0.75;
32x16->32 8x8 0.79-0.80 0.99-1.08 0.90-0.95; 32x32->32 8x8 0.76 0.86 0.83-0.89; 8x64->64 8x8
0.91-0.97 0.94-0.99 1.24-1.37 (8 images: narrow blocks); 32x16->32 6x6 0.73 0.84 1.00;
32x16->32 4x4 0.70 0.90 1.12. Before the images were stacked, 32x16->32 8x8 measured 1.41 1.84
1.37: each image's tile rows were transformed by loops only as long as the image. What is left
against small images is the spare tile column per image row (a quarter of the tiles at 8 wide).

Direct route for small images (numdiff.kernels._conv_direct, _conv_direct_forward; methods
there): stride-1, undilated 3x3 convolutions that pass :func:`_use_direct` run as vectorised loops
over all the images' rows side by side, no GEMM. Measured (one thread, thread CPU time, direct /
what ran before, forward, input gradient, weight gradient): 32x16->32 8x8 0.82 0.92 0.66-0.69;
4x4 0.69 0.71 0.60; 6x6 0.65 0.66 0.68; 32x32->32 8x8 0.89 0.73 0.67; 8x64->64 8x8 0.80 0.80
0.84; 64x6->16 8x8 0.70 0.75 0.60; 128x32->64 7x7 0.74 0.73 0.75; 16x16->16 14x14 (im2col) 0.58
0.61 0.65; 32x16->32 12x12 (Winograd) 1.07 0.81 0.92; 16x16 1.20 1.03 0.98; 24x24 1.23 1.14
1.17; small batches: 2x16->32 8x8 0.86 1.42 0.99, 4x16->32 8x8 1.00 1.10 0.79, 8x16->32 8x8
0.95 0.90, 4x16->32 4x4 1.30 1.49; input gradient to 2 channels (64x2->16 8x8) 1.11.

Transposed convolution needs no kernel of its own: ``conv_transpose`` forward is
:func:`conv2d_backward_input` and its input gradient is :func:`conv2d_forward`; its weight
gradient is :func:`conv2d_backward_weight` with input and output-gradient swapped. conv1d is
conv2d with H = 1 (numdiff.ops.conv reshapes, no copy); the bias gradient is a plain sum.

Padding is explicit per side, ``(top, bottom, left, right)``; the op layer resolves
``"same"``/``"valid"`` and output_padding (a transposed conv's output_padding is bottom/right
padding reduced by that amount, which may go negative: a negative pad crops). Output sizes must
satisfy ``OH = (H + top + bottom - dh*(KH-1) - 1) // sh + 1`` (and likewise OW), checked before
any compiled code runs, as are the argument ranges (numdiff.kernels._args: no index arithmetic
can overflow), that no output overlaps an input, and the empty cases: a batch of 0 images
computes nothing and gives a zero weight gradient.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._blas import prepare_blas
from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_shape
from numdiff.kernels._conv_cores import backward_input_core, backward_weight_core, forward_core
from numdiff.kernels._conv_direct import direct_backward_weight_core
from numdiff.kernels._conv_direct_forward import direct_backward_input_core, direct_forward_core
from numdiff.kernels._conv_geometry import conv2d_geometry, conv_output_size
from numdiff.kernels._winograd import (
    winograd_backward_input_core,
    winograd_backward_weight_core,
    winograd_forward_core,
)

__all__ = [
    "TILE_ELEMENTS",
    "conv_output_size",
    "conv2d_forward",
    "conv2d_backward_input",
    "conv2d_backward_weight",
    "conv2d_plan",
    "conv2d_views",
]

TILE_ELEMENTS = 1 << 17
"""Target size of one thread's im2col tile, in elements (512 KiB float32)."""

PARALLEL_MIN_MACS = 1 << 21
"""Multiply-adds below which a convolution runs on the calling thread (numdiff.kernels._parallel)."""

WINOGRAD_MIN_CHANNELS = 20
"""Harmonic mean of the input and output channels per group from which a 3x3 stride-1
convolution may run as Winograd: the GEMMs it saves grow with ``ci*co``, the transforms it adds
with ``ci + co``."""

WINOGRAD_MIN_WIDTH = {"forward": 8, "backward_input": 14, "backward_weight": 12}
"""Output width (the routine's: the input's for the input gradient) from which it may. The
forward wins from 4 wide (0.70 of im2col's time at 32x16->32 4x4), but the digits CNN's 4x4
convolution would then compile the Winograd forward core too on a cold start (measured 7.5 s
more, first call of an empty cache on a busy machine: 16.5 against 9.0 s), for 0.03 ms a step."""

DIRECT_MAX_WIDTH = {"forward": 8, "backward_input": 16, "backward_weight": 16}
"""Widest rows (the routine's: the input's for the input gradient) a direct loop writes instead
of Winograd's; instead of im2col's, up to :data:`DIRECT_MAX_IM2COL_WIDTH`."""
DIRECT_MAX_IM2COL_WIDTH = 16

DIRECT_MIN_POSITIONS = {"forward": 256, "backward_input": 512, "backward_weight": 128}
"""Fewest output positions of the batch (the routine's) for a direct loop: below, staging each
input channel costs more than the loop saves."""

DIRECT_MIN_MACS = 1 << 22
"""Fewest multiply-adds for a direct loop: below, a call saves under ~0.05 ms, not worth compiling
another core on a cold start (the digits CNN's 8x8 and 4x4 convolutions, 0.3 and 2.4 M: its
compiled model's first call took 10.0-10.2 s with direct cores, 4.8-5.2 s without, for 0.05-0.1
ms of a 1.3-1.5 ms step)."""

DIRECT_MIN_ROW = 16
"""Fewest positions in a row of the batch (images x width): a block's rows round up to 16."""

DIRECT_MIN_CHANNELS = 4
"""Fewest output channels per group (the routine's): they run in pairs, each pair reading every
staged input channel (measured: an input gradient 16 -> 2 channels 1.1x im2col's time)."""

DIRECT_BLOCK_ELEMENTS = 1 << 18
"""Target size of one thread's output (or output-gradient) planes in a direct block, in elements."""

WINOGRAD_BLOCK_ELEMENTS = 3 << 17
"""Target size of one thread's transformed input and output tiles together, in elements."""


def _check_conv(op, kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups):
    """Validate a conv2d configuration; return the build of the core to run for `kind` (serial
    below :data:`PARALLEL_MIN_MACS`; direct or Winograd where :func:`_use_direct` or
    :func:`_use_winograd` says so, else im2col)
    and the sizes it takes, or (None, None) for an empty batch, where there is nothing to compute."""
    n_img, _, height, width, c_out, cg, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, groups, oh_size, ow_size = (
        conv2d_geometry(op, x_shape, w_shape, go_shape, stride, padding, dilation, groups)
    )
    if n_img == 0:
        return None, None
    macs = n_img * c_out * cg * kh * kw * oh_size * ow_size
    if kh == kw == 3 and sh == sw == dh == dw == 1:
        cog = c_out // groups
        if kind == "backward_input":
            # The input gradient is a 3x3 convolution of the output gradient: Cog -> Cg channels,
            # written at the input's size, padded by 2 - pad.
            ci, co, out_h, out_w, top, left = cog, cg, height, width, 2 - pt, 2 - pl
        else:
            ci, co, out_h, out_w, top, left = cg, cog, oh_size, ow_size, pt, pl
        winograd = _use_winograd(kind, ci, co, out_w)
        if macs >= DIRECT_MIN_MACS and _use_direct(kind, n_img, co, out_h, out_w, winograd):
            kernel, parts = _DIRECT_CORES[kind].pick(macs, PARALLEL_MIN_MACS)
            images = _direct_images(n_img, co, out_h, out_w, parts)
            return kernel, (top, left, oh_size, ow_size, images, parts)
        if winograd:
            kernel, parts = _WINOGRAD_CORES[kind].pick(macs, PARALLEL_MIN_MACS)
            images, rows = _winograd_blocks(n_img, (out_h + 1) // 2, groups * (ci + co), (out_w + 1) // 2 + 1, parts)
            # (oh_size, ow_size): the forward output's size, which is the routine's output or,
            # for the input gradient, its input.
            return kernel, (top, left, oh_size, ow_size, images, rows, parts)
    pointwise = kh == 1 and kw == 1 and sh == 1 and sw == 1 and pt == pb == pl == pr == 0
    kernel, parts = _CORES[kind].pick(macs, PARALLEL_MIN_MACS)
    rows = max(1, min(oh_size, TILE_ELEMENTS // max(1, cg * kh * kw * ow_size)))
    planes = n_img * groups
    if planes < parts:
        # Too few images to go round: cut each into at least parts/planes tiles or blocks.
        share = -(-parts // planes)
        rows = min(rows, -(-oh_size // share))
        blocks = min(cg, share)
    else:
        blocks = 1
    # Equal tiles: 32 rows in tiles of 28 would leave a 4-row tile whose GEMM runs inefficiently.
    tiles = -(-oh_size // rows)
    rows = -(-oh_size // tiles)
    return kernel, (kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, rows, pointwise, blocks, parts)


def _use_direct(kind, n_img, co, out_h, out_w, winograd):
    """Whether the `kind` kernel of a stride-1, undilated 3x3 convolution to co channels per
    group, writing out_h x out_w planes of n_img images, runs faster as a direct loop than as
    Winograd (where `winograd`) or im2col (see the module docstring for the measurements). The
    caller checks :data:`DIRECT_MIN_MACS`."""
    widest = DIRECT_MAX_WIDTH[kind] if winograd else max(DIRECT_MAX_WIDTH[kind], DIRECT_MAX_IM2COL_WIDTH)
    return (
        out_w <= widest
        and n_img * out_w >= DIRECT_MIN_ROW
        and n_img * out_h * out_w >= DIRECT_MIN_POSITIONS[kind]
        and co >= DIRECT_MIN_CHANNELS
    )


def _use_winograd(kind, ci, co, out_w):
    """Whether the `kind` kernel of a stride-1, undilated 3x3 convolution from ci to co channels
    per group, writing rows of out_w, runs faster as Winograd F(2x2, 3x3) than as im2col (see
    the module docstring for the measurements behind the bounds)."""
    return 2 * ci * co >= WINOGRAD_MIN_CHANNELS * (ci + co) and out_w >= WINOGRAD_MIN_WIDTH[kind]


def _direct_images(n_img, cog, oh_size, ow_size, parts):
    """The images in a block of a direct loop writing (or reading the gradient of) cog planes of
    oh_size x ow_size: as many as keep them and the staged input (about ``(cog + 4) * (oh_size +
    2) * ow_size`` elements an image) within :data:`DIRECT_BLOCK_ELEMENTS`, at least one; few
    enough that every thread gets a block, and equal blocks."""
    fit = max(1, DIRECT_BLOCK_ELEMENTS // ((cog + 4) * (oh_size + 2) * ow_size))
    images = min(fit, -(-n_img // parts))
    blocks = -(-n_img // images)
    return -(-n_img // blocks)


def _winograd_blocks(n_img, tiles_h, channels, qc, parts):
    """``(images, rows)``: a Winograd block is `rows` tile rows of `images` images side by side
    (see numdiff.kernels._winograd). A block holds as much as keeps its transformed input and
    output (16 * channels * images * rows * qc elements) within :data:`WINOGRAD_BLOCK_ELEMENTS`:
    several whole images where one fits, else at least one tile row of one image; few enough
    that every thread gets a block, and equal blocks."""
    fit = WINOGRAD_BLOCK_ELEMENTS // (16 * channels * qc)
    images = min(n_img, fit // tiles_h, -(-n_img // parts))
    if images > 1 or (images == 1 and n_img >= parts):
        blocks = -(-n_img // images)
        return -(-n_img // blocks), tiles_h
    rows = max(1, min(tiles_h, fit))
    rows = min(rows, -(-tiles_h // -(-parts // n_img)))
    chunks = -(-tiles_h // rows)
    return 1, -(-tiles_h // chunks)


_CORES = {"forward": forward_core, "backward_input": backward_input_core, "backward_weight": backward_weight_core}
_DIRECT_CORES = {
    "forward": direct_forward_core,
    "backward_input": direct_backward_input_core,
    "backward_weight": direct_backward_weight_core,
}
_WINOGRAD_CORES = {
    "forward": winograd_forward_core,
    "backward_input": winograd_backward_input_core,
    "backward_weight": winograd_backward_weight_core,
}


def conv2d_plan(kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups):
    """What the conv2d kernel `kind` ("forward", "backward_input" or "backward_weight") runs for
    these shapes: ``(core, sizes)``, the compiled core and the sizes after its array arguments,
    or (None, None) for an empty batch. Raises as the kernel does for a bad configuration.

    This is the kernels' whole plan: numdiff.compile works it out once per traced graph and then
    calls the core itself on views of C-contiguous arrays of these shapes (see :func:`conv2d_views`).

    >>> core, sizes = conv2d_plan("forward", (1, 1, 3, 3), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1), (0, 0, 0, 0), (1, 1), 1)
    >>> sizes[:4]
    (2, 2, 1, 1)
    """
    return _check_conv(f"conv2d_{kind}", kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups)


def conv2d_views(x_shape, w_shape, out_shape, groups):
    """The shapes the cores see: x (N, G, C/G, H, W), w (G, Co/G, C/G*KH*KW), out (N, G, Co/G, OH*OW)."""
    n_img, c_in, height, width = x_shape
    c_out = w_shape[0]
    return (
        (n_img, groups, c_in // groups, height, width),
        (groups, c_out // groups, w_shape[1] * w_shape[2] * w_shape[3]),
        (n_img, groups, c_out // groups, out_shape[2] * out_shape[3]),
    )


def _views(x, w, out, groups):
    n_img, c_in, height, width = x.shape
    c_out = w.shape[0]
    x5 = x.reshape(n_img, groups, c_in // groups, height, width)
    w3 = w.reshape(groups, c_out // groups, -1)
    out4 = out.reshape(n_img, groups, c_out // groups, -1)
    return x5, w3, out4


# --------------------------------------------------------------------------- conv2d


def conv2d_forward(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    out: np.ndarray,
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
) -> np.ndarray:
    """``out[n, co, oh, ow] = bias[co] + sum_{c in group(co), i, j} weight[co, c, i, j] *
    x[n, c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]`` (zero outside the image).

    Shapes: x (N, C, H, W), weight (Co, C/groups, KH, KW), bias (Co,) or None,
    out (N, Co, OH, OW). Loop nest: prange over (image, group, row tile): im2col, GEMM into out, bias.
    Extra memory and parallelism: see the module docstring.

    >>> x = np.ones((1, 1, 3, 3)); w = np.ones((1, 1, 2, 2))
    >>> conv2d_forward(x, w, None, np.empty((1, 1, 2, 2)))[0, 0]
    array([[4., 4.],
           [4., 4.]])
    """
    op = "conv2d_forward"
    check_float_arrays(op, x=x, weight=weight, out=out)
    core, sizes = _check_conv(op, "forward", x.shape, weight.shape, out.shape, stride, padding, dilation, groups)
    if bias is None:
        bias_arr, has_bias = np.zeros(0, x.dtype), False
    else:
        check_float_arrays(op, x=x, bias=bias)
        check_shape(op, "bias", bias, (weight.shape[0],))
        bias_arr, has_bias = bias, True
    check_disjoint(op, {"out": out}, {"x": x, "weight": weight, "bias": bias})
    if sizes is None:
        return out
    x5, w3, out4 = _views(x, weight, out, groups)
    prepare_blas()
    core(x5, w3, bias_arr, has_bias, out4, *sizes)
    return out


def conv2d_backward_input(
    grad_out: np.ndarray,
    weight: np.ndarray,
    grad_in: np.ndarray,
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
) -> np.ndarray:
    """Input gradient of :func:`conv2d_forward` (= transposed-conv forward), overwriting grad_in.

    ``grad_in[n, c, h, w] = sum over (co, i, j) with h = oh*sh - pt + i*dh, w = ow*sw - pl + j*dw
    of weight[co, c, i, j] * grad_out[n, co, oh, ow]``.

    Shapes: grad_out (N, Co, OH, OW), weight (Co, C/groups, KH, KW), grad_in (N, C, H, W).
    Loop nest: prange over (image, group, channel block); for row tile: GEMM
    ``W_g[:, block].T @ dout``, col2im scatter-add.

    >>> gi = np.empty((1, 1, 3, 3))
    >>> conv2d_backward_input(np.ones((1, 1, 2, 2)), np.ones((1, 1, 2, 2)), gi)[0, 0, 1]
    array([2., 4., 2.])
    """
    op = "conv2d_backward_input"
    check_float_arrays(op, grad_out=grad_out, weight=weight, grad_in=grad_in)
    core, sizes = _check_conv(
        op, "backward_input", grad_in.shape, weight.shape, grad_out.shape, stride, padding, dilation, groups
    )
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out, "weight": weight})
    if sizes is None:
        return grad_in
    dx5, w3, go4 = _views(grad_in, weight, grad_out, groups)
    prepare_blas()
    core(go4, w3, dx5, *sizes)
    return grad_in


def conv2d_backward_weight(
    x: np.ndarray,
    grad_out: np.ndarray,
    grad_weight: np.ndarray,
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
) -> np.ndarray:
    """Weight gradient of :func:`conv2d_forward`, overwriting grad_weight.

    ``grad_weight[co, c, i, j] = sum_{n, oh, ow} grad_out[n, co, oh, ow] *
    x[n, g*Cg + c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]``.

    Shapes: x (N, C, H, W), grad_out (N, Co, OH, OW), grad_weight (Co, C/groups, KH, KW).
    Loop nest: prange over (image, group, row tile): im2col, GEMM ``dout @ col.T`` into
    a per-thread accumulator; then the accumulators are summed.

    >>> gw = np.empty((1, 1, 2, 2))
    >>> conv2d_backward_weight(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2)), gw)[0, 0]
    array([[4., 4.],
           [4., 4.]])
    """
    op = "conv2d_backward_weight"
    check_float_arrays(op, x=x, grad_out=grad_out, grad_weight=grad_weight)
    core, sizes = _check_conv(
        op, "backward_weight", x.shape, grad_weight.shape, grad_out.shape, stride, padding, dilation, groups
    )
    check_disjoint(op, {"grad_weight": grad_weight}, {"x": x, "grad_out": grad_out})
    if sizes is None:
        grad_weight[...] = 0
        return grad_weight
    x5, gw3, go4 = _views(x, grad_weight, grad_out, groups)
    prepare_blas()
    core(x5, go4, gw3, *sizes)
    return grad_weight
