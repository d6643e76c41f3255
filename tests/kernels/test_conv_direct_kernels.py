"""Direct cores for small 3x3 convolutions (numdiff.kernels._conv_direct: weight gradient,
_conv_direct_forward: forward and input gradient) against float64 NumPy.

Every test here that forces the direct route (the `direct` fixture lowers the thresholds of
numdiff.kernels._conv_routing) checks that the plan really picked the direct cores, so a routing
change cannot turn these into im2col or Winograd tests unnoticed.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from numdiff.kernels import _conv_routing, conv
from numdiff.kernels._conv_direct import direct_backward_weight_core
from numdiff.kernels._conv_direct_forward import direct_backward_input_core, direct_forward_core
from numdiff.kernels._parallel import always_parallel
from tests.kernels import kernel_reference as ref
from tests.kernels.conv_route_checks import assert_compiled_step_matches_eager, assert_conv2d_gradcheck


@pytest.fixture(autouse=True)
def _grouped_cases_stay_on_this_route(monkeypatch):
    """The grouped cases here test this file's route; few channels a group would otherwise run
    the grouped stencil (numdiff.kernels._conv_grouped, tested in test_conv_grouped_kernels.py)."""
    monkeypatch.setattr(_conv_routing, "GROUPED_DIRECT_MAX_CHANNELS", 0)

DIRECT_CORES = {
    "forward": direct_forward_core,
    "backward_input": direct_backward_input_core,
    "backward_weight": direct_backward_weight_core,
}

# float32 error bound, in units of float32's epsilon times the sum of the absolute values of the
# terms (the same convolution of |x|, |w| and |grad_out|). A sum of m terms in any order stays
# within about m ulps of that (the weight gradient adds each vector lane's share in turn and then
# the 16 lanes: about m/16 + 4). Largest seen over CASES: forward 1.2, input gradient 1.5, weight
# gradient 0.45; at 32x16->32 8x8 (144 and 288 terms) 2.0, 2.6 and 0.22. 8 still catches a wrong
# or missing term, which costs O(1) of the bound.
F32_ULPS = 8.0

# (N, C, H, W, Co, padding (t, b, l, r), groups)
CASES = [
    (2, 3, 7, 6, 4, (1, 1, 1, 1), 1),  # rows of 12 rounded up to 16: zero columns in the block
    (4, 2, 8, 8, 5, (1, 1, 1, 1), 1),  # odd output channels: the last pair has a zero channel
    (1, 2, 5, 5, 1, (1, 1, 1, 1), 1),  # batch 1, one output channel
    (3, 4, 5, 9, 6, (2, 1, 0, 2), 2),  # asymmetric pads, groups
    (2, 2, 9, 7, 3, (0, 0, 0, 0), 1),  # no padding: copies 0 and 2 read image columns at the edges
    (2, 2, 6, 6, 3, (2, 2, 2, 2), 1),  # pads of 2: output wider than the image
    (2, 2, 6, 6, 2, (1, -1, 2, -1), 1),  # negative pads crop
    (2, 2, 1, 1, 2, (1, 1, 1, 1), 1),  # 1x1 image, all padding around it
    (3, 1, 4, 1, 2, (0, 0, 1, 1), 1),  # one-column images
    (2, 6, 5, 5, 6, (1, 1, 1, 1), 3),  # three groups
    (17, 3, 4, 4, 3, (1, 1, 1, 1), 1),  # 68 positions a row: more than one vector of 16
]


@pytest.fixture
def direct(monkeypatch):
    monkeypatch.setattr(_conv_routing, "DIRECT_MAX_WIDTH", {kind: 1 << 20 for kind in DIRECT_CORES})
    monkeypatch.setattr(_conv_routing, "DIRECT_MIN_POSITIONS", {kind: 0 for kind in DIRECT_CORES})
    monkeypatch.setattr(_conv_routing, "DIRECT_MIN_MACS", 0)
    monkeypatch.setattr(_conv_routing, "DIRECT_MIN_ROW", 0)
    monkeypatch.setattr(_conv_routing, "DIRECT_MIN_CHANNELS", 0)
    monkeypatch.setattr(_conv_routing, "DIRECT_MAX_CHANNELS", 1 << 20)
    monkeypatch.setattr(_conv_routing, "DIRECT_MAX_CHANNELS_AVX512", 1 << 20)


def _check_route(x_shape, w_shape, out_shape, padding, groups, kinds=tuple(DIRECT_CORES)):
    """Assert that the plans of `kinds` pick their direct cores; return the images in a block of each."""
    images = []
    for kind in kinds:
        cores = DIRECT_CORES[kind]
        core, sizes = conv.conv2d_plan(kind, x_shape, w_shape, out_shape, (1, 1), padding, (1, 1), groups)
        assert core in cores, kind
        images.append(sizes[4])
    return images


def _check(case, dtype, rng, direct_kinds=tuple(DIRECT_CORES)):
    n, c, h, w, co, padding, groups = case
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((co, c // groups, 3, 3)).astype(dtype)
    bias = rng.standard_normal(co).astype(dtype)
    args = ((1, 1), padding, (1, 1), groups)
    expected = ref.conv2d(x, weight, bias, *args)
    _check_route(x.shape, weight.shape, expected.shape, padding, groups, direct_kinds)
    go = rng.standard_normal(expected.shape).astype(dtype)
    out = conv.conv2d_forward(x, weight, bias, np.full(expected.shape, np.nan, dtype), *args)
    gi = conv.conv2d_backward_input(go, weight, np.full_like(x, np.nan), *args)
    gw = conv.conv2d_backward_weight(x, go, np.full_like(weight, np.nan), *args)
    wants = (
        expected,
        ref.conv2d_backward_input(go, weight, x.shape, *args),
        ref.conv2d_backward_weight(x, go, weight.shape, *args),
    )
    if dtype == np.float64:
        for got, want in zip((out, gi, gw), wants):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        return
    bounds = (
        ref.conv2d(np.abs(x), np.abs(weight), np.abs(bias), *args),
        ref.conv2d_backward_input(np.abs(go), np.abs(weight), x.shape, *args),
        ref.conv2d_backward_weight(np.abs(x), np.abs(go), weight.shape, *args),
    )
    for kind, got, want, bound in zip(DIRECT_CORES, (out, gi, gw), wants, bounds):
        ulps = np.abs(got.astype(np.float64) - want) / (np.finfo(np.float32).eps * bound + 1e-300)
        assert ulps.max() <= F32_ULPS, (kind, float(ulps.max()))


@pytest.mark.parametrize("case", CASES)
def test_direct_convolution_matches_reference(case, dtype, rng, direct):
    _check(case, dtype, rng)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[3], CASES[10]])
def test_direct_parallel_build_matches_reference(case, threads, dtype, rng, direct):
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with always_parallel():
            _check(case, dtype, rng)
    finally:
        numba.set_num_threads(previous)


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[10]])
def test_direct_with_one_image_blocks_matches_reference(case, rng, direct, monkeypatch):
    monkeypatch.setattr(_conv_routing, "DIRECT_BLOCK_ELEMENTS", 1)
    n, c, h, w, co, padding, groups = case
    out_shape = (n, co, conv.conv_output_size(h, 3, 1, *padding[:2], 1), conv.conv_output_size(w, 3, 1, *padding[2:], 1))
    # The plans read the patched budget: one image a block.
    assert _check_route((n, c, h, w), (co, c // groups, 3, 3), out_shape, padding, groups) == [1, 1, 1]
    _check(case, np.float64, rng)


def test_direct_default_route_matches_reference(dtype, rng):
    # The benchmark's shape class, at the smallest batch the routing's thresholds take; its weight
    # gradient runs im2col (checked here all the same).
    _check((16, 16, 8, 8, 32, (1, 1, 1, 1), 1), dtype, rng, ("forward", "backward_input"))


def test_direct_default_route_takes_a_wide_few_channel_forward(dtype, rng):
    # 40 wide, 16 -> 16 channels (too few for Winograd): the forward runs direct, not im2col.
    _check((2, 16, 40, 40, 16, (1, 1, 1, 1), 1), dtype, rng, ("forward",))


def _takes_direct(kind, x_shape, w_shape, out_shape, stride=(1, 1), dilation=(1, 1)):
    core, _ = conv.conv2d_plan(kind, x_shape, w_shape, out_shape, stride, (1, 1, 1, 1), dilation, 1)
    return core in DIRECT_CORES[kind]


def test_direct_route_is_taken_only_for_few_channel_stride_one_3x3(monkeypatch):
    # The rules of a CPU without full-width AVX-512 (the AVX2 machines they were measured on).
    monkeypatch.setattr(_conv_routing, "_full_width_avx512", lambda: False)
    direct = _takes_direct
    for kind in ("forward", "backward_input"):
        assert direct(kind, (32, 16, 8, 8), (32, 16, 3, 3), (32, 32, 8, 8))
        assert direct(kind, (16, 16, 14, 14), (16, 16, 3, 3), (16, 16, 14, 14))  # instead of im2col
        assert not direct(kind, (1, 16, 8, 8), (32, 16, 3, 3), (1, 32, 8, 8))  # a batch row of 8
        assert not direct(kind, (32, 16, 32, 32), (32, 16, 3, 3), (32, 32, 32, 32))  # wide: Winograd
        assert not direct(kind, (32, 16, 8, 8), (32, 16, 5, 5), (32, 32, 6, 6))
        assert not direct(kind, (32, 16, 8, 8), (32, 16, 3, 3), (32, 32, 4, 4), stride=(2, 2))
        assert not direct(kind, (32, 16, 8, 8), (32, 16, 3, 3), (32, 32, 6, 6), dilation=(2, 2))
    # 64 channels or more: Winograd or im2col.
    for shapes in (
        ((32, 64, 8, 8), (64, 64, 3, 3), (32, 64, 8, 8)),
        ((32, 16, 8, 8), (64, 16, 3, 3), (32, 64, 8, 8)),
        ((32, 128, 4, 4), (128, 128, 3, 3), (32, 128, 4, 4)),
    ):
        assert not any(direct(kind, *shapes) for kind in DIRECT_CORES), shapes
    # The weight gradient runs im2col or Winograd where the other two run direct.
    assert not direct("backward_weight", (32, 16, 8, 8), (32, 16, 3, 3), (32, 32, 8, 8))
    # A forward with few channels runs direct however wide (im2col's GEMM would have 16 rows);
    # its input gradient only up to DIRECT_MAX_IM2COL_WIDTH.
    shapes = ((4, 16, 40, 40), (16, 16, 3, 3), (4, 16, 40, 40))
    assert [direct(kind, *shapes) for kind in DIRECT_CORES] == [True, False, False]
    # 12 wide, 16 -> 32 channels (enough for Winograd): the forward and the weight gradient run
    # Winograd, the input gradient (to 16 channels, too few for Winograd to pay) runs direct.
    shapes = ((32, 16, 12, 12), (32, 16, 3, 3), (32, 32, 12, 12))
    assert [direct(kind, *shapes) for kind in DIRECT_CORES] == [False, True, False]
    # An input gradient to 2 channels stays on im2col.
    shapes = ((256, 2, 8, 8), (16, 2, 3, 3), (256, 16, 8, 8))
    assert [direct(kind, *shapes) for kind in DIRECT_CORES] == [True, False, False]
    shapes = ((256, 16, 8, 8), (2, 16, 3, 3), (256, 2, 8, 8))
    assert [direct(kind, *shapes) for kind in DIRECT_CORES] == [False, True, False]
    # The digits CNN's convolutions are too little work to compile the direct cores for.
    for shapes in (((32, 1, 8, 8), (16, 1, 3, 3), (32, 16, 8, 8)), ((32, 16, 4, 4), (32, 16, 3, 3), (32, 32, 4, 4))):
        assert not any(direct(kind, *shapes) for kind in DIRECT_CORES)


def test_direct_route_takes_up_to_64_channels_on_full_width_avx512(monkeypatch):
    monkeypatch.setattr(_conv_routing, "_full_width_avx512", lambda: True)
    # cnn3d's last conv3d as the conv2d it runs (48 -> 32 on 4x4), and 64 channels 4 wide.
    for shapes in (
        ((32, 48, 4, 4), (32, 48, 3, 3), (32, 32, 4, 4)),
        ((32, 64, 4, 4), (64, 64, 3, 3), (32, 64, 4, 4)),
    ):
        assert [_takes_direct(kind, *shapes) for kind in DIRECT_CORES] == [True, True, False], shapes
    # 8 wide the forward runs Winograd, as before; the input gradient (im2col beside) runs direct.
    shapes = ((32, 64, 8, 8), (64, 64, 3, 3), (32, 64, 8, 8))
    assert [_takes_direct(kind, *shapes) for kind in DIRECT_CORES] == [False, True, False]
    # Beyond 64 channels: Winograd or im2col, as without AVX-512.
    shapes = ((32, 128, 4, 4), (128, 128, 3, 3), (32, 128, 4, 4))
    assert not any(_takes_direct(kind, *shapes) for kind in DIRECT_CORES)
    monkeypatch.setattr(_conv_routing, "_full_width_avx512", lambda: False)
    shapes = ((32, 48, 4, 4), (32, 48, 3, 3), (32, 32, 4, 4))
    assert not any(_takes_direct(kind, *shapes) for kind in DIRECT_CORES)


def test_direct_default_route_matches_reference_at_64_channels(dtype, rng, monkeypatch):
    # The channel count the full-width AVX-512 bound newly lets through, on any host.
    monkeypatch.setattr(_conv_routing, "_full_width_avx512", lambda: True)
    _check((32, 64, 4, 4, 48, (1, 1, 1, 1), 1), dtype, rng, ("forward", "backward_input"))


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
@pytest.mark.parametrize("n_img", [1, 2, 5, 32, 33])
@pytest.mark.parametrize("width", [1, 4, 8, 16])
def test_direct_blocks_cover_the_batch_in_equal_blocks_within_budget(parts, n_img, width):
    cog = 48
    images = _conv_routing.direct_images(n_img, cog, width, width, parts)
    assert 1 <= images <= -(-n_img // parts)
    if images > 1:
        assert images * (cog + 4) * (width + 2) * width <= _conv_routing.DIRECT_BLOCK_ELEMENTS
    blocks = -(-n_img // images)
    assert blocks * images - n_img < blocks  # the last block at most one image short per block


def test_direct_keeps_a_non_finite_input_to_the_taps_that_read_it(direct):
    # x[0, 0, 0, 0] = inf is read by taps (i, j) <= (1, 1) only (output (1 - i, 1 - j), pad 1):
    # padding, the rounding columns and a neighbouring image must not carry it to the others.
    x = np.zeros((4, 1, 4, 4))
    x[0, 0, 0, 0] = np.inf
    go = np.ones((4, 1, 4, 4))
    _check_route(x.shape, (1, 1, 3, 3), go.shape, (1, 1, 1, 1), 1)
    gw = conv.conv2d_backward_weight(x, go, np.empty((1, 1, 3, 3)), padding=(1, 1, 1, 1))
    assert np.isinf(gw[0, 0, :2, :2]).all()
    assert np.array_equal(gw[0, 0, 2, :], np.zeros(3)) and np.array_equal(gw[0, 0, :, 2], np.zeros(3))


def test_direct_forward_keeps_a_non_finite_input_to_the_outputs_that_read_it(direct):
    # Its row and column neighbours, the other images in the block and the rounding columns
    # stay exactly zero.
    x = np.zeros((3, 2, 5, 5))
    x[1, 0, 4, 4] = np.inf
    w = np.ones((4, 2, 3, 3))
    _check_route(x.shape, w.shape, (3, 4, 5, 5), (1, 1, 1, 1), 1)
    out = conv.conv2d_forward(x, w, None, np.empty((3, 4, 5, 5)), padding=(1, 1, 1, 1))
    assert np.isinf(out[1, :, 3:, 3:]).all()
    out[1, :, 3:, 3:] = 0
    assert np.array_equal(out, np.zeros_like(out))


def test_direct_empty_batch(direct):
    x = np.ones((0, 2, 5, 5))
    gw = conv.conv2d_backward_weight(x, np.ones((0, 3, 5, 5)), np.full((3, 2, 3, 3), np.nan), padding=(1, 1, 1, 1))
    assert np.array_equal(gw, np.zeros((3, 2, 3, 3)))


@pytest.mark.parametrize("padding", [0, 1, 2])
def test_conv2d_gradcheck_through_direct_weight_gradient(padding, direct):
    _check_route((3, 3, 5, 6), (5, 3, 3, 3), (3, 5, 3 + 2 * padding, 4 + 2 * padding), (padding,) * 4, 1)
    assert_conv2d_gradcheck((3, 3, 5, 6), 5, padding)


def test_compiled_step_plans_direct_weight_gradient_and_matches_eager(direct):
    _check_route((4, 3, 6, 5), (5, 3, 3, 3), (4, 5, 6, 5), (1, 1, 1, 1), 1)
    assert_compiled_step_matches_eager([0, 2, 1, 1], 5)
