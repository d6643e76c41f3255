"""When a weight gradient runs as the flat dot products of numdiff.kernels._conv_flat_weight: the
rule :mod:`numdiff.kernels.conv` applies through numdiff.kernels._conv_routing (which re-exports
these names), with the measurements behind its bounds. Read at call time, as the other rules."""

from __future__ import annotations

from numdiff.kernels import _conv_route

FLAT_WEIGHT_MAX_CHANNELS = {1: 64, 2: 32}
"""Most output channels per group for which a weight gradient of stride 1 or 2 (the larger of the
two) runs as dot products over padded planes (numdiff.kernels._conv_flat_weight); see
:func:`use_flat_weight`."""

FLAT_WEIGHT_MIN_POSITIONS = 256
"""Fewest output positions an image (OH*OW) for the flat weight gradient: each dot product's
partial sums are reduced per tap, which short planes do not pay for."""


FLAT_WEIGHT_MAX_CHANNELS_AVX512 = 4
"""Most output channels per group for the flat weight gradient where the im2col products run on
BLAS on a full-width AVX-512 host (numdiff.kernels._conv_route.blas_on_full_width_avx512), except for the wide filters
of :data:`FLAT_WEIGHT_WIDE_FILTER_AVX512`: its dot products load 6 vectors per 8 multiply-adds,
where OpenBLAS's AVX-512 kernels run the per-image products near their peak. Measured on an Intel
Emerald Rapids (one thread, float32, thread CPU time, min of 9 alternating rounds, load 13-14; N x
Ci -> Co, size, kernel, stride: flat / im2col / Winograd ms): 4x16->3 64 9x9 2.61 / 11.6; 4x16->4
64 5x5 1.11 / 2.92; 4x32->4 64 3x3 1.02 / 1.08 / 1.02; 8x8->8 64 3x3 1.09 / 0.88 / 0.99; 8x16->8
32 3x3 0.45 / 0.37 / 0.39; 8x32->8 32 3x3 s2 0.95 / 0.70; 8x3->8 64 3x3 0.38 / 0.28; 8x16->16 32
3x3 1.01 / 0.66 / 0.51; 32x16->32 32 3x3 s2 3.07 / 1.37; 32x3->32 32 4x4 s2 0.76 / 0.48; 8x16->32
64 2x2 s2 (unet) 1.16 / 0.69 of PyTorch's time."""

FLAT_WEIGHT_WIDE_FILTER_AVX512 = (25, 16)
"""``(taps, channels)``: filters of at least `taps` taps keep the flat weight gradient up to
`channels` output channels per group on those hosts (each tap's dot products re-read the same
staged rows, which im2col's column buffer copies once per tap). Measured as above: 4x16->8 64 5x5
2.21 / 3.01; 8x3->16 32 5x5 0.39 / 0.43; 4x3->16 64 9x9 (style_transfer's first) 2.35 / 2.26 of
PyTorch's time (even)."""

FLAT_OVER_WINOGRAD_MAX_POSITIONS = 1024
"""Most output positions of the whole batch (N*OH*OW) for which the flat weight gradient replaces
Winograd's: with more images or larger planes Winograd's blocks fill and it wins (64->64 16x16:
4 images 0.33-0.86 / 0.66-1.23 ms, 8 images 1.90 / 1.58, 64 images 13.3 / 9.0)."""


def use_flat_weight(n_img, cog, taps, stride, oh_size, ow_size, winograd):
    """Whether a weight gradient over `n_img` images to `cog` output channels per group, with
    `taps` filter taps, largest stride `stride` and (oh_size, ow_size) outputs an image, runs as the flat dot products instead of
    im2col, the direct loops or (`winograd`: that route would take it) Winograd's. Measured (one thread, thread CPU time, best of 7, load
    7-8; N x Ci -> Co, size, kernel: flat / what ran before): 4x16->3 64 9x9 2.19 / 12.7 ms (PyTorch
    2.9); 4x3->16 64 9x9 1.52 / 2.24; 4x32->3 64 3x3 0.73 / 2.88; 4x16->8 64 5x5 1.29 / 3.64;
    8x32->4 32 7x7 1.45 / 6.51; 4x3->32 64 3x3 0.31 / 0.59; 4x3->64 128 7x7 10.8 / 13.0;
    4x16->16 64 5x5 1.76 / 3.74; 8x8->8 64 3x3 0.56 / 1.41; 4x128->8 16 3x3 0.28 / 0.71; against
    Winograd: 4x64->64 16 3x3 0.83-0.86 / 1.14-1.23, 4x64->32 32 1.33-1.78 / 1.49-1.52, 4x32->16
    64 1.72-2.16 / 1.57-1.60, 2x32->16 64 0.62 / 0.78 (see :data:`FLAT_OVER_WINOGRAD_MAX_POSITIONS`). It loses on small
    planes (8x64->64 8x8: 0.84 / 0.34, hence :data:`FLAT_WEIGHT_MIN_POSITIONS`) and to the plain
    product of a 1x1 convolution. Stride 2 (x split into its 4 phases): 4x16->32 64 3x3 0.45 /
    0.50 (PyTorch 0.25), 32x3->32 32 4x4 0.33 / 0.46, 32x32->3 64 4x4 5.2 / 13.2 (PyTorch 5.0);
    it loses at 64 channels (4x32->64 32 3x3 0.48 / 0.35), hence the smaller bound."""
    if stride not in FLAT_WEIGHT_MAX_CHANNELS:
        return False
    positions = oh_size * ow_size
    if winograd and n_img * positions > FLAT_OVER_WINOGRAD_MAX_POSITIONS:
        return False
    most = FLAT_WEIGHT_MAX_CHANNELS[stride]
    if _conv_route.blas_on_full_width_avx512():
        wide_taps, wide_most = FLAT_WEIGHT_WIDE_FILTER_AVX512
        most = min(most, wide_most if taps >= wide_taps else FLAT_WEIGHT_MAX_CHANNELS_AVX512)
    return cog <= most and taps > 1 and positions >= FLAT_WEIGHT_MIN_POSITIONS
