"""Convolution kernels (CPU, Numba): conv1d/conv2d forward, backward_input, backward_weight.

Method: im2col + a matrix product, tiled by output rows. For one image n, group g and a tile of output
rows, the patches are gathered into ``col`` (K, T) with ``K = Cg*KH*KW`` and ``T`` the tile's
output positions, then

* forward:          ``out[n, g-block, tile] = W_g (Cog, K) @ col``   (written in place)
* backward_input:   ``dcol = W_g[:, block].T @ dout[n, g-block, tile]``, then col2im scatter-add
* backward_weight:  ``dW_g.T += col @ dout[n, g-block, tile].T``     (per-thread accumulator)

Tiles hold whole output rows, as many as keep ``K*T <= TILE_ELEMENTS`` (at least one row; the
rule and its threshold are in numdiff.kernels._conv_routing), so ``col`` stays near the core's
L2 cache while the product reads it. Extra memory per call is bounded by
``threads * max(TILE_ELEMENTS, K*OW)`` elements for the column buffers, plus per thread a
zero-padded copy of the input rows one tile reads (numdiff.kernels._im2col), plus, for
backward_weight, one weight-sized accumulator per thread; never a whole-batch im2col.
A 1x1, stride-1, unpadded convolution skips im2col and hands the product the input planes directly.
Small outputs (at most ``routing.BATCHED_MAX_POSITIONS`` positions an image for a forward, 32 for
the gradients: a strided 4x4 convolution down to 4x4 or 1x1) run several images side by side in one GEMM instead
(numdiff.kernels._conv_batched): one image's GEMM there is a few columns wide.

Parallelism: work items are (image, group, tile) for forward and backward_weight, and
(image, group, channel block) for backward_input, so that two threads never scatter into the
same input element; items go round-robin to the Numba threads and each thread runs the
products of its own items (numdiff.kernels._conv_products: Numba loops, 512 bits wide where the
core has AVX-512, which ran these short products 1.6-3x faster than SciPy's OpenBLAS's AVX2
kernels, or one BLAS call; the process's route, numdiff.kernels._conv_route, picks which). When there are fewer images x groups than threads, tiles (or channel blocks)
are made smaller so every thread gets work.

Measured alternatives: whole-image im2col with threaded BLAS spent more time in the (serial)
gather than in the GEMM on the 8x64x56x56 k3 workload; batching several images into one wide
GEMM did not beat per-image tiles (measured again for 8x8 to 28x28 outputs, forward and weight
gradient, 4 to 32 images per GEMM: 5-100% slower, the copies to and from the (N, C, H, W) layout
included). With im2col vectorised (see numdiff.kernels._im2col), the GEMMs are 65-80% of each
kernel's time, and the gap to PyTorch's oneDNN direct convolution is GEMM efficiency: SciPy's
OpenBLAS runs these short products, e.g. (32x144)@(144x1024), at 55-60% of the fp32 peak where
oneDNN reaches 75-80% (NumPy's own OpenBLAS 0.3.31 was 10-20% faster on the forward products and
no faster on the backward ones). On AMD Zen 5, where OpenBLAS runs its AVX2 ("Haswell")
kernels at 40-60 GFLOP/s on these products, they run in numdiff.kernels._conv_products's loops
(100-135 GFLOP/s; the dcgan step 1.48 -> 1.24x PyTorch's time); where OpenBLAS runs its own
AVX-512 (SkylakeX) kernels, BLAS stays faster (numdiff.kernels._conv_route).
For small images 3x3 convolutions run as direct loop nests
instead, 512 bits wide (numdiff.kernels._vecmath.wide_vectors: LLVM's tuning for this Xeon
prefers 256-bit vectors unless a function asks), at 65-80% of the float32 peak.

Which core runs (im2col, batched im2col, the Winograd route of numdiff.kernels._winograd or the direct route of
numdiff.kernels._conv_direct and _conv_direct_forward; for a stride-2 4x4 forward, Winograd F(2x2, 2x2) over the
input's phases, numdiff.kernels._conv_phase_winograd), its serial or parallel build, and how its
work is cut into items: the rules of numdiff.kernels._conv_routing, with the measurements behind
each threshold; :func:`_check_conv` applies them.

Transposed convolution needs no kernel of its own: ``conv_transpose`` forward is
:func:`conv2d_backward_input` and its input gradient is :func:`conv2d_forward`; its weight
gradient is :func:`conv2d_backward_weight` with input and output-gradient swapped. conv1d is
conv2d with H = 1 (numdiff.ops.conv reshapes, no copy), and its forward runs as one product per
filter tap over staged rows where the products run as Numba loops (numdiff.kernels._conv_rows);
the bias gradient is a plain sum.

Padding is explicit per side, ``(top, bottom, left, right)``; the op layer resolves
``"same"``/``"valid"`` and output_padding (a transposed conv's output_padding is bottom/right
padding reduced by that amount, which may go negative: a negative pad crops). Output sizes must
satisfy ``OH = (H + top + bottom - dh*(KH-1) - 1) // sh + 1`` (and likewise OW), checked before
any compiled code runs, as are the argument ranges (numdiff._ground.args: no index arithmetic
can overflow), that no output overlaps an input, and the empty cases: a batch of 0 images
computes nothing and gives a zero weight gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._ground.conv_geometry import conv2d_geometry, conv_output_size
from numdiff.kernels import _conv_families as families
from numdiff.kernels import _conv_routing as routing
from numdiff.kernels._blas import prepare_blas
from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_shape
from numdiff.kernels._conv_batched import PHASE_MIN_RUN
from numdiff.kernels._conv_flat_weight import flat_backward_weight_core
from numdiff.kernels._conv_narrow import narrow_forward_core
from numdiff.kernels._conv_phase_winograd import phase_winograd_forward_core
from numdiff.kernels._conv_route import conv_route
from numdiff.kernels._conv_rows import rows_cores, rows_images, staged_length, use_rows

__all__ = [
    "conv_output_size",
    "conv2d_forward",
    "conv2d_backward_input",
    "conv2d_backward_weight",
    "conv2d_plan",
    "conv2d_views",
]


def _check_conv(op, kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups, routing=routing):
    """Validate a conv2d configuration; return the build of the core to run for `kind` (serial
    below ``routing.PARALLEL_MIN_MACS``; direct or Winograd where ``routing.use_direct`` or
    ``routing.use_winograd`` says so, else im2col) and the sizes it takes, or (None, None) for an
    empty batch, where there is nothing to compute. `routing` is the module of rules, or
    numdiff.kernels._conv_plans's view of it with some decisions fixed."""
    n_img, _, height, width, c_out, cg, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, groups, oh_size, ow_size = (
        conv2d_geometry(op, x_shape, w_shape, go_shape, stride, padding, dilation, groups)
    )
    if n_img == 0:
        return None, None
    macs = n_img * c_out * cg * kh * kw * oh_size * ow_size
    if routing.use_grouped_direct(groups, cg):
        cog = c_out // groups
        if routing.use_depthwise_last(kind, groups, cg, cog, ow_size, max(sh, sw)):
            kernel, parts = families.DEPTHWISE_CORES[kind].pick(macs, routing.PARALLEL_MIN_MACS)
            return kernel, (kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts)
        kernel, parts = families.GROUPED_CORES[kind].pick(macs, routing.PARALLEL_MIN_MACS)
        images = routing.grouped_images(
            n_img, groups, cg, cog, kh, kw, sh, sw, dh, dw, oh_size, ow_size, parts
        )
        return kernel, (kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts)
    if kind in rows_cores and use_rows(height, kh, pt, pb, kw, sw, pl, pr, conv_route().loops):
        kernel, parts = rows_cores[kind].pick(macs, routing.PARALLEL_MIN_MACS)
        images = rows_images(n_img, groups, staged_length(kw, sw, dw, ow_size), parts)
        return kernel, (kw, sw, pl, dw, ow_size, images, parts)
    winograd_3x3 = kh == kw == 3 and sh == sw == dh == dw == 1
    if kind == "backward_weight" and routing.use_flat_weight(
        n_img,
        c_out // groups,
        kh * kw,
        max(sh, sw),
        oh_size,
        ow_size,
        winograd_3x3 and routing.use_winograd(kind, cg, c_out // groups, ow_size),
    ):
        kernel, parts = flat_backward_weight_core.pick(macs, routing.PARALLEL_MIN_MACS)
        return kernel, (kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts)
    if winograd_3x3:
        cog = c_out // groups
        if kind == "backward_input":
            # The input gradient is a 3x3 convolution of the output gradient: Cog -> Cg channels,
            # written at the input's size, padded by 2 - pad.
            ci, co, out_h, out_w, top, left = cog, cg, height, width, 2 - pt, 2 - pl
        else:
            ci, co, out_h, out_w, top, left = cg, cog, oh_size, ow_size, pt, pl
        winograd = routing.use_winograd(kind, ci, co, out_w)
        if macs >= routing.DIRECT_MIN_MACS and routing.use_direct(
            kind, n_img, ci, co, out_h, out_w, winograd
        ):
            kernel, parts = families.DIRECT_CORES[kind].pick(macs, routing.PARALLEL_MIN_MACS)
            images = routing.direct_images(n_img, co, out_h, out_w, parts)
            return kernel, (top, left, oh_size, ow_size, images, parts)
        if winograd:
            kernel, parts = families.WINOGRAD_CORES[kind].pick(macs, routing.PARALLEL_MIN_MACS)
            images, rows = routing.winograd_blocks(
                n_img, (out_h + 1) // 2, groups * (ci + co), (out_w + 1) // 2 + 1, parts
            )
            # (oh_size, ow_size): the forward output's size, which is the routine's output or,
            # for the input gradient, its input.
            return kernel, (top, left, oh_size, ow_size, images, rows, parts)
    if kind == "forward" and sh == sw == 1 and routing.use_narrow(c_out // groups, cg, kh * kw, ow_size):
        kernel, parts = narrow_forward_core.pick(macs, routing.PARALLEL_MIN_MACS)
        return kernel, (kh, kw, pt, pl, dh, dw, oh_size, ow_size, parts)
    if routing.use_phase_winograd(
        kind, groups, kh, kw, sh, sw, dh, dw, pt, pl, cg, c_out // groups, n_img, oh_size, ow_size
    ):
        kernel, parts = phase_winograd_forward_core.pick(macs, routing.PARALLEL_MIN_MACS)
        images = routing.phase_winograd_images(n_img, cg, c_out, oh_size, ow_size, parts)
        return kernel, (pt, pl, oh_size, ow_size, images, parts)
    pointwise = kh == 1 and kw == 1 and sh == 1 and sw == 1 and pt == pb == pl == pr == 0
    if not pointwise:
        kernel, parts = families.BATCHED_CORES[kind].pick(macs, routing.PARALLEL_MIN_MACS)
        # A strided input gradient (a transposed convolution's forward) with output rows of
        # PHASE_MIN_RUN or more scatters unit-stride runs (_conv_batched.scatter_phases_add), where
        # the per-image cores scatter with the stride: batched as far as a forward (measured, one
        # thread, float32, load 14, per image -> batched: convT 32x64->32 8x8 k4 s2 1.65-1.84 ->
        # 1.05-1.09 ms, torch 0.88; conv 32x32->64 32x32 k4 s2 forward + input gradient 9.5-9.8 ->
        # 8.2, torch 8.4; at stride 1 it measured even or slower, conv1d 32x48->48 128 k3 1.09-1.21
        # -> 1.16-1.18, 16x64->64 16x16 3x3 4.9-5.0 -> 5.0-5.2).
        strided_runs = kind == "backward_input" and sw > 1 and ow_size >= PHASE_MIN_RUN
        images = routing.batched_images(
            n_img, cg * kh * kw, oh_size * ow_size, parts, "forward" if strided_runs else kind
        )
        if images:
            loops = conv_route().cores_flag
            return kernel, (kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, images, parts, loops)
    kernel, parts = families.CORES[kind].pick(macs, routing.PARALLEL_MIN_MACS)
    rows, blocks = routing.im2col_tiles(n_img, groups, cg * kh * kw, oh_size, ow_size, cg, parts)
    loops = conv_route().cores_flag  # the products' route (numdiff.kernels._conv_route), the cores' last argument
    return kernel, (kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, rows, pointwise, blocks, parts, loops)


def conv2d_plan(kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups, rules=routing):
    """What the conv2d kernel `kind` ("forward", "backward_input" or "backward_weight") runs for
    these shapes: ``(core, sizes)``, the compiled core and the sizes after its array arguments,
    or (None, None) for an empty batch. Raises as the kernel does for a bad configuration.

    This is the kernels' whole plan: numdiff.compile works it out once per traced graph and then
    calls the core itself on views of C-contiguous arrays of these shapes (see :func:`conv2d_views`).
    `rules` replaces numdiff.kernels._conv_routing (numdiff.kernels._conv_plans: the other plans).

    >>> core, sizes = conv2d_plan("forward", (1, 1, 3, 3), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1), (0, 0, 0, 0), (1, 1), 1)
    >>> sizes[:4]
    (2, 2, 1, 1)
    """
    op = f"conv2d_{kind}"
    return _check_conv(op, kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups, rules)


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
    core, sizes = _check_conv(
        op, "forward", x.shape, weight.shape, out.shape, stride, padding, dilation, groups
    )
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
    prepare_blas(x.dtype)
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
    if backward_input_gathers(core, weight.shape, stride, groups):
        return _backward_input_as_forward(grad_out, weight, grad_in, padding, dilation, groups)
    dx5, w3, go4 = _views(grad_in, weight, grad_out, groups)
    prepare_blas(grad_in.dtype)
    core(go4, w3, dx5, *sizes)
    return grad_in


def backward_input_gathers(core: Any, weight_shape: tuple, stride: tuple, groups: int) -> bool:
    """Whether :func:`conv2d_backward_input`, planned to run `core` (:func:`conv2d_plan`), runs as a
    forward convolution of the flipped weight instead (_conv_routing.gather_input_gradient); a caller
    of the planned core (numdiff.compile) then calls conv2d_backward_input itself.

    >>> core, _ = conv2d_plan("backward_input", (3, 16, 14, 14), (2, 16, 3, 3), (3, 2, 12, 12), (1, 1), (0,) * 4,
    ...                       (1, 1), 1)
    >>> backward_input_gathers(core, (2, 16, 3, 3), (1, 1), 1), backward_input_gathers(core, (2, 16, 3, 3), (2, 2), 1)
    (True, False)
    """
    return core in families.CORES["backward_input"] and routing.gather_input_gradient(
        weight_shape[0] // groups, weight_shape[1], tuple(stride)
    )


def _backward_input_as_forward(grad_out, weight, grad_in, padding, dilation, groups):
    """The input gradient of a stride-1 convolution as a forward convolution of the output
    gradient with the flipped weight, channels swapped per group: ``grad_in[h] = sum_i
    grad_out[h + pt - i*dh] w[i]`` reads output rows from ``(KH-1)*dh - pt`` above, so the pads
    become ``(KH-1)*dh - pt`` on top and whatever gives grad_in's height below (likewise for
    columns). Gathers Cog*KH*KW rows of patches where the scatter-add route writes Cg*KH*KW."""
    co, cg, kh, kw = weight.shape
    cog = co // groups
    flipped = weight.reshape(groups, cog, cg, kh, kw).transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1]
    flipped = np.ascontiguousarray(flipped).reshape(groups * cg, cog, kh, kw)
    height, width = grad_in.shape[2:]
    out_h, out_w = grad_out.shape[2:]
    top, left = (kh - 1) * dilation[0] - padding[0], (kw - 1) * dilation[1] - padding[2]
    bottom = height - out_h - top + (kh - 1) * dilation[0]
    right = width - out_w - left + (kw - 1) * dilation[1]
    return conv2d_forward(
        grad_out, flipped, None, grad_in, (1, 1), (top, bottom, left, right), dilation, groups
    )


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
    prepare_blas(x.dtype)
    core(x5, go4, gw3, *sizes)
    return grad_weight
