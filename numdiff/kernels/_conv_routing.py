"""Which convolution core runs, and how its work is cut: the routing rules that
:mod:`numdiff.kernels.conv` applies after checking a configuration (``conv._check_conv``), with
the measurements behind their thresholds.

Everything here is read at call time, and conv.py reads it through this module
(``routing.NAME``) and keeps no copies, so a test can lower a threshold or replace a rule with
``monkeypatch.setattr(_conv_routing, NAME, ...)`` and see the plan change. The flat weight
gradient's rule and bounds live in numdiff.kernels._conv_routing_flat (``use_flat_weight`` is
read through here), the phase-split Winograd forward's in numdiff.kernels._conv_routing_phase; the host tests that pick the ``*_AVX512`` bounds, in numdiff.kernels._conv_route.

Serial or parallel: a convolution below :data:`PARALLEL_MIN_MACS` multiply-adds runs the serial
build of its core (numdiff.kernels._parallel). im2col (numdiff.kernels._conv_cores, the method
in conv.py) takes whatever neither route below takes, in tiles of whole output rows
(:func:`im2col_tiles`).

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
there): stride-1, undilated 3x3 convolutions that pass :func:`use_direct` run as vectorised loops
over all the images' rows side by side, no GEMM. Measured (one thread, thread CPU time, direct /
what ran before, forward, input gradient, weight gradient): 32x16->32 8x8 0.82 0.92 0.66-0.69;
4x4 0.69 0.71 0.60; 6x6 0.65 0.66 0.68; 32x32->32 8x8 0.89 0.73 0.67; 8x64->64 8x8 0.80 0.80
0.84; 64x6->16 8x8 0.70 0.75 0.60; 128x32->64 7x7 0.74 0.73 0.75; 16x16->16 14x14 (im2col) 0.58
0.61 0.65; 32x16->32 12x12 (Winograd) 1.07 0.81 0.92; 16x16 1.20 1.03 0.98; 24x24 1.23 1.14
1.17; small batches: 2x16->32 8x8 0.86 1.42 0.99, 4x16->32 8x8 1.00 1.10 0.79, 8x16->32 8x8
0.95 0.90, 4x16->32 4x4 1.30 1.49; input gradient to 2 channels (64x2->16 8x8) 1.11.
Measured again against Winograd with 32-64 channels, the gradients lose beyond 8 wide (see
:data:`DIRECT_MAX_WIDTH`), unless an input gradient has few channels. Measured a third time on the
AVX2 machine the benchmarks run on: with 64 or more channels the direct loops lose to Winograd and
im2col (:data:`DIRECT_MAX_CHANNELS`), the weight gradient loses to im2col at every width, and a
forward with few channels wins at every width (:data:`DIRECT_MAX_IM2COL_WIDTH`).
"""

from __future__ import annotations

import functools

from numdiff.kernels import _conv_route
from numdiff.kernels._conv_route import full_width_avx512 as _full_width_avx512
from numdiff.kernels._conv_routing_flat import use_flat_weight as use_flat_weight
from numdiff.kernels._conv_routing_phase import phase_winograd_images as phase_winograd_images
from numdiff.kernels._conv_routing_phase import use_phase_winograd as use_phase_winograd

TILE_ELEMENTS = 1 << 17
"""Target size of one thread's im2col tile, in elements (512 KiB float32)."""

PARALLEL_MIN_MACS = 1 << 21
"""Multiply-adds below which a convolution runs on the calling thread (numdiff.kernels._parallel)."""

WINOGRAD_MIN_CHANNELS = 20
"""Harmonic mean of the input and output channels per group from which a 3x3 stride-1
convolution may run as Winograd: the GEMMs it saves grow with ``ci*co``, the transforms it adds
with ``ci + co``."""

WINOGRAD_MIN_GRADIENT_CHANNELS_AVX512 = 16
""":data:`WINOGRAD_MIN_CHANNELS` for the input and weight gradients where the im2col products run
on BLAS on a full-width AVX-512 host (:func:`_blas_on_full_width_avx512`; the forward keeps 20).
Measured on an Intel Emerald Rapids (one thread, float32, thread CPU time, min of 5-9 alternating
rounds, load 13-14; Winograd / what ran before, of PyTorch's time or ms): the small ResNet's
32x16->16 32x32 input gradient 1.00 / 1.48 (im2col), weight gradient 1.07 / 1.37 (im2col) and 1.86
(the flat weight gradient); 8x16->16 32x32 weight gradient 0.51 / 0.66 ms. With fewer channels it
does not pay: 8x8->8 64x64 0.99 / 0.88 ms, 8x16->8 32x32 0.39 / 0.37."""

WINOGRAD_MIN_WIDTH = {"forward": 8, "backward_input": 10, "backward_weight": 10}
"""Output width (the routine's: the input's for the input gradient) from which it may. The
forward wins from 4 wide (0.70 of im2col's time at 32x16->32 4x4), but the digits CNN's 4x4
convolution would then compile the Winograd forward core too on a cold start (measured 7.5 s
more, first call of an empty cache on a busy machine: 16.5 against 9.0 s), for 0.03 ms a step."""

DIRECT_MAX_WIDTH = {"forward": 8, "backward_input": 8, "backward_weight": 0}
"""Widest rows (the routine's: the input's for the input gradient) a direct loop writes instead
of Winograd's; instead of im2col's, up to :data:`DIRECT_MAX_IM2COL_WIDTH`. Measured (one thread,
thread CPU time, Winograd / direct, input gradient, weight gradient; N x Ci -> Co, width):
64x64->64 16 0.62 0.40; 64x32->64 16 0.81 0.60; 4x64->64 16 0.75 0.82; 16x48->48 16 0.68 0.55;
8x64->64 14 0.76 0.70; 32x64->64 12 0.55 0.43; 32x32->32 10 0.84 0.66; 64x32->32 10 0.89 0.60;
32x16->32 16 1.01 0.80; 32x16->32 12 1.25 0.82; 16x24->24 10 1.04 0.88; at 8 wide 64x32->64 0.91
0.62, 32x16->32 1.24 0.95, 8x64->64 0.80 1.23; 16x64->64 6 0.81 1.21; 16x128->128 4 1.30 2.03.
Before, both gradients ran direct up to 16 wide (cifar_bn's 64->64 16x16 layers at 1.9-2.3x
PyTorch's time). The input gradient's few-channel exception: :data:`DIRECT_MIN_WINOGRAD_CHANNELS`.
The weight gradient never runs direct: measured again on the 2-core AMD EPYC (AVX2) the benchmarks
run on (one thread, thread CPU time, best of 10 in 5 alternating rounds, load 6-7; direct / im2col,
N x Ci -> Co, width): 32x16->16 8 0.37 / 0.31; 16x16->16 14 0.56-0.61 / 0.41; 16x16->16 16 0.71 /
0.48; 32x32->32 8 1.32 / 1.03; 32x64->64 8 5.02 / 2.44; 32x128->128 4 4.83 / 2.55."""

DIRECT_MAX_IM2COL_WIDTH = {"forward": 256, "backward_input": 16, "backward_weight": 0}
"""Widest rows a direct loop writes where im2col would run instead (no Winograd). A forward with
few channels runs direct at any width measured (the same protocol as above, direct / im2col ms):
16x16->16 32 wide 3.37 / 5.73 (resnet's first stage); 16x32->9 32 2.29 / 5.88 (super_resolution's
last); 8x3->16 64 0.78 / 1.04 (unet's first); 64x3->32 32 3.35 / 3.78 (cifar_bn's first); not
benchmark shapes: 4x16->16 96 3.63 / 6.02, 2x8->16 128 1.88 / 2.83, 2x3->8 224 1.48 / 2.75,
16x8->16 48 1.86 / 3.05, 8x16->16 32 unpadded 0.74 / 1.23."""

DIRECT_MAX_CHANNELS = 32
"""Most channels (the routine's input or output channels per group, whichever is more) for a direct
loop: its cost per multiply-add grows with the channels it stages, and from 64 it loses to both
other routes (same protocol; direct / Winograd / im2col ms, forward, input gradient): 32x64->64 8
wide 3.35 / 2.20 / 3.08, 3.64 / 2.09 / 2.65; 32x128->128 4 wide 3.67 / 3.68 / 2.53, 3.25 / 3.53 /
2.53; at 32 channels they tie (32x32->32 8 wide 0.87 / 0.82 / 1.16, 0.96 / 0.92 / 1.13). On a CPU
that runs AVX-512 at full width the bound is :data:`DIRECT_MAX_CHANNELS_AVX512` instead."""

DIRECT_MAX_CHANNELS_AVX512 = 64
""":data:`DIRECT_MAX_CHANNELS` where the host runs 512-bit multiply-adds at full width (AVX-512, not
numdiff.kernels._conv_route.HALVED_AVX512_CPUS): the direct loops' vectors hold 16 floats, and up to
64 channels they beat the im2col and Winograd routes. Measured on an Intel Emerald Rapids (one
thread, float32, thread CPU time, min of 9 alternating rounds, load 12-15; 32 -> 64 as the bound,
N x Ci -> Co, size, ms forward / forward + input gradient, PyTorch 2.13 in brackets): 32x48->32 4x4
(cnn3d's last conv3d, as conv2d) 0.57 / 0.94 -> 0.17 / 0.37 (0.21 / 0.45); 32x64->64 4x4 0.88 /
1.87 -> 0.67 / 1.45 (0.37 / 0.78); 16x48->64 4x4 0.39 / 0.87 -> 0.35 / 0.61; 32x64->48 6x6 1.79 /
3.32 -> 0.96 / 2.08; 8x64->64 8x8 0.55 / 1.12 -> 0.38 / 0.81; 32x64->32 8x8 0.83 / 1.60 -> 0.68 /
1.40; 32x64->64 8x8 1.22 / 3.32 -> 1.25 / 2.74; 32x48->48 8x8 0.68 / 1.93 -> 0.79 / 1.66; 32x64->64
2x2 and 16x16 even. From 96 channels the direct loops gain nothing (16x96->96 8x8, 32x128->128
4x4). The forwards 8 wide run Winograd beside (and won or lost against it), so the bound holds only
where im2col is the other route: 8 wide, the input gradients, not the forwards."""

DIRECT_MIN_WINOGRAD_CHANNELS = 28
"""Harmonic mean of the channels below which an input gradient runs direct (up to
:data:`DIRECT_MAX_IM2COL_WIDTH` wide) even where Winograd may run: with few channels its
transforms cost more than its GEMMs save (32x16->32 12 wide: Winograd 1.25x the direct time,
16 wide 1.01x; 24->24 10 wide 1.04x; 32->32 0.84x)."""

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


def use_direct(kind, n_img, ci, co, out_h, out_w, winograd):
    """Whether the `kind` kernel of a stride-1, undilated 3x3 convolution from ci to co channels
    per group, writing out_h x out_w planes of n_img images, runs faster as a direct loop than as
    Winograd (where `winograd`) or im2col (see the module docstring for the measurements;
    :data:`DIRECT_MAX_CHANNELS` or, on a full-width AVX-512 CPU where im2col is the other route,
    :data:`DIRECT_MAX_CHANNELS_AVX512` bounds both ci and co). The caller checks :data:`DIRECT_MIN_MACS`."""
    few_channels = kind == "backward_input" and 2 * ci * co < DIRECT_MIN_WINOGRAD_CHANNELS * (ci + co)
    beside_winograd = winograd and not few_channels
    wide = not beside_winograd  # the wider channel bound is measured against im2col alone
    widest = (
        DIRECT_MAX_WIDTH[kind]
        if beside_winograd
        else max(DIRECT_MAX_WIDTH[kind], DIRECT_MAX_IM2COL_WIDTH[kind])
    )
    return (
        out_w <= widest
        and n_img * out_w >= DIRECT_MIN_ROW
        and n_img * out_h * out_w >= DIRECT_MIN_POSITIONS[kind]
        and DIRECT_MIN_CHANNELS <= co
        and max(ci, co) <= (DIRECT_MAX_CHANNELS_AVX512 if wide and _full_width_avx512() else DIRECT_MAX_CHANNELS)
    )


def use_winograd(kind, ci, co, out_w):
    """Whether the `kind` kernel of a stride-1, undilated 3x3 convolution from ci to co channels
    per group, writing rows of out_w, runs faster as Winograd F(2x2, 3x3) than as im2col (see
    the module docstring and :data:`WINOGRAD_MIN_GRADIENT_CHANNELS_AVX512` for the measurements
    behind the bounds)."""
    least = WINOGRAD_MIN_CHANNELS
    if kind != "forward" and _conv_route.blas_on_full_width_avx512():
        least = min(least, WINOGRAD_MIN_GRADIENT_CHANNELS_AVX512)
    return 2 * ci * co >= least * (ci + co) and out_w >= WINOGRAD_MIN_WIDTH[kind]


def direct_images(n_img, cog, oh_size, ow_size, parts):
    """The images in a block of a direct loop writing (or reading the gradient of) cog planes of
    oh_size x ow_size: as many as keep them and the staged input (about ``(cog + 4) * (oh_size +
    2) * ow_size`` elements an image) within :data:`DIRECT_BLOCK_ELEMENTS`, at least one; few
    enough that every thread gets a block, and equal blocks."""
    fit = max(1, DIRECT_BLOCK_ELEMENTS // ((cog + 4) * (oh_size + 2) * ow_size))
    images = min(fit, -(-n_img // parts))
    blocks = -(-n_img // images)
    return -(-n_img // blocks)


def winograd_blocks(n_img, tiles_h, channels, qc, parts):
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


def im2col_tiles(n_img, groups, k, oh_size, ow_size, cg, parts):
    """``(rows, blocks)`` of the im2col cores: a tile is `rows` whole output rows, as many as keep
    its column buffer (k = Cg*KH*KW, rows*ow_size) within :data:`TILE_ELEMENTS`, at least one;
    the input gradient's work items are `blocks` blocks of an image's cg input channels. With
    fewer images x groups than threads, tiles (or channel blocks) are made smaller so every
    thread gets work. Tiles are equal."""
    rows = max(1, min(oh_size, TILE_ELEMENTS // max(1, k * ow_size)))
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
    return -(-oh_size // tiles), blocks


GROUPED_DIRECT_MAX_CHANNELS = 8
"""Most input channels per group (Cg) for which a grouped convolution (groups > 1) runs as the
direct per-group stencil of numdiff.kernels._conv_grouped instead of im2col, whatever its kernel
size, stride, padding or dilation: with Cg*KH*KW deep GEMMs of Cog rows, im2col's per-group
products and column gathers cost more than the stencil's loads."""


def use_grouped_direct(groups, cg):
    """Whether a convolution with `groups` groups of `cg` input channels runs as the direct
    per-group stencil (depthwise convolutions, cg = 1, and grouped ones with few channels a
    group); see :data:`GROUPED_DIRECT_MAX_CHANNELS`."""
    return groups > 1 and cg <= GROUPED_DIRECT_MAX_CHANNELS


DEPTHWISE_LAST_MAX_WIDTH = {"forward": (8, 8), "backward_input": (8, 8), "backward_weight": (8, 16)}
"""Widest output rows (OW), at stride 1 and at a larger stride, for which a depthwise convolution's
`kind` (one input and one output channel a group) runs with the channels innermost
(numdiff.kernels._conv_depthwise) instead of the per-group stencil, whose runs carry (KW-1)*dw//sw
padding columns a row and whose stride phases are staged apart. One thread, float32, thread CPU
time, stencil -> channels innermost, ms.

Forward (load 5-15): N32 C96 16x16 3x3 stride 2: 1.20 -> 0.77; N32 C144 8x8 5x5: 1.07 -> 0.79;
N32 C240 8x8 5x5 stride 2: 1.68 -> 0.61; N32 C576 4x4 3x3: 1.49 -> 0.55; N8 C24 15x15 3x3 stride 2
dilation 2: 0.08 -> 0.06. Wider rows lose: N32 C32 32x32 3x3: 1.81 -> 2.93; N16 C64 16x16 7x7:
1.20 -> 1.60.

Input gradient (load 10; input sizes, OW in brackets): N16 C64 16x16 3x3 s2 [8]: 0.28 -> 0.26;
N16 C96 8x8 3x3 [8]: 0.21 -> 0.22; N16 C96 8x8 3x3 s2 [4]: 0.21 -> 0.10; N32 C144 8x8 5x5 [8]: 1.01
-> 0.89; N32 C240 8x8 5x5 s2 [4]: 1.21 -> 0.71; N32 C576 4x4 3x3 [4]: 1.22 -> 0.63; N32 C96 16x16
3x3 s2 [8]: 1.06 -> 0.88. Wider rows lose at either stride: N16 C48 12x12 3x3 [12]: 0.19 -> 0.27;
N32 C40 24x24 5x5 s2 [12]: 1.03 -> 1.35; N32 C32 32x32 3x3 s2 [16]: 0.78 -> 1.14.

Weight gradient (same shapes): 0.39 -> 0.30, 0.27 -> 0.24, 0.26 -> 0.11, 2.88 -> 1.11, 2.85 ->
0.87, 1.93 -> 0.77, 2.42 -> 1.14; strided wider rows still win (the stencil stages each stride
phase apart): N32 C40 24x24 5x5 s2 [12]: 2.45 -> 1.62, N32 C32 32x32 3x3 s2 [16]: 2.27 -> 1.57;
stride-1 wider rows do not: N16 C48 12x12 3x3 [12]: 0.23 -> 0.27, N32 C64 16x16 3x3 [16]: 1.24 ->
1.30, N8 C128 14x14 7x7 [14]: 1.12 -> 1.16."""

DEPTHWISE_LAST_MIN_CHANNELS = 8
"""Fewest channels for that route: its vectors run along the channels."""


def use_depthwise_last(kind, channels, cg, cog, ow_size, stride):
    """Whether a depthwise convolution's `kind` ("forward", "backward_input", "backward_weight")
    over `channels` channels (`cg` = `cog` = 1) writing rows of `ow_size` with the largest stride
    `stride` runs with the channels innermost; see :data:`DEPTHWISE_LAST_MAX_WIDTH`."""
    return (
        cg == 1
        and cog == 1
        and channels >= DEPTHWISE_LAST_MIN_CHANNELS
        and ow_size <= DEPTHWISE_LAST_MAX_WIDTH[kind][stride > 1]
    )


GROUPED_BLOCK_ELEMENTS = 1 << 15
"""Target size of one work item's staged input and output runs in the grouped stencil, in
elements (128 KiB float32: a core's share of L2)."""


def grouped_images(n_img, groups, cg, cog, kh, kw, sh, sw, dh, dw, oh_size, ow_size, parts):
    """Images in a block of the grouped stencil (numdiff.kernels._conv_grouped): as many as keep a
    block's staged input (cg channels of sh*sw phase planes an image) and its cog output runs
    within :data:`GROUPED_BLOCK_ELEMENTS`, at least one; few enough that groups x blocks gives
    every thread work; equal blocks."""
    plane = (oh_size + (kh - 1) * dh // sh) * (ow_size + (kw - 1) * dw // sw)
    images = max(1, min(n_img, GROUPED_BLOCK_ELEMENTS // ((cg * sh * sw + cog) * plane)))
    if groups * -(-n_img // images) < parts:
        images = min(images, -(-n_img // -(-parts // groups)))
    blocks = -(-n_img // images)
    return -(-n_img // blocks)


NARROW_MAX_CHANNELS = 4
"""Most output channels per group for which a stride-1 forward runs the direct narrow loop
(numdiff.kernels._conv_narrow) instead of im2col; see :func:`use_narrow`."""


def use_narrow(cog, cg, taps, ow_size):
    """Whether a stride-1 forward to `cog` output channels per group from `cg` input channels
    with `taps` filter taps, writing rows of `ow_size`, runs the direct narrow loop: few output
    channels (im2col's GEMM would have M = cog rows), at least 9 taps x channels (below, the
    im2col column buffer is small and cheap) and rows of at least 8 (the loop's vectors)."""
    return cog <= NARROW_MAX_CHANNELS and cg * taps >= 9 and ow_size >= 8


BATCHED_MAX_POSITIONS = 256
"""Most output positions per image (OH*OW) for which a forward's im2col route runs several images
per GEMM (numdiff.kernels._conv_batched); see :func:`batched_images`. Per image, a product of
OH*OW columns is short for the loops' vectors (a row of 60 is 3 vectors of 16 and a scalar tail),
and a strided image's rows are gathered a few columns at a time. Measured on the AVX-512 Zen 5
with OpenBLAS's Haswell kernels (one thread, thread CPU time, min of 9 alternating reps, load
2-4; forward, numdiff / PyTorch; N x Ci -> Co, size, kernel, stride; per image (bound 32) /
batched (256)): conv1d 32x128->128 64 k5 2.18 / 1.72; conv1d 16x64->64 100 k9 s2 2.34 / 1.70;
conv1d 32x48->64 128 k3 1.90 / 1.65; 32x64->128 16x16 k3 s2 2.12 / 1.60; 32x32->64 32x32 k3 s2
1.25 / 1.06; 8x256->256 32x32 k3 s2 1.54 / 1.32; 8x64->64 18x18 k5 2.29 / 2.05. Even (+-10%):
96x32->64 12x12 k5 and k3, 1x64->64 56x56 k3, conv1d 8x256->256 200 k5."""

BATCHED_GRADIENT_MAX_POSITIONS = 32
"""The same bound for the input gradient, and for a weight gradient whose one image's patches
(K*OH*OW) exceed :data:`TILE_ELEMENTS`; other weight gradients batch up to
:data:`BATCHED_MAX_POSITIONS`, since their core gathers the patches transposed and runs
``dout (Cog, T) @ colT (T, K)``. Measured (one thread, thread CPU time, min of 9 alternating
reps, load 5-11; numdiff / PyTorch ms, per image -> batched; the dcgan rows' convolutions, as
conv or conv_transpose weight gradients): conv 32x32->64 16x16 k4 s2 1.86 -> 1.21 / 0.87-0.95;
conv 32x64->128 8x8 k4 s2 1.62 -> 1.15 / 0.84; convT 32x128->64 4x4 k4 s2 1.57 -> 1.00 / 0.86;
convT 32x64->128 1x1 k4 (batched before, (K, Cog) product) 0.31 -> 0.15 / 0.28; conv 32x128->1
4x4 k4 0.15 -> 0.08 / 0.09. Before that, the input and weight gradients' batched cores scatter-add each
image's patch gradients through the offset table, or copy the output gradients side by side and
accumulate ``col @ dout.T``, and batching to 256 positions measured no faster or slower (us a
position, per image / batched, input gradient of conv1d 32 x Ci -> Co, length, kernel: 48->48
130 k3 4.4 / 5.1, 192 k3 4.3 / 5.0, 128x128 64 k5 38.7 / 43.3, but 68 k5 52.8 / 45.0; forward +
weight gradient over PyTorch: 96x32->64 12x12 k5 1.53 / 1.76, conv1d 32x128->128 64 k5 1.61 /
1.76, 32x64->128 16x16 k3 s2 1.58 / 1.72)."""

BATCHED_MIN_DEPTH_AVX512 = 144
"""Where the im2col products run on BLAS on a full-width AVX-512 host
(numdiff.kernels._conv_route.blas_on_full_width_avx512), a weight gradient batches only up to
:data:`BATCHED_GRADIENT_MAX_POSITIONS` positions an image, as an input gradient does, and a forward
of more positions only with at least this many patch rows (K = Cg*KH*KW): BLAS runs the per-image
products near its peak there, and the batched cores' staging of each whole zero-padded image and
their copies to and from the side-by-side block cost more than the per-image GEMMs lose. Measured on
an Intel Emerald Rapids (one thread, float32, thread CPU time, min of 9-15 alternating rounds, load
13-17; N x Ci -> Co, size, kernel, stride: batched / per image ms). Forward: 32x16->32 32 1x1 s2
(resnet's shortcut) 0.93 / 0.42; 32x32->64 16 1x1 s2 0.31 / 0.17; 8x32->64 32 2x2 s2 (unet) 1.49 /
0.91 of PyTorch's time; 32x3->32 32 4x4 s2 (dcgan's first) 0.57 / 0.47; 16x3->16 32 3x3 s2
(efficientnet's stem) 1.51 / 0.84 of PyTorch's; from K = 144 even or batched ahead (32x16->32 32
3x3 s2 2.04 / 2.21, 32x32->64 16 4x4 s2 1.84 / 2.08). Weight gradient: 32x32->64 16 4x4 s2 1.91 /
1.79; 32x64->64 8 3x3 1.92 / 1.76; 32x16->32 32 3x3 s2 1.81 / 1.51; 32x32->64 16 3x3 s2 1.24 /
1.12; 64x24->16 8 3x3 (cnn3d) 0.91 / 0.70; 32x16->32 32 1x1 s2 0.57 / 0.36; but at 16 positions an
image batched still wins (32x48->48 8 3x3 s2 0.35 / 0.52, 32x64->128 8 4x4 s2 1.49 / 2.12)."""

BATCHED_MAX_IMAGE_ELEMENTS = 1 << 20
"""Most patch elements of one image (K*OH*OW) for which a forward of more than
:data:`BATCHED_GRADIENT_MAX_POSITIONS` positions an image runs batched: the batched cores gather
one whole image's patches, through a table of K*OH*OW int64 offsets, where the per-image cores
cut it into tiles of :data:`TILE_ELEMENTS` (at the bound, 4 MiB of float32 patches and 8 MiB of
offsets)."""


def batched_images(n_img, k, positions, parts, kind="forward", host_rule=True):
    """Images per GEMM of the batched cores for the `kind` kernel ("forward", "backward_input" or
    "backward_weight") of a convolution with `positions` output positions an image and K =
    Cg*KH*KW, or 0 where the per-image im2col cores run instead: more than
    :data:`BATCHED_MAX_POSITIONS` positions, or :data:`BATCHED_GRADIENT_MAX_POSITIONS` for an
    input gradient, or more than that with more than :data:`BATCHED_MAX_IMAGE_ELEMENTS` patch
    elements an image (a forward) or :data:`TILE_ELEMENTS` (a weight gradient), or where
    :data:`BATCHED_MIN_DEPTH_AVX512`'s host rule says so. Else at most as many as keep a column block (K, images*positions) within
    :data:`TILE_ELEMENTS`, at least one; few enough that every thread gets a block; and of those,
    the largest that gives the busiest thread about the fewest images (:func:`busiest_share`).
    `host_rule=False` leaves the host rule out (compile's tuner offers that plan too)."""
    if positions > BATCHED_MAX_POSITIONS:
        return 0
    if positions > BATCHED_GRADIENT_MAX_POSITIONS:
        wide_blas = host_rule and _conv_route.blas_on_full_width_avx512()
        if kind == "backward_input" or (wide_blas and (kind == "backward_weight" or k < BATCHED_MIN_DEPTH_AVX512)):
            return 0
        # The weight gradient's product re-reads its (images*P, K) patch block once per 4 output
        # channels: one image's patches must fit the tile (a 2x64->64 4x4 stride-4 gradient,
        # K*P = 256 Ki, measured 1.57 ms batched against 0.82 per image).
        if k * positions > (BATCHED_MAX_IMAGE_ELEMENTS if kind == "forward" else TILE_ELEMENTS):
            return 0
    most = max(1, min(TILE_ELEMENTS // max(1, k * positions), -(-n_img // parts)))
    return _balanced_block(n_img, most, parts)


@functools.lru_cache(maxsize=1024)
def _balanced_block(total, most, parts):
    """The largest equal block size up to `most` whose blocks of `total` units, dealt round-robin
    to `parts` threads, give the busiest thread at most 5% more units than the best size does
    (larger blocks are larger GEMMs). Equal blocks of the largest size alone left 64 images in
    blocks of 22, 22, 20 on 2 threads: 42 against 22."""
    # Equal blocks only: b blocks of ceil(total / b) (32 rows in tiles of 28 and 4 would run one
    # inefficient small GEMM).
    sizes = {-(-total // blocks) for blocks in range(-(-total // most), total + 1)}
    shares = {size: busiest_share(total, size, parts) for size in sizes}
    least = min(shares.values())
    return max(size for size, share in shares.items() if share <= 1.05 * least)


def busiest_share(total, size, parts):
    """Units the busiest of `parts` threads gets when `total` units go out in blocks of `size`
    (the last one short), block b to thread b % parts, as the batched cores deal them."""
    blocks = -(-total // size)
    full = total // size
    shares = [size * (full // parts + (1 if t < full % parts else 0)) for t in range(parts)]
    if full < blocks:
        shares[full % parts] += total - full * size
    return max(shares)


def gather_input_gradient(cog, cg, stride):
    """Whether the input gradient of a stride-1 convolution from cg to cog channels per group,
    which the im2col route would compute, runs as a forward convolution of the output gradient
    instead (numdiff.kernels.conv): where cog is at most half of cg, it gathers cog*KH*KW rows of
    patches instead of scattering cg*KH*KW. Measured (one thread, thread CPU time): style
    transfer's last 9x9 convolution, 4 x 16 -> 3 on 64x64, 9.2 -> 4.7 ms; 16 x 32 -> 9 3x3 on 32x32
    (super_resolution's last) 2.9 -> 2.2; 8 x 64 -> 16 5x5 on 20x20 5.0 -> 3.8; 4 x 32 -> 16 7x7 on 48x48
    13.2 -> 12.2; 8 x 24 -> 12 3x3 on 28x28 1.18 -> 1.00."""
    return stride == (1, 1) and 2 * cog <= cg
