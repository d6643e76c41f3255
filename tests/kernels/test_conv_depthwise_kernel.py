"""The depthwise forward, input gradient and weight gradient with the channels innermost
(numdiff.kernels._conv_depthwise), which depthwise convolutions with narrow output rows take: the
forward gives the stencil's numbers bit for bit, all three PyTorch's within rounding, over strides 1
and 2, kernels 1-7, dilation, asymmetric padding, with and without a bias, batches of one and more,
both builds; float64 gradient checks through the layer and a depthwise transposed convolution; and
the routing rule's edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.kernels import _conv_routing, conv
from numdiff.kernels._conv_depthwise import (
    depthwise_backward_input_core,
    depthwise_backward_weight_core,
    depthwise_forward_core,
)

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

    monkeypatch.setitem(_conv_routing.DEPTHWISE_LAST_MAX_WIDTH, "forward", (0, 0))  # the per-group stencil
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
    "kind, channels, cg, cog, ow, stride, expected",
    [
        ("forward", 16, 1, 1, 8, 1, True),
        ("forward", 16, 1, 1, 9, 2, False),
        ("forward", 7, 1, 1, 4, 1, False),
        ("forward", 16, 1, 2, 4, 1, False),
        ("forward", 16, 2, 1, 4, 1, False),
        ("backward_input", 16, 1, 1, 8, 2, True),
        ("backward_input", 16, 1, 1, 9, 2, False),
        ("backward_weight", 16, 1, 1, 8, 1, True),
        ("backward_weight", 16, 1, 1, 9, 1, False),
        ("backward_weight", 16, 1, 1, 16, 2, True),
        ("backward_weight", 16, 1, 1, 17, 2, False),
        ("backward_weight", 7, 1, 1, 4, 2, False),
    ],
)
def test_route_takes_pure_depthwise_narrow_rows_with_enough_channels(kind, channels, cg, cog, ow, stride, expected):
    assert _conv_routing.use_depthwise_last(kind, channels, cg, cog, ow, stride) is expected


def test_depthwise_forward_with_a_wrong_weight_shape_names_the_op_before_a_kernel_runs():
    x = numdiff.zeros(2, 16, 8, 8)
    with pytest.raises(ValueError, match="conv2d"):
        numdiff.nn.functional.conv2d(x, numdiff.zeros(16, 2, 3, 3), groups=16)


def _torch_gradients(x, w, go, stride, padding, dilation):
    top, bottom, left, right = padding
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    padded = torch.nn.functional.pad(xt, (left, right, top, bottom))
    out = torch.nn.functional.conv2d(padded, wt, stride=stride, dilation=dilation, groups=x.shape[1])
    out.backward(torch.tensor(go))
    return xt.grad.numpy(), wt.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_depthwise_gradients_take_the_channels_last_cores_and_match_torch_and_the_stencil(case, dtype, monkeypatch):
    n, c, size, kernel, stride, padding, dilation = case
    rng = np.random.default_rng(3 * c + kernel + stride)
    x = rng.standard_normal((n, c) + size).astype(dtype)
    w = rng.standard_normal((c, 1, kernel, kernel)).astype(dtype)
    out_shape = _output_shape(n, c, size, kernel, stride, padding, dilation)
    go = rng.standard_normal(out_shape).astype(dtype)
    geometry = ((stride,) * 2, padding, (dilation,) * 2, c)
    planned = {kind: conv.conv2d_plan(kind, x.shape, w.shape, out_shape, *geometry)[0]
               for kind in ("backward_input", "backward_weight")}  # fmt: skip
    assert any(planned["backward_input"] is build for build in depthwise_backward_input_core)
    assert any(planned["backward_weight"] is build for build in depthwise_backward_weight_core)

    def gradients():
        gi, gw = np.full(x.shape, np.nan, dtype), np.full(w.shape, np.nan, dtype)
        conv.conv2d_backward_input(go, w, gi, *geometry)
        conv.conv2d_backward_weight(x, go, gw, *geometry)
        return gi, gw

    got = gradients()
    monkeypatch.setitem(_conv_routing.DEPTHWISE_LAST_MAX_WIDTH, "backward_input", (0, 0))
    monkeypatch.setitem(_conv_routing.DEPTHWISE_LAST_MAX_WIDTH, "backward_weight", (0, 0))
    assert not any(conv.conv2d_plan("backward_weight", x.shape, w.shape, out_shape, *geometry)[0] is build
                   for build in depthwise_backward_weight_core)  # fmt: skip
    stencil = gradients()
    want = _torch_gradients(x, w, go, stride, padding, dilation)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for ours, theirs, reference in zip(got, stencil, want):
        np.testing.assert_allclose(ours, reference, rtol=tol, atol=tol * 10 * kernel)
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol * 10 * kernel)


def test_depthwise_gradients_on_two_threads_match_the_serial_builds(two_threads):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 24, 9, 9))
    w = rng.standard_normal((24, 1, 3, 3))
    go = rng.standard_normal((5, 24, 5, 5))
    sizes = (3, 3, 2, 2, 1, 1, 1, 1, 5, 5)
    gi = {}
    gw = {}
    for build, parts in (("serial", 1), ("parallel", 2)):
        gi[build], gw[build] = np.empty((5, 24, 1, 9, 9)), np.empty((24, 1, 9))
        getattr(depthwise_backward_input_core, build)(go.reshape(5, 24, 1, 25), w.reshape(24, 1, 9), gi[build], *sizes,
                                                      parts)  # fmt: skip
        getattr(depthwise_backward_weight_core, build)(x.reshape(5, 24, 1, 9, 9), go.reshape(5, 24, 1, 25), gw[build],
                                                       *sizes, parts)  # fmt: skip
    assert np.array_equal(gi["serial"], gi["parallel"])  # each image's gradient is one thread's
    np.testing.assert_allclose(gw["parallel"], gw["serial"], rtol=1e-12, atol=1e-12)  # parts summed in order
    want_gi, want_gw = _torch_gradients(x, w, go, 2, (1, 1, 1, 1), 1)
    np.testing.assert_allclose(gi["parallel"].reshape(x.shape), want_gi, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw["parallel"].reshape(w.shape), want_gw, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel, stride, padding, dilation", [(3, 1, 1, 1), (5, 2, 2, 1), (3, 2, 2, 2), (7, 1, 3, 1)])
def test_depthwise_layer_passes_gradcheck_in_float64(kernel, stride, padding, dilation):
    rng = np.random.default_rng(kernel + stride)
    x = numdiff.tensor(rng.standard_normal((2, 8, 7, 7)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((8, 1, kernel, kernel)), requires_grad=True)
    core, _ = conv.conv2d_plan("backward_weight", (2, 8, 7, 7), (8, 1, kernel, kernel),
                               tuple(numdiff.nn.functional.conv2d(x, w, stride=stride, padding=padding,
                                                                  dilation=dilation, groups=8).shape),
                               (stride,) * 2, (padding,) * 4, (dilation,) * 2, 8)  # fmt: skip
    assert any(core is build for build in depthwise_backward_weight_core)

    def layer(x, w):
        return numdiff.nn.functional.conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=8)

    assert numdiff.autograd.gradcheck(layer, (x, w), eps=1e-6, atol=1e-6)


def test_depthwise_transposed_convolution_with_output_padding_matches_torch_float64():
    # conv_transpose2d's forward is the input gradient, here with a bottom/right pad cut short by
    # output_padding; its input and weight gradients are the forward and the weight gradient.
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 16, 6, 6))
    w = rng.standard_normal((16, 1, 3, 3))
    results = []
    for lib in (numdiff, torch):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        out = lib.nn.functional.conv_transpose2d(xt, wt, stride=2, padding=1, output_padding=1, groups=16)
        go = np.random.default_rng(13).standard_normal(tuple(out.shape))
        out.backward(lib.tensor(go))
        results.append([np.asarray(t.detach().numpy()) for t in (out, xt.grad, wt.grad)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_depthwise_weight_gradient_with_a_wrong_output_gradient_shape_names_the_op_before_a_kernel_runs():
    x = np.zeros((2, 16, 8, 8), np.float32)
    with pytest.raises(ValueError, match="conv2d_backward_weight"):
        conv.conv2d_backward_weight(x, np.zeros((2, 16, 7, 8), np.float32), np.empty((16, 1, 3, 3), np.float32),
                                    padding=(1, 1, 1, 1), groups=16)  # fmt: skip
    with pytest.raises(ValueError, match="conv2d_backward_input"):
        conv.conv2d_backward_input(np.zeros((2, 16, 8, 8), np.float32), np.zeros((16, 1, 3, 3), np.float32),
                                   np.empty((2, 16, 9, 8), np.float32), padding=(1, 1, 1, 1), groups=16)  # fmt: skip
