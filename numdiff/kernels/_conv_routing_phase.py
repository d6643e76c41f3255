"""When a forward runs as Winograd F(2x2, 2x2) over the input's phases
(numdiff.kernels._conv_phase_winograd): the rule :mod:`numdiff.kernels.conv` applies through
numdiff.kernels._conv_routing (which re-exports these names), with the measurements behind its
bounds. Read at call time, as the other rules."""

from __future__ import annotations

PHASE_WINOGRAD_MIN_CHANNELS = 24
"""Fewest input channels per group for the route: its 9 GEMMs have K = 4C, and its input transform
costs per input element about what the GEMMs save per multiply-add, so with few input channels the
transform dominates."""

PHASE_WINOGRAD_MIN_OUT_CHANNELS = 32
"""Fewest output channels per group: the GEMMs have M = Co rows, and with few the products save
less than the input transform costs."""

PHASE_WINOGRAD_MIN_TILES = 128
"""Fewest 2x2 output tiles over the batch (N * ceil(OH/2) * ceil(OW/2)): the filter transform
costs 9*Co*4C whatever the batch, and a small batch's GEMMs are a few columns wide.

The bounds, measured on an Intel Emerald Rapids (one thread, float32, thread CPU time, min of 7
alternating rounds, load 15-16; 30 shapes drawn with 8-512 channels, 1-64 images, 6-64 wide,
padding 0-2; phase Winograd / im2col ms): inside them 32x64->32 10 wide 1.04 / 1.35, 32x24->128 16
1.74 / 2.13, 16x24->32 24 0.70 / 0.76, 2x128->32 48 2.36 / 2.44, 64x24->256 8 1.63 / 1.68,
16x48->32 24 1.82 / 1.71; outside them, 16 input channels lost (64x16->8 12 0.69 / 0.58,
4x16->256 24 0.68 / 0.57), and so did few output channels (16x128->8 20 3.80 / 3.14, 32x48->4 24
2.31 / 2.05) and few tiles (2x256->128 6 1.02 / 0.23, 2x32->512 12 0.60 / 0.32, 8x512->4 8 1.17 /
0.65). The dcgan discriminator's layers (PyTorch's time in brackets): 32x32->64 16 wide 1.19-1.39
/ 1.30-1.73 (1.25-1.30), 32x64->128 8 wide 1.13-1.43 / 1.18-1.56 (1.56-1.72)."""

PHASE_WINOGRAD_BLOCK_ELEMENTS = 3 << 17
"""Target size of one block's transformed input and products together, in elements, as for
numdiff.kernels._winograd's blocks."""


PHASE_WINOGRAD_MAX_SPARE = 0.2
"""Most spare outputs the 2x2 tiles compute past an odd output's edge, as a fraction of the outputs:
a 5x5 output is 9 tiles, 36 outputs for 25 (measured, same protocol: 64x24->64 10 wide, padding 2,
1.13 / 0.94 ms; 32x128->64 8 wide unpadded, 3x3, 1.50 / 1.08), where a 6x6 one has none (64x24->64
12 wide 1.12 / 1.33)."""


def use_phase_winograd(kind, groups, kh, kw, sh, sw, dh, dw, pt, pl, cg, cog, n_img, oh_size, ow_size):
    """Whether the `kind` kernel of a convolution runs on the phase-split Winograd route: a forward
    with one group, a 4x4 filter at stride 2, undilated, padding not negative on top or left, from
    cg to cog channels, writing n_img outputs of oh_size x ow_size, within the bounds above."""
    tiles = ((oh_size + 1) // 2) * ((ow_size + 1) // 2)
    return (
        kind == "forward"
        and groups == 1
        and kh == kw == 4
        and sh == sw == 2
        and dh == dw == 1
        and min(pt, pl) >= 0
        and cg >= PHASE_WINOGRAD_MIN_CHANNELS
        and cog >= PHASE_WINOGRAD_MIN_OUT_CHANNELS
        and n_img * tiles >= PHASE_WINOGRAD_MIN_TILES
        and 4 * tiles <= (1 + PHASE_WINOGRAD_MAX_SPARE) * oh_size * ow_size
    )


def phase_winograd_images(n_img, cg, cog, oh_size, ow_size, parts):
    """Images in a block of the route: as many as keep its transformed input and products
    (``9 * (4*cg + cog)`` elements a 2x2 output tile) within :data:`PHASE_WINOGRAD_BLOCK_ELEMENTS`,
    at least one; few enough that every thread gets a block; equal blocks."""
    tiles = ((oh_size + 1) // 2) * ((ow_size + 1) // 2)
    fit = max(1, PHASE_WINOGRAD_BLOCK_ELEMENTS // (9 * (4 * cg + cog) * tiles))
    images = min(fit, -(-n_img // parts))
    blocks = -(-n_img // images)
    return -(-n_img // blocks)
