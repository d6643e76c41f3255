"""numdiff.kernels._conv_flat_weight: the weight gradient to few output channels over padded
planes (any kernel size, padding, dilation, groups, strides 1 and 2) agrees with torch, is the route taken
for such shapes and not for others, has a float64 gradient through conv2d, and bad arguments are
refused before it runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.kernels import _conv_route, _conv_routing_flat, conv
from numdiff.kernels import _conv_routing as routing
from numdiff.kernels._conv_flat_weight import flat_backward_weight_core
from numdiff.kernels._parallel import always_parallel, always_serial
from numdiff.kernels.conv import conv2d_backward_weight, conv2d_plan


@pytest.fixture(autouse=True)
def _grouped_cases_stay_on_this_route(monkeypatch):
    """Few channels a group would otherwise run the grouped stencil (numdiff.kernels._conv_grouped)."""
    monkeypatch.setattr(routing, "GROUPED_DIRECT_MAX_CHANNELS", 0)


@pytest.fixture(autouse=True)
def _one_row_cases_stay_on_this_route(monkeypatch):
    """The conv1d case here (one row high) tests this file's route; where the products run as
    Numba loops it would otherwise run numdiff.kernels._conv_rows (test_conv_rows_kernel.py)."""
    monkeypatch.setattr(conv, "use_rows", lambda *sizes: False)


@pytest.fixture(autouse=True)
def _bounds_measured_without_wide_blas(monkeypatch):
    """The shapes here take the flat route under the bounds measured on AVX2 and Zen hosts; on a
    full-width AVX-512 host with BLAS products it takes fewer (tested apart below)."""
    monkeypatch.setattr(_conv_route, "blas_on_full_width_avx512", lambda: False)


SHAPES = [
    # (N, C, H, W, Co, (KH, KW), (top, bottom, left, right), (dh, dw), groups)
    (2, 16, 20, 17, 3, (9, 9), (4, 4, 4, 4), (1, 1), 1),  # style transfer's last layer, smaller
    (3, 3, 18, 18, 16, (9, 9), (4, 4, 4, 4), (1, 1), 1),  # its first layer
    (2, 6, 19, 21, 6, (3, 3), (2, 2, 2, 2), (2, 2), 2),  # dilation and groups
    (
        2,
        4,
        17,
        16,
        5,
        (3, 4),
        (1, 0, 2, 1),
        (1, 1),
        1,
    ),  # a rectangular filter, uneven padding, Cog not a multiple of 4
    (1, 5, 20, 24, 1, (5, 5), (0, 0, 0, 0), (1, 1), 1),  # one output channel, no padding
    (2, 3, 22, 20, 7, (5, 3), (-1, 2, 1, -2), (1, 2), 1),  # negative padding crops
    (2, 8, 1, 300, 12, (1, 5), (0, 0, 2, 2), (1, 1), 1),  # conv1d: one row
]
STRIDED = [
    # (N, C, H, W, Co, (KH, KW), (top, bottom, left, right), (dh, dw), groups, (sh, sw))
    (2, 3, 34, 34, 8, (4, 4), (1, 1, 1, 1), (1, 1), 1, (2, 2)),  # dcgan's first discriminator layer, smaller
    (2, 5, 35, 37, 3, (3, 5), (1, 0, 2, 2), (1, 1), 1, (2, 2)),  # odd sizes, uneven padding
    (2, 4, 36, 33, 6, (3, 3), (2, 2, 1, 1), (2, 1), 2, (2, 1)),  # dilation, groups, one stride of 1
    (1, 3, 3, 600, 5, (3, 5), (1, 1, 2, 2), (1, 2), 1, (1, 2)),  # a dilation that is a multiple of the stride
]


def _torch_weight_grad(x, grad_out, w_shape, pads, dilation, groups, stride=(1, 1)):
    top, bottom, left, right = pads
    xt = torch.nn.functional.pad(torch.tensor(x), (max(left, 0), max(right, 0), max(top, 0), max(bottom, 0)))
    xt = xt[
        :,
        :,
        -min(top, 0) or None : xt.shape[2] + min(bottom, 0),
        -min(left, 0) or None : xt.shape[3] + min(right, 0),
    ]
    weight = torch.zeros(w_shape, dtype=xt.dtype, requires_grad=True)
    out = torch.nn.functional.conv2d(xt, weight, stride=stride, dilation=dilation, groups=groups)
    out.backward(torch.tensor(grad_out))
    return weight.grad.numpy()


def _out_shape(n, h, w, co, k, pads, dilation, stride=(1, 1)):
    oh = (h + pads[0] + pads[1] - dilation[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + pads[2] + pads[3] - dilation[1] * (k[1] - 1) - 1) // stride[1] + 1
    return (n, co, oh, ow)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("build", [always_serial, always_parallel])
@pytest.mark.parametrize("n,c,h,w,co,k,pads,dilation,groups", SHAPES)
def test_flat_weight_gradient_matches_torch(n, c, h, w, co, k, pads, dilation, groups, build, dtype):
    _check_against_torch(n, c, h, w, co, k, pads, dilation, groups, (1, 1), build, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("build", [always_serial, always_parallel])
@pytest.mark.parametrize("n,c,h,w,co,k,pads,dilation,groups,stride", STRIDED)
def test_strided_flat_weight_gradient_matches_torch(
    n, c, h, w, co, k, pads, dilation, groups, stride, build, dtype
):
    _check_against_torch(n, c, h, w, co, k, pads, dilation, groups, stride, build, dtype)


def _check_against_torch(n, c, h, w, co, k, pads, dilation, groups, stride, build, dtype):
    rng = np.random.default_rng(n * c + co)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    grad_out = rng.standard_normal(_out_shape(n, h, w, co, k, pads, dilation, stride)).astype(dtype)
    w_shape = (co, c // groups, *k)
    expected = _torch_weight_grad(x, grad_out, w_shape, pads, dilation, groups, stride)
    core, _ = conv2d_plan("backward_weight", x.shape, w_shape, grad_out.shape, stride, pads, dilation, groups)
    assert core in flat_backward_weight_core
    grad_weight = np.full(w_shape, np.nan, dtype)
    with build():
        conv2d_backward_weight(x, grad_out, grad_weight, stride, pads, dilation, groups)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(grad_weight, expected, rtol=tol, atol=tol * np.abs(expected).max())


@pytest.mark.parametrize(
    "x_shape,w_shape,go_shape,stride,pads",
    [
        ((2, 16, 8, 8), (16, 16, 3, 3), (2, 16, 8, 8), (1, 1), (1,) * 4),  # small planes
        ((2, 16, 32, 32), (8, 16, 1, 1), (2, 8, 32, 32), (1, 1), (0,) * 4),  # 1x1: the plain product
        ((2, 16, 32, 32), (80, 16, 5, 5), (2, 80, 32, 32), (1, 1), (2,) * 4),  # many output channels
        ((2, 16, 32, 32), (40, 16, 5, 5), (2, 40, 16, 16), (2, 2), (2,) * 4),  # stride 2, many channels
        ((2, 16, 48, 48), (3, 16, 5, 5), (2, 3, 16, 16), (3, 3), (1,) * 4),  # stride 3
        ((2, 32, 32, 32), (32, 32, 3, 3), (2, 32, 32, 32), (1, 1), (1,) * 4),  # Winograd's, on a large plane
    ],
)
def test_flat_weight_route_is_not_taken_outside_its_shapes(x_shape, w_shape, go_shape, stride, pads):
    core, _ = conv2d_plan("backward_weight", x_shape, w_shape, go_shape, stride, pads, (1, 1), 1)
    assert core not in flat_backward_weight_core


def test_flat_weight_route_takes_winograd_shapes_on_small_planes():
    assert routing.use_flat_weight(4, 64, 9, 1, 16, 16, True)
    assert not routing.use_flat_weight(8, 64, 9, 1, 16, 16, True)  # more images: Winograd's blocks fill
    assert not routing.use_flat_weight(4, 64, 9, 1, 32, 32, True)
    assert routing.use_flat_weight(4, 64, 9, 1, 32, 32, False)
    assert not routing.use_flat_weight(4, _conv_routing_flat.FLAT_WEIGHT_MAX_CHANNELS[1] + 1, 9, 1, 32, 32, False)
    assert not routing.use_flat_weight(4, _conv_routing_flat.FLAT_WEIGHT_MAX_CHANNELS[2] + 1, 9, 2, 32, 32, False)


def test_flat_weight_route_takes_few_channels_or_wide_filters_where_blas_runs_full_width_avx512(monkeypatch):
    monkeypatch.setattr(_conv_route, "blas_on_full_width_avx512", lambda: True)
    most = _conv_routing_flat.FLAT_WEIGHT_MAX_CHANNELS_AVX512
    wide_taps, wide_most = _conv_routing_flat.FLAT_WEIGHT_WIDE_FILTER_AVX512
    assert routing.use_flat_weight(4, most, 9, 1, 64, 64, False)
    assert not routing.use_flat_weight(4, most + 1, 9, 1, 64, 64, False)  # a 3x3 to 8 channels: im2col's BLAS wins
    assert not routing.use_flat_weight(32, 32, 16, 2, 16, 16, False)  # dcgan's first layer
    assert routing.use_flat_weight(4, wide_most, wide_taps, 1, 64, 64, False)
    assert not routing.use_flat_weight(4, wide_most + 1, wide_taps, 1, 64, 64, False)
    shapes = (32, 16, 32, 32), (32, 16, 3, 3), (32, 32, 16, 16)  # the small ResNet's strided 3x3
    core, _ = conv2d_plan("backward_weight", *shapes, (2, 2), (1,) * 4, (1, 1), 1)
    assert core not in flat_backward_weight_core


def test_flat_weight_gradient_has_a_float64_gradient():
    x = numdiff.randn(1, 2, 16, 16, dtype=numdiff.float64, requires_grad=True)
    weight = numdiff.randn(3, 2, 3, 5, dtype=numdiff.float64, requires_grad=True)
    conv = numdiff.nn.functional.conv2d
    assert numdiff.autograd.gradcheck(lambda a, b: conv(a, b, padding=(1, 2)), (x, weight))
    x = numdiff.randn(1, 2, 33, 32, dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda a, b: conv(a, b, stride=2, padding=(1, 2)), (x, weight))


def test_flat_weight_gradient_refuses_a_wrong_weight_shape():
    x, grad_out = np.ones((1, 4, 20, 20)), np.ones((1, 3, 16, 16))
    with pytest.raises(ValueError, match="conv2d_backward_weight"):
        conv2d_backward_weight(x, grad_out, np.empty((3, 4, 5, 4)), (1, 1), (0, 0, 0, 0))


@pytest.mark.parametrize("stride,size", [(1, 16), (2, 32)])
def test_compiled_step_runs_the_flat_weight_gradient_and_matches_eager(stride, size):
    core, _ = conv2d_plan(
        "backward_weight",
        (2, 3, size, size),
        (4, 3, 5, 5),
        (2, 4, 16, 16),
        (stride,) * 2,
        (2,) * 4,
        (1, 1),
        1,
    )
    assert core in flat_backward_weight_core
    numdiff.manual_seed(0)
    model = numdiff.nn.Conv2d(3, 4, 5, stride=stride, padding=2).to(dtype=numdiff.float64)
    x = numdiff.randn(2, 3, size, size, dtype=numdiff.float64)

    def weight_grad(compiled: bool) -> np.ndarray:
        model.weight.grad = None

        def loss_of(a):
            return (model(a) ** 2).sum()

        (numdiff.compile(loss_of) if compiled else loss_of)(x).backward()
        return model.weight.grad.numpy().copy()

    np.testing.assert_allclose(weight_grad(True), weight_grad(False), rtol=1e-12, atol=1e-12)
