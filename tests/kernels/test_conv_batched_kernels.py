"""The batched im2col route (numdiff.kernels._conv_batched): small outputs, several images a GEMM.

Each test first checks that the plan really picked the batched cores, so a routing change cannot
turn these into tests of another route unnoticed.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numdiff
from numdiff.kernels import _conv_route, _conv_routing, _conv_routing_flat, _conv_routing_phase, conv
from numdiff.kernels._conv_batched import (
    batched_backward_input_core,
    batched_backward_weight_core,
    batched_forward_core,
)
from numdiff.kernels._parallel import always_parallel
from tests.kernels import kernel_reference as ref


@pytest.fixture(autouse=True)
def _grouped_cases_stay_on_this_route(monkeypatch):
    """The grouped cases here test this file's route; few channels a group would otherwise run
    the grouped stencil (numdiff.kernels._conv_grouped, tested in test_conv_grouped_kernels.py)."""
    monkeypatch.setattr(_conv_routing, "GROUPED_DIRECT_MAX_CHANNELS", 0)


@pytest.fixture(autouse=True)
def _one_row_cases_stay_on_this_route(monkeypatch):
    """The conv1d-like cases here (one row high) test this file's route; where the products run as
    Numba loops their forward and weight gradient would otherwise run numdiff.kernels._conv_rows
    (tested in test_conv_rows_kernel.py)."""
    monkeypatch.setattr(conv, "use_rows", lambda *sizes: False)


@pytest.fixture(autouse=True)
def _bounds_measured_without_wide_blas(monkeypatch):
    """The cases here batch under the bounds measured on AVX2 and Zen hosts; where BLAS runs the
    products on a full-width AVX-512 host fewer batch (tested apart: the host rule's test below)."""
    monkeypatch.setattr(_conv_route, "blas_on_full_width_avx512", lambda: False)

BATCHED_CORES = {
    "forward": batched_forward_core,
    "backward_input": batched_backward_input_core,
    "backward_weight": batched_backward_weight_core,
}

# (N, C, H, W, Co, KH, KW, stride, padding (t, b, l, r), dilation, groups)
CASES = [
    (5, 6, 8, 8, 4, 4, 4, (2, 2), (1, 1, 1, 1), (1, 1), 1),  # DCGAN's strided 4x4, 5 images
    (3, 8, 4, 4, 1, 4, 4, (1, 1), (0, 0, 0, 0), (1, 1), 1),  # to 1x1: one output an image
    (4, 4, 7, 6, 6, 3, 2, (2, 1), (1, 0, 2, 1), (1, 2), 2),  # uneven stride, pads, dilation, groups
    (3, 3, 9, 9, 3, 3, 3, (3, 3), (2, 2, 2, 2), (1, 1), 3),  # depthwise, stride above the kernel's reach
    (2, 2, 6, 6, 3, 3, 3, (1, 1), (1, -1, 2, -1), (1, 1), 1),  # negative pads crop
    (2, 2, 7, 7, 2, 2, 2, (2, 2), (0, 0, 0, 0), (1, 1), 1),  # the last input row and column unread
    (7, 5, 4, 4, 3, 4, 4, (2, 2), (1, 1, 1, 1), (1, 1), 1),  # 7 images: a short last block
    # Output rows of PHASE_MIN_RUN or more: patches move as runs of a phase-split block.
    (3, 4, 5, 19, 5, 3, 3, (2, 2), (1, 0, 1, 2), (1, 1), 1),  # 2x10 outputs, uneven pads
    (4, 4, 4, 30, 6, 2, 3, (1, 3), (0, 1, 2, 1), (2, 2), 2),  # 3x10, stride 3 along W, dilation, groups
    (2, 4, 3, 12, 6, 3, 3, (1, 1), (1, 0, -1, 1), (1, 1), 1),  # a negative left pad crops, 2x10
]

# Weight gradients batch up to 256 positions an image (the forward too, the input gradient not):
# (N, C, H, W, Co, KH, KW, stride, padding, dilation, groups)
WEIGHT_CASES = [
    (5, 6, 16, 16, 4, 4, 4, (2, 2), (1, 1, 1, 1), (1, 1), 1),  # DCGAN's strided 4x4 to 8x8
    (3, 4, 13, 11, 6, 3, 2, (1, 2), (1, 0, 2, 1), (2, 1), 2),  # uneven stride, pads, dilation, groups
    (2, 3, 20, 20, 5, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 1),  # 5x5, 400 positions: per image
]


def _run(case, dtype, rng):
    n, c, h, w, co, kh, kw, stride, padding, dilation, groups = case
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((co, c // groups, kh, kw)).astype(dtype)
    bias = rng.standard_normal(co).astype(dtype)
    expected = ref.conv2d(x, weight, bias, stride, padding, dilation, groups)
    for kind in BATCHED_CORES:
        core, _ = conv.conv2d_plan(kind, x.shape, weight.shape, expected.shape, stride, padding, dilation, groups)
        assert core in BATCHED_CORES[kind], (kind, core)
    out = conv.conv2d_forward(x, weight, bias, np.full(expected.shape, np.nan, dtype), stride, padding, dilation, groups)
    go = rng.standard_normal(expected.shape).astype(dtype)
    gi = conv.conv2d_backward_input(go, weight, np.full_like(x, np.nan), stride, padding, dilation, groups)
    gw = conv.conv2d_backward_weight(x, go, np.full_like(weight, np.nan), stride, padding, dilation, groups)
    want_gi = ref.conv2d_backward_input(go, weight, x.shape, stride, padding, dilation, groups)
    want_gw = ref.conv2d_backward_weight(x, go, weight.shape, stride, padding, dilation, groups)
    tol = dict(rtol=1e-11, atol=1e-11) if dtype == np.float64 else dict(rtol=1e-4, atol=2e-4)
    for got, want in ((out, expected), (gi, want_gi), (gw, want_gw)):
        np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("case", CASES)
def test_batched_route_matches_reference(case, dtype, rng):
    _run(case, dtype, rng)


@pytest.mark.parametrize("case", WEIGHT_CASES)
def test_batched_weight_gradient_of_larger_outputs_matches_reference(case, dtype, rng):
    n, c, h, w, co, kh, kw, stride, padding, dilation, groups = case
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight_shape = (co, c // groups, kh, kw)
    out_h = conv.conv_output_size(h, kh, stride[0], *padding[:2], dilation[0])
    out_w = conv.conv_output_size(w, kw, stride[1], *padding[2:], dilation[1])
    go = rng.standard_normal((n, co, out_h, out_w)).astype(dtype)
    core, _ = conv.conv2d_plan("backward_weight", x.shape, weight_shape, go.shape, stride, padding, dilation, groups)
    assert (core in BATCHED_CORES["backward_weight"]) == (out_h * out_w <= _conv_routing.BATCHED_MAX_POSITIONS)
    gw = conv.conv2d_backward_weight(x, go, np.full(weight_shape, np.nan, dtype), stride, padding, dilation, groups)
    want = ref.conv2d_backward_weight(x, go, weight_shape, stride, padding, dilation, groups)
    tol = dict(rtol=1e-11, atol=1e-11) if dtype == np.float64 else dict(rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(gw, want, **tol)


@pytest.mark.parametrize("case", CASES)
def test_batched_route_with_one_image_blocks_matches_reference(case, rng, monkeypatch):
    monkeypatch.setattr(_conv_routing, "TILE_ELEMENTS", 1)  # one image a GEMM
    n, c, h, w, co, kh, kw, stride, padding, dilation, groups = case
    out_h = conv.conv_output_size(h, kh, stride[0], *padding[:2], dilation[0])
    out_w = conv.conv_output_size(w, kw, stride[1], *padding[2:], dilation[1])
    _, sizes = conv.conv2d_plan("forward", (n, c, h, w), (co, c // groups, kh, kw), (n, co, out_h, out_w), stride,
                                padding, dilation, groups)  # fmt: skip
    assert sizes[10] == 1
    _run(case, np.float64, rng)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[6]])
def test_batched_parallel_build_matches_reference(case, threads, dtype, rng):
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with always_parallel():
            _run(case, dtype, rng)
    finally:
        numba.set_num_threads(previous)


def test_batched_route_is_taken_for_small_outputs_only(monkeypatch):
    # Several of these forwards (4x4, stride 2, many channels) run on the phase-split Winograd route
    # by default (tests/kernels/test_conv_phase_winograd.py); here, what batching decides without it.
    monkeypatch.setattr(_conv_routing_phase, "PHASE_WINOGRAD_MIN_CHANNELS", 1 << 30)

    def batched(x_shape, w_shape, out_shape, stride, padding=(1, 1, 1, 1)):
        return [
            conv.conv2d_plan(kind, x_shape, w_shape, out_shape, stride, padding, (1, 1), 1)[0] in BATCHED_CORES[kind]
            for kind in BATCHED_CORES
        ]

    # DCGAN-style discriminator convolutions down to 4x4 and 1x1, and a 5x5 output (25 positions).
    assert batched((32, 64, 8, 8), (128, 64, 4, 4), (32, 128, 4, 4), (2, 2)) == [True] * 3
    assert batched((32, 128, 4, 4), (1, 128, 4, 4), (32, 1, 1, 1), (1, 1), (0, 0, 0, 0)) == [True] * 3
    assert batched((16, 48, 10, 10), (96, 48, 4, 4), (16, 96, 5, 5), (2, 2)) == [True] * 3
    # Forwards and weight gradients batch up to 256 positions an image (conv1d rows, strided
    # layers), and so do strided input gradients with output rows of PHASE_MIN_RUN or more (they
    # scatter unit-stride runs); other input gradients stay on the per-image cores beyond 32, and
    # so do weight gradients whose one image's patches exceed TILE_ELEMENTS (64 x 3x3 channels on
    # 16x16 outputs).
    assert batched((32, 32, 16, 16), (64, 32, 4, 4), (32, 64, 8, 8), (2, 2)) == [True, True, True]
    assert batched((32, 128, 1, 68), (128, 128, 1, 5), (32, 128, 1, 64), (1, 1), (0, 0, 0, 0)) == [True, False, True]
    assert batched((8, 64, 32, 32), (64, 64, 3, 3), (8, 64, 16, 16), (2, 2)) == [True, True, False]
    assert batched((8, 32, 32, 32), (64, 32, 3, 3), (8, 64, 16, 16), (2, 2)) == [True, True, True]
    assert batched((32, 32, 24, 12), (64, 32, 4, 4), (32, 64, 12, 6), (2, 2)) == [True, False, True]  # rows of 6
    # So do images whose patches exceed BATCHED_MAX_IMAGE_ELEMENTS (512 x 3x3 channels on 16x16 outputs).
    assert batched((2, 512, 32, 32), (64, 512, 3, 3), (2, 64, 16, 16), (2, 2)) == [False] * 3
    # Wider outputs stay on the per-image cores; so does a pointwise convolution.
    assert batched((8, 64, 34, 34), (64, 64, 3, 3), (8, 64, 17, 17), (2, 2)) == [False] * 3
    assert batched((32, 64, 4, 4), (64, 64, 1, 1), (32, 64, 4, 4), (1, 1), (0, 0, 0, 0)) == [False] * 3


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
@pytest.mark.parametrize("n_img", [1, 2, 5, 32, 33])
@pytest.mark.parametrize(("k", "positions"), [(16, 1), (1024, 16), (4096, 32), (1 << 18, 4), (640, 60), (2304, 256)])
def test_batched_blocks_cover_the_batch_in_equal_blocks_within_budget(parts, n_img, k, positions):
    images = _conv_routing.batched_images(n_img, k, positions, parts)
    assert _conv_routing.batched_images(n_img, k, positions, parts, "backward_input") in (images, 0)
    assert 1 <= images <= -(-n_img // parts)
    if images > 1:
        assert k * images * positions <= _conv_routing.TILE_ELEMENTS
    blocks = -(-n_img // images)
    assert blocks * images - n_img < blocks


def test_batched_route_passes_gradcheck_through_conv_and_conv_transpose():
    rng = np.random.default_rng(3)
    fn = numdiff.nn.functional
    x = numdiff.tensor(rng.standard_normal((3, 4, 6, 6)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((5, 4, 4, 4)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(5), requires_grad=True)
    assert conv.conv2d_plan("forward", (3, 4, 6, 6), (5, 4, 4, 4), (3, 5, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1)[0] \
        in BATCHED_CORES["forward"]  # fmt: skip
    assert numdiff.autograd.gradcheck(lambda x, w, b: fn.conv2d(x, w, b, stride=2, padding=1), (x, w, b))
    # The DCGAN generator's first layer: a transposed 4x4 convolution of a 1x1 input.
    z = numdiff.tensor(rng.standard_normal((3, 4, 1, 1)), requires_grad=True)
    wt = numdiff.tensor(rng.standard_normal((4, 3, 4, 4)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda z, wt: fn.conv_transpose2d(z, wt), (z, wt))
    assert numdiff.autograd.gradgradcheck(lambda z, wt: fn.conv_transpose2d(z, wt), (z, wt))


def test_batched_route_matches_torch_for_a_strided_transposed_convolution(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((6, 8, 3, 3)).astype(np.float32)
    w = rng.standard_normal((8, 5, 4, 4)).astype(np.float32)
    go = rng.standard_normal((6, 5, 6, 6)).astype(np.float32)
    tx, tw = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    ty = torch.nn.functional.conv_transpose2d(tx, tw, stride=2, padding=1)
    ty.backward(torch.from_numpy(go))
    nx, nw = numdiff.tensor(x, requires_grad=True), numdiff.tensor(w, requires_grad=True)
    ny = numdiff.nn.functional.conv_transpose2d(nx, nw, stride=2, padding=1)
    ny.backward(numdiff.tensor(go))
    for got, want in ((ny, ty), (nx.grad, tx.grad), (nw.grad, tw.grad)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)


# Transposed convolutions whose forward is a strided input gradient with rows of 8 or more and
# over 32 positions (batched, scattering unit-stride runs): (N, Ci, H, W, Co, K, stride, padding,
# output_padding, dilation).
RUN_TRANSPOSED_CASES = [
    (4, 6, 8, 8, 5, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),  # the DCGAN generator's 8x8 -> 16x16
    (3, 4, 5, 9, 3, (3, 2), (2, 3), (0, 1), (1, 2), (1, 2)),  # uneven strides, output_padding, dilation
]


@pytest.mark.parametrize("case", RUN_TRANSPOSED_CASES)
def test_batched_strided_input_gradients_match_torch_and_pass_gradcheck(case, rng):
    torch = pytest.importorskip("torch")
    n, ci, h, w, co, k, stride, padding, output_padding, dilation = case
    kw = dict(stride=stride, padding=padding, output_padding=output_padding, dilation=dilation)
    x = rng.standard_normal((n, ci, h, w))
    weight = rng.standard_normal((ci, co) + k)
    ty = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(weight), **kw)
    # The forward is conv2d's input gradient of the convolution from ty's shape down to x's.
    pads = (padding[0], padding[0] - output_padding[0], padding[1], padding[1] - output_padding[1])
    core, _ = conv.conv2d_plan("backward_input", tuple(ty.shape), weight.shape, x.shape, stride, pads, dilation, 1)
    assert core in BATCHED_CORES["backward_input"] and x.shape[3] >= 8 and x.shape[2] * x.shape[3] > 32
    tx = torch.from_numpy(x.astype(np.float32)).requires_grad_()
    tw = torch.from_numpy(weight.astype(np.float32)).requires_grad_()
    go = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty32 = torch.nn.functional.conv_transpose2d(tx, tw, **kw)
    ty32.backward(torch.from_numpy(go))
    nx = numdiff.tensor(x.astype(np.float32), requires_grad=True)
    nw = numdiff.tensor(weight.astype(np.float32), requires_grad=True)
    ny = numdiff.nn.functional.conv_transpose2d(nx, nw, **kw)
    ny.backward(numdiff.tensor(go))
    for got, want in ((ny, ty32), (nx.grad, tx.grad), (nw.grad, tw.grad)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
    small_x = numdiff.tensor(x[:2, :3], requires_grad=True)
    small_w = numdiff.tensor(weight[:3, :2], requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda a, b: numdiff.nn.functional.conv_transpose2d(a, b, **kw), (small_x, small_w))


def test_a_wrong_output_shape_is_refused_before_the_batched_core_runs():
    with pytest.raises(ValueError, match=r"conv2d_forward: output must have shape \(2, 3, 2, 2\)"):
        conv.conv2d_forward(np.ones((2, 4, 4, 4)), np.ones((3, 4, 4, 4)), None, np.empty((2, 3, 1, 1)), (2, 2),
                            (1, 1, 1, 1))  # fmt: skip


def test_rows_of_up_to_256_positions_batch_the_forward_and_pass_gradcheck():
    # A conv1d-like row of 40 output positions: forward and weight gradient batched, input
    # gradient per image; float64 gradients against central differences.
    rng = np.random.default_rng(5)
    fn = numdiff.nn.functional
    x = numdiff.tensor(rng.standard_normal((3, 4, 1, 44)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((6, 4, 1, 5)), requires_grad=True)
    out_shape = (3, 6, 1, 40)
    picked = [
        conv.conv2d_plan(kind, x.shape, w.shape, out_shape, (1, 1), (0, 0, 0, 0), (1, 1), 1)[0] in BATCHED_CORES[kind]
        for kind in BATCHED_CORES
    ]
    assert picked == [True, False, True]
    assert numdiff.autograd.gradcheck(lambda x, w: fn.conv2d(x, w), (x, w))
    x1 = numdiff.tensor(rng.standard_normal((2, 3, 70)), requires_grad=True)
    w1 = numdiff.tensor(rng.standard_normal((5, 3, 9)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda x, w: fn.conv1d(x, w, stride=2, padding=4), (x1, w1))


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "stride", "padding"),
    [
        ((6, 16, 64), (24, 16, 5), 1, 0),  # conv1d rows of 60 positions
        ((4, 8, 100), (8, 8, 9), 2, 4),  # strided conv1d, 50 positions
        ((5, 8, 16, 16), (16, 8, 3, 3), 2, 1),  # strided conv2d to 8x8
        ((3, 6, 16, 16), (10, 6, 5, 3), 1, (2, 1)),  # 16x16 = 256 positions, the bound itself
    ],
)
def test_newly_batched_float32_forward_and_its_gradients_match_torch(x_shape, w_shape, stride, padding):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) * 0.2).astype(np.float32)
    name = f"conv{len(x_shape) - 2}d"
    xn, wn = numdiff.tensor(x, requires_grad=True), numdiff.tensor(w, requires_grad=True)
    yn = getattr(numdiff.nn.functional, name)(xn, wn, stride=stride, padding=padding)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    yt = getattr(torch.nn.functional, name)(xt, wt, stride=stride, padding=padding)
    as_2d = (lambda s: s[:2] + (1,) + s[2:]) if len(x_shape) == 3 else (lambda s: s)
    pads = (padding, padding) if isinstance(padding, int) else padding
    pads = (0, 0, pads[0], pads[0]) if len(x_shape) == 3 else (pads[0], pads[0], pads[1], pads[1])
    strides = (1, stride) if len(x_shape) == 3 else (stride, stride)
    plan = conv.conv2d_plan("forward", as_2d(x_shape), as_2d(w_shape), as_2d(tuple(yt.shape)), strides, pads, (1, 1), 1)
    assert plan[0] in BATCHED_CORES["forward"]
    weight_plan = conv.conv2d_plan("backward_weight", as_2d(x_shape), as_2d(w_shape), as_2d(tuple(yt.shape)), strides,
                                   pads, (1, 1), 1)  # fmt: skip
    # Batched, except where the flat dot products take it (16x16 = 256 positions, few channels).
    flat = _conv_routing_flat.FLAT_WEIGHT_MIN_POSITIONS <= weight_plan[1][8] * weight_plan[1][9]
    assert flat or weight_plan[0] in BATCHED_CORES["backward_weight"]
    g = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yn.backward(numdiff.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(yn.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(xn.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wn.grad.numpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_batched_route_on_full_width_avx512_with_blas_keeps_small_outputs_and_deep_forwards(monkeypatch):
    monkeypatch.setattr(_conv_route, "blas_on_full_width_avx512", lambda: True)
    deep = _conv_routing.BATCHED_MIN_DEPTH_AVX512
    small = _conv_routing.BATCHED_GRADIENT_MAX_POSITIONS
    for kind in ("forward", "backward_input", "backward_weight"):
        assert _conv_routing.batched_images(32, deep, small, 1, kind) > 0  # 4x4 outputs batch, any depth
    assert _conv_routing.batched_images(32, deep, 64, 1, "forward") > 0
    assert _conv_routing.batched_images(32, deep - 1, 64, 1, "forward") == 0  # short patches: per image
    assert _conv_routing.batched_images(32, 4 * deep, 64, 1, "backward_weight") == 0
    # resnet's strided 1x1 shortcut runs per image, its 32 -> 64 3x3 stride-2 forward batched (dcgan's
    # 32 -> 64 4x4 one runs on the phase-split Winograd route: tests/kernels/test_conv_phase_winograd.py)
    plan = conv.conv2d_plan("forward", (32, 16, 32, 32), (32, 16, 1, 1), (32, 32, 16, 16), (2, 2), (0,) * 4, (1, 1), 1)
    assert plan[0] not in BATCHED_CORES["forward"]
    plan = conv.conv2d_plan("forward", (32, 32, 16, 16), (64, 32, 3, 3), (32, 64, 8, 8), (2, 2), (1,) * 4, (1, 1), 1)
    assert plan[0] in BATCHED_CORES["forward"]
