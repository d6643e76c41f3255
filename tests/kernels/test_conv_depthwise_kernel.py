"""The depthwise forward with the channels innermost (numdiff.kernels._conv_depthwise), which
depthwise convolutions with narrow output rows take: the stencil's numbers bit for bit, PyTorch's
within rounding, over strides 1 and 2, kernels 3-7, dilation, asymmetric padding, with and without
a bias, batches of one and more, both builds; and the routing rule's edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.kernels import _conv_routing, conv
from numdiff.kernels._conv_depthwise import depthwise_forward_core

# (N, C, (H, W), kernel, stride, (top, bottom, left, right) padding, dilation)
CASES = [
    (2, 16, (8, 8), 3, 1, (1, 1, 1, 1), 1),  # MobileNet's late 3x3
    (3, 24, (16, 16), 3, 2, (1, 1, 1, 1), 1),  # strided to 8x8
    (2, 32, (8, 8), 5, 1, (2, 2, 2, 2), 1),  # EfficientNet's 5x5
    (2, 40, (15, 15), 5, 2, (2, 2, 2, 2), 1),  # odd size, strided 5x5
    (1, 8, (7, 7), 7, 1, (3, 3, 3, 3), 1),  # ConvNeXt's 7x7, batch 1
    (2, 12, (11, 10), 3, 2, (2, 2, 2, 2), 2),  # strided and dilated
    (2, 9, (6, 7), 3, 1, (0, 2, 1, 0), 1),  # asymmetric padding, channels not a multiple of 8
    (2, 20, (4, 4), 5, 1, (2, 2, 2, 2), 1),  # kernel larger than the image
    (2, 16, (9, 9), 2, 1, (0, 0, 0, 0), 1),  # even kernel, unpadded: 4 taps, a pass of 3 and 1
    (2, 16, (9, 9), 1, 2, (0, 0, 0, 0), 1),  # strided 1x1: one tap
]


def _forward(x, w, b, stride, padding, dilation, out_shape):
    out = np.empty(out_shape, x.dtype)
    return conv.conv2d_forward(x, w, b, out, (stride,) * 2, padding, (dilation,) * 2, x.shape[1])


def _output_shape(n, c, size, kernel, stride, padding, dilation):
    top, bottom, left, right = padding
    oh = (size[0] + top + bottom - dilation * (kernel - 1) - 1) // stride + 1
    ow = (size[1] + left + right - dilation * (kernel - 1) - 1) // stride + 1
    return (n, c, oh, ow)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_depthwise_forward_is_the_stencil_bit_for_bit_and_matches_torch(case, dtype, bias, monkeypatch):
    n, c, size, kernel, stride, padding, dilation = case
    rng = np.random.default_rng(c + kernel + stride)
    x = rng.standard_normal((n, c) + size).astype(dtype)
    w = rng.standard_normal((c, 1, kernel, kernel)).astype(dtype)
    b = rng.standard_normal(c).astype(dtype) if bias else None
    out_shape = _output_shape(n, c, size, kernel, stride, padding, dilation)
    geometry = ((stride,) * 2, padding, (dilation,) * 2, c)
    core, _ = conv.conv2d_plan("forward", x.shape, w.shape, out_shape, *geometry)
    assert any(core is build for build in depthwise_forward_core)
    got = _forward(x, w, b, stride, padding, dilation, out_shape)

    monkeypatch.setattr(_conv_routing, "DEPTHWISE_LAST_MAX_WIDTH", 0)  # the per-group stencil instead
    core, _ = conv.conv2d_plan("forward", x.shape, w.shape, out_shape, *geometry)
    assert not any(core is build for build in depthwise_forward_core)
    stencil = _forward(x, w, b, stride, padding, dilation, out_shape)
    assert np.array_equal(got, stencil)

    top, bottom, left, right = padding
    padded = torch.nn.functional.pad(torch.tensor(x), (left, right, top, bottom))
    want = torch.nn.functional.conv2d(padded, torch.tensor(w), None if b is None else torch.tensor(b),
                                      stride=stride, dilation=dilation, groups=c).numpy()  # fmt: skip
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)


def test_depthwise_forward_on_two_threads_gives_the_serial_numbers(two_threads):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 32, 12, 12)).astype(np.float32)
    w = rng.standard_normal((32, 1, 5, 5)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    args = (x.reshape(6, 32, 1, 12, 12), w.reshape(32, 1, 25), b, True)
    sizes = (5, 5, 2, 2, 2, 2, 1, 1, 6, 6)
    serial, parallel = np.empty((6, 32, 1, 36), np.float32), np.empty((6, 32, 1, 36), np.float32)
    depthwise_forward_core.serial(*args, serial, *sizes, 1)
    depthwise_forward_core.parallel(*args, parallel, *sizes, 2)
    assert np.array_equal(serial, parallel)


def test_depthwise_layer_gradients_through_the_route_match_torch_float64():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 16, 10, 10))
    w = rng.standard_normal((16, 1, 3, 3))
    go = rng.standard_normal((2, 16, 5, 5))
    grads = []
    for lib in (numdiff, torch):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        out = lib.nn.functional.conv2d(xt, wt, stride=2, padding=1, groups=16)
        out.backward(lib.tensor(go))
        grads.append([np.asarray(t.detach().numpy()) for t in (out, xt.grad, wt.grad)])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "channels, cg, cog, ow, expected",
    [(16, 1, 1, 8, True), (16, 1, 1, 9, False), (7, 1, 1, 4, False), (16, 1, 2, 4, False), (16, 2, 1, 4, False)],
)
def test_route_takes_pure_depthwise_narrow_rows_with_enough_channels(channels, cg, cog, ow, expected):
    assert _conv_routing.use_depthwise_last(channels, cg, cog, ow) is expected


def test_depthwise_forward_with_a_wrong_weight_shape_names_the_op_before_a_kernel_runs():
    x = numdiff.zeros(2, 16, 8, 8)
    with pytest.raises(ValueError, match="conv2d"):
        numdiff.nn.functional.conv2d(x, numdiff.zeros(16, 2, 3, 3), groups=16)
