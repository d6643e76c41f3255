"""Winograd F(2x2, 3x3) convolution cores (numdiff.kernels._winograd) against float64 NumPy.

Every test here forces the Winograd route (the `winograd` fixture lowers the thresholds of
numdiff.kernels._conv_routing) and checks that the plan really picked a Winograd core, so a
routing change cannot turn these into im2col tests unnoticed.
"""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels import _conv_route, _conv_routing, _conv_routing_flat, _winograd, conv
from numdiff.kernels._parallel import always_parallel
from tests.kernels import kernel_reference as ref
from tests.kernels.conv_route_checks import assert_compiled_step_matches_eager, assert_conv2d_gradcheck

WINOGRAD_CORES = {
    "forward": _winograd.winograd_forward_core,
    "backward_input": _winograd.winograd_backward_input_core,
    "backward_weight": _winograd.winograd_backward_weight_core,
}

# float32 error bound, in units of float32's epsilon times the sum of the absolute values of the
# terms (the same convolution of |x| and |w|; for the weight gradient summed over the filter's
# nine taps, which its output transform mixes). A direct sum's worst case is about the number of
# terms (up to 9*64 here); Winograd adds transforms of at most 4 terms with factors 1 and 1/2 on
# each side. Largest seen: CASES forward 2.2, input gradient 2.9, weight gradient 0.3;
# 4x32x20x20 and 2x64x28x28 at most 1.1. 16 leaves room and still catches a wrong or missing
# term, which costs O(1) of the bound.
F32_ULPS = 16.0

# (N, C, H, W, Co, padding (t, b, l, r), groups)
CASES = [
    (2, 3, 7, 6, 4, (1, 1, 1, 1), 1),  # odd height: a last tile row of one output row
    (2, 3, 8, 8, 4, (0, 0, 0, 0), 1),  # no padding
    (3, 4, 5, 9, 6, (2, 1, 0, 2), 2),  # asymmetric pads, groups
    (2, 2, 9, 7, 3, (2, 2, 2, 2), 1),  # pads of 2: the input gradient's pads are 0
    (1, 2, 3, 3, 2, (0, 0, 0, 0), 1),  # 1x1 output
    (1, 2, 4, 4, 2, (0, 0, 0, 0), 1),  # 2x2 output: one tile
    (2, 2, 1, 1, 2, (1, 1, 1, 1), 1),  # 1x1 image, all padding around it
    (2, 2, 6, 6, 1, (1, -1, 2, -1), 1),  # negative pads crop
    (2, 2, 6, 6, 3, (3, 2, 4, 0), 1),  # pads above 2: the input gradient's pads are negative
    (5, 3, 4, 5, 2, (1, 1, 1, 1), 1),  # blocks span several images
    (2, 6, 5, 5, 6, (1, 1, 1, 1), 3),  # three groups
]


@pytest.fixture
def winograd(monkeypatch):
    monkeypatch.setattr(_conv_routing, "WINOGRAD_MIN_CHANNELS", 0)
    monkeypatch.setattr(_conv_routing, "WINOGRAD_MIN_WIDTH", {kind: 0 for kind in WINOGRAD_CORES})
    monkeypatch.setattr(_conv_routing, "DIRECT_MAX_WIDTH", {kind: 0 for kind in WINOGRAD_CORES})  # else direct
    # Few channels a group would run the grouped stencil (tested in test_conv_grouped_kernels.py).
    monkeypatch.setattr(_conv_routing, "GROUPED_DIRECT_MAX_CHANNELS", 0)


def _check_route(x_shape, w_shape, out_shape, padding, groups):
    for kind in WINOGRAD_CORES:
        core, _ = conv.conv2d_plan(kind, x_shape, w_shape, out_shape, (1, 1), padding, (1, 1), groups)
        assert core in WINOGRAD_CORES[kind], kind


def _planned_blocks(case):
    """The set of (images, rows) of a Winograd block that the three kernels' plans give `case`."""
    n, c, h, w, co, padding, groups = case
    out_shape = (n, co, conv.conv_output_size(h, 3, 1, *padding[:2], 1), conv.conv_output_size(w, 3, 1, *padding[2:], 1))
    shapes = ((n, c, h, w), (co, c // groups, 3, 3), out_shape)
    return {conv.conv2d_plan(kind, *shapes, (1, 1), padding, (1, 1), groups)[1][4:6] for kind in WINOGRAD_CORES}


def _run(case, dtype, rng):
    n, c, h, w, co, padding, groups = case
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((co, c // groups, 3, 3)).astype(dtype)
    bias = rng.standard_normal(co).astype(dtype)
    expected = ref.conv2d(x, weight, bias, (1, 1), padding, (1, 1), groups)
    _check_route(x.shape, weight.shape, expected.shape, padding, groups)
    out = np.full(expected.shape, np.nan, dtype)
    conv.conv2d_forward(x, weight, bias, out, (1, 1), padding, (1, 1), groups)
    go = rng.standard_normal(expected.shape).astype(dtype)
    gi = conv.conv2d_backward_input(go, weight, np.full_like(x, np.nan), (1, 1), padding, (1, 1), groups)
    gw = conv.conv2d_backward_weight(x, go, np.full_like(weight, np.nan), (1, 1), padding, (1, 1), groups)
    return x, weight, bias, go, expected, out, gi, gw


def _check_all(case, dtype, rng):
    _, _, _, _, _, padding, groups = case
    x, weight, bias, go, expected, out, gi, gw = _run(case, dtype, rng)
    args = ((1, 1), padding, (1, 1), groups)
    want_gi = ref.conv2d_backward_input(go, weight, x.shape, *args)
    want_gw = ref.conv2d_backward_weight(x, go, weight.shape, *args)
    if dtype == np.float64:
        for got, want in ((out, expected), (gi, want_gi), (gw, want_gw)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        return
    # float32: within F32_ULPS * eps * (the same sum over absolute values) of the float64 result.
    eps = np.finfo(np.float32).eps
    bounds = (
        ref.conv2d(np.abs(x), np.abs(weight), np.abs(bias), *args),
        ref.conv2d_backward_input(np.abs(go), np.abs(weight), x.shape, *args),
        # The weight gradient's output transform mixes the 16 products of all nine taps of a
        # filter, so its bound is the sum over the filter's taps, the same for each tap.
        ref.conv2d_backward_weight(np.abs(x), np.abs(go), weight.shape, *args).sum(axis=(2, 3), keepdims=True),
    )
    names = ("forward", "input grad", "weight grad")
    for name, got, want, bound in zip(names, (out, gi, gw), (expected, want_gi, want_gw), bounds):
        ulps = np.abs(got.astype(np.float64) - want) / (eps * bound + 1e-300)
        assert ulps.max() <= F32_ULPS, (name, float(ulps.max()))


@pytest.mark.parametrize("case", CASES)
def test_winograd_matches_reference(case, dtype, rng, winograd):
    _check_all(case, dtype, rng)


def test_winograd_default_route_matches_reference(dtype, rng):
    # Wide and many-channel enough for the routing's own thresholds, all three kernels.
    _check_all((3, 32, 20, 21, 24, (1, 1, 1, 1), 1), dtype, rng)


@pytest.mark.parametrize("case", CASES[:4] + CASES[9:])
def test_winograd_parallel_build_matches_reference(case, dtype, rng, winograd):
    with always_parallel():
        _check_all(case, dtype, rng)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[9]])
def test_winograd_with_one_tile_row_blocks_matches_reference(case, rng, winograd, monkeypatch):
    monkeypatch.setattr(_conv_routing, "WINOGRAD_BLOCK_ELEMENTS", 1)
    assert _planned_blocks(case) == {(1, 1)}  # the plans read the patched budget
    _check_all(case, np.float64, rng)


# Several images side by side in one block, the last block short: (N, C, H, W, Co, padding, groups).
STACKED_CASES = [
    (7, 3, 5, 6, 4, (1, 1, 1, 1), 1),  # odd height, even width
    (7, 4, 6, 7, 6, (2, 0, 0, 2), 2),  # odd width, asymmetric pads, groups
    (5, 2, 4, 5, 3, (0, 0, 0, 0), 1),  # no padding: the input gradient's pads are 2
    (4, 2, 3, 3, 2, (3, 1, -1, 2), 1),  # a crop and pads above 2
    (4, 1, 1, 2, 2, (1, 1, 1, 1), 1),  # one-row images
]


@pytest.fixture(params=[2, 3], ids=["2-images", "3-images"])
def stacked(request, winograd, monkeypatch):
    """Blocks of whole images, a fixed number of them (the block chooser is tested on its own)."""
    images = request.param
    monkeypatch.setattr(_conv_routing, "winograd_blocks", lambda n_img, tiles_h, channels, qc, parts: (images, tiles_h))
    return images


@pytest.mark.parametrize("case", STACKED_CASES)
def test_winograd_with_images_side_by_side_matches_reference(case, dtype, rng, stacked):
    assert {images for images, _ in _planned_blocks(case)} == {stacked}  # the plans call the patched chooser
    _check_all(case, dtype, rng)


@pytest.mark.parametrize("case", STACKED_CASES[:2])
def test_winograd_parallel_build_with_images_side_by_side_matches_reference(case, rng, stacked):
    with always_parallel():
        _check_all(case, np.float64, rng)


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
@pytest.mark.parametrize("n_img", [1, 2, 5, 32, 33])
@pytest.mark.parametrize("width", [1, 4, 8, 14, 56])
def test_winograd_blocks_cover_the_batch_in_equal_blocks_within_budget(parts, n_img, width):
    tiles_h = qc_minus_one = (width + 1) // 2
    qc, channels = qc_minus_one + 1, 48
    images, rows = _conv_routing.winograd_blocks(n_img, tiles_h, channels, qc, parts)
    assert 1 <= images <= n_img and 1 <= rows <= tiles_h
    if images > 1:
        assert rows == tiles_h  # whole images side by side
        assert 16 * channels * images * rows * qc <= _conv_routing.WINOGRAD_BLOCK_ELEMENTS
    # No block holds more than a thread's share of the images, or of one image's tile rows
    # where there are fewer images than threads.
    assert images <= -(-n_img // parts)
    assert rows <= -(-tiles_h // -(-parts // n_img))
    # Equal blocks: the last one is at most one image (or tile row) short of the others.
    assert -(-n_img // images) * images - n_img < -(-n_img // images)
    assert -(-tiles_h // rows) * rows - tiles_h < -(-tiles_h // rows)


def test_small_images_run_forward_as_winograd_several_to_a_block(winograd):
    # The 8x8 benchmark convolution, which by default runs direct (numdiff.kernels.conv docstring).
    shapes = ((32, 16, 8, 8), (32, 16, 3, 3), (32, 32, 8, 8))
    core, sizes = conv.conv2d_plan("forward", *shapes, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    assert core in WINOGRAD_CORES["forward"]
    images, rows = sizes[4], sizes[5]
    assert images > 1 and rows == 4


def test_winograd_empty_batch(winograd):
    x = np.ones((0, 2, 5, 5))
    w = np.ones((3, 2, 3, 3))
    out = conv.conv2d_forward(x, w, None, np.empty((0, 3, 5, 5)), padding=(1, 1, 1, 1))
    assert out.shape == (0, 3, 5, 5)
    gw = conv.conv2d_backward_weight(x, np.ones((0, 3, 5, 5)), np.full_like(w, np.nan), padding=(1, 1, 1, 1))
    assert np.array_equal(gw, np.zeros_like(w))


def test_winograd_route_is_taken_by_default_for_a_wide_many_channel_convolution():
    shapes = ((2, 32, 32, 32), (32, 32, 3, 3), (2, 32, 32, 32))
    for kind in WINOGRAD_CORES:
        core, _ = conv.conv2d_plan(kind, *shapes, (1, 1), (1, 1, 1, 1), (1, 1), 1)
        assert core in WINOGRAD_CORES[kind], kind
    # Stride 2, dilation 2, 5x5 kernels and few channels stay on im2col.
    for stride, dilation, w_shape, x_shape in (
        ((2, 2), (1, 1), (32, 32, 3, 3), (2, 32, 32, 32)),
        ((1, 1), (2, 2), (32, 32, 3, 3), (2, 32, 32, 32)),
        ((1, 1), (1, 1), (32, 32, 5, 5), (2, 32, 32, 32)),
        ((1, 1), (1, 1), (32, 4, 3, 3), (2, 4, 32, 32)),
    ):
        kh, kw = w_shape[2:]
        oh = conv.conv_output_size(32, kh, stride[0], 1, 1, dilation[0])
        out_shape = (2, 32, oh, oh)
        core, _ = conv.conv2d_plan("forward", x_shape, w_shape, out_shape, stride, (1, 1, 1, 1), dilation, 1)
        assert core not in WINOGRAD_CORES["forward"]


def test_winograd_forward_keeps_a_non_finite_input_inside_its_tile(winograd):
    # An inf reaches only the 2x2 output tile whose windows cover it (there as inf or NaN: the
    # transformed sums may add inf and -inf), never the neighbouring tiles nor the spare column.
    x = np.zeros((1, 2, 6, 6))
    x[0, 0, 5, 5] = np.inf
    w = np.ones((2, 2, 3, 3))
    out = conv.conv2d_forward(x, w, None, np.empty((1, 2, 6, 6)), padding=(1, 1, 1, 1))
    assert not np.isfinite(out[0, :, 4:, 4:]).any()
    assert np.array_equal(out[0, :, :4, :], np.zeros((2, 4, 6)))
    assert np.array_equal(out[0, :, :, :4], np.zeros((2, 6, 4)))


@pytest.mark.parametrize("padding", [0, 1, 2])
def test_conv2d_gradcheck_through_winograd(padding, winograd):
    _check_route((2, 3, 5, 6), (4, 3, 3, 3), (2, 4, 3 + 2 * padding, 4 + 2 * padding), (padding,) * 4, 1)
    assert_conv2d_gradcheck((2, 3, 5, 6), 4, padding)


def test_compiled_step_plans_winograd_and_matches_eager(winograd):
    _check_route((2, 3, 6, 5), (4, 3, 3, 3), (2, 4, 6, 5), (1, 1, 1, 1), 1)
    assert_compiled_step_matches_eager([0, 2], 4)


@pytest.mark.parametrize("batch", [4, 64])
@pytest.mark.parametrize(("c_in", "c_out", "width"), [(64, 64, 16), (32, 64, 16), (48, 48, 10), (64, 64, 12)])
def test_many_channel_gradients_wider_than_8_run_winograd(batch, c_in, c_out, width):
    # Direct loops over 32-64 channels at 10-16 wide took 1.2-2.5x Winograd's time (cifar_bn's
    # 64 -> 64 16x16 layers): beyond 8 wide, gradients with channels enough run Winograd.
    shapes = ((batch, c_in, width, width), (c_out, c_in, 3, 3), (batch, c_out, width, width))
    for kind in ("backward_input", "backward_weight"):
        if kind == "backward_weight" and batch * width * width <= _conv_routing_flat.FLAT_OVER_WINOGRAD_MAX_POSITIONS:
            continue  # few images: the flat dot products take it (test_conv_flat_weight.py)
        core, _ = conv.conv2d_plan(kind, *shapes, (1, 1), (1, 1, 1, 1), (1, 1), 1)
        assert core in WINOGRAD_CORES[kind], (kind, shapes, core)


def test_winograd_gradients_take_fewer_channels_where_blas_runs_full_width_avx512(monkeypatch):
    least = _conv_routing.WINOGRAD_MIN_GRADIENT_CHANNELS_AVX512
    assert least < _conv_routing.WINOGRAD_MIN_CHANNELS
    for wide_blas in (False, True):
        monkeypatch.setattr(_conv_route, "blas_on_full_width_avx512", lambda wide_blas=wide_blas: wide_blas)
        assert not _conv_routing.use_winograd("forward", least, least, 32)  # the forward keeps its bound
        for kind in ("backward_input", "backward_weight"):
            assert _conv_routing.use_winograd(kind, least, least, 32) == wide_blas
            assert not _conv_routing.use_winograd(kind, least // 2, least // 2, 32)
