"""Depthwise and grouped convolutions (groups > 1, few channels a group) on the direct per-group
stencil of numdiff.kernels._conv_grouped, against PyTorch (reference only) over the population
they serve: channel multipliers 1 and 2, 2-8 channels a group, kernels 1-7, strides 1 and 2,
'same' and asymmetric padding, dilation, batches of 1 and more, float32 and float64, 1-, 2- and
3-d. Each case first checks that the plan really picked the grouped cores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.kernels import _conv_routing, _parallel, conv
from numdiff.kernels._conv_depthwise import (
    depthwise_backward_input_core,
    depthwise_backward_weight_core,
    depthwise_forward_core,
)
from numdiff.kernels._conv_grouped import (
    grouped_backward_input_core,
    grouped_backward_weight_core,
    grouped_forward_core,
)

# Both builds (serial, parallel) of each grouped core, and of the depthwise cores that narrow output
# rows take instead (numdiff.kernels._conv_depthwise, tested in test_conv_depthwise_kernel.py).
GROUPED_CORES = [build for pair in (grouped_forward_core, grouped_backward_input_core, grouped_backward_weight_core,
                                    depthwise_forward_core, depthwise_backward_input_core,
                                    depthwise_backward_weight_core) for build in pair]  # fmt: skip

# (N, C_in, C_out, size, kernel, stride, padding, dilation, groups)
CASES_2D = [
    (2, 4, 4, (7, 9), 3, 1, 1, 1, 4),  # depthwise 3x3
    (1, 6, 6, (9, 7), 5, 1, "same", 1, 6),  # batch 1, 'same'
    (3, 8, 8, (10, 10), 3, 2, 1, 1, 8),  # MobileNet's strided depthwise
    (2, 4, 4, (11, 10), 3, 2, 2, 2, 4),  # strided and dilated
    (2, 4, 4, (7, 7), 7, 1, 3, 1, 4),  # ConvNeXt's 7x7 depthwise
    (2, 4, 8, (8, 8), 3, 1, 1, 1, 4),  # channel multiplier 2
    (2, 8, 16, (9, 9), 3, 1, 1, 1, 2),  # 4 channels a group, 8 outputs a group (ResNeXt-like)
    (2, 12, 6, (8, 8), 1, 1, 0, 1, 3),  # grouped 1x1 (ShuffleNet)
    (1, 4, 4, (5, 6), 3, 2, 0, 1, 4),  # unpadded, odd width
    (2, 16, 16, (6, 6), 5, 2, (2, 1), 1, 2),  # 8 channels a group, padding per axis
    (2, 4, 4, (3, 3), 5, 1, 2, 1, 4),  # kernel larger than the image
]


def _run(lib, x, w, b, go, fn, **options):
    xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
    out = fn(lib)(xt, wt, bt, **options)
    out.backward(lib.tensor(go))
    return [np.asarray(t.detach().numpy()) for t in (out, xt.grad, wt.grad, bt.grad)]


def _compare(dims, n, c_in, c_out, size, kernel, stride, padding, dilation, groups, dtype):
    rng = np.random.default_rng(n * 7 + c_in + kernel)
    x = rng.standard_normal((n, c_in) + size).astype(dtype)
    w = rng.standard_normal((c_out, c_in // groups) + (kernel,) * dims).astype(dtype)
    b = rng.standard_normal(c_out).astype(dtype)
    name = f"conv{dims}d"
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    want_out = getattr(torch.nn.functional, name)(torch.tensor(x), torch.tensor(w), torch.tensor(b), **options)
    go = rng.standard_normal(tuple(want_out.shape)).astype(dtype)
    got = _run(numdiff, x, w, b, go, lambda lib: getattr(lib.nn.functional, name), **options)
    want = _run(torch, x, w, b, go, lambda lib: getattr(lib.nn.functional, name), **options)
    tol = 2e-4 if dtype == np.float32 else 1e-11
    for label, g, r in zip(("output", "input gradient", "weight gradient", "bias gradient"), got, want):
        scale = max(1.0, float(np.abs(r).max()))
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * scale, err_msg=label)


def _takes_grouped_route(x_shape, w_shape, out_shape, stride, padding, dilation, groups):
    for kind in ("forward", "backward_input", "backward_weight"):
        core, _ = conv.conv2d_plan(kind, x_shape, w_shape, out_shape, stride, padding, dilation, groups)
        if not any(core is build for build in GROUPED_CORES):
            return False
    return True


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES_2D)
def test_conv2d_grouped_forward_and_gradients_match_torch(case, dtype):
    n, c_in, c_out, size, kernel, stride, padding, dilation, groups = case
    assert c_in // groups <= _conv_routing.GROUPED_DIRECT_MAX_CHANNELS
    _compare(2, n, c_in, c_out, size, kernel, stride, padding, dilation, groups, dtype)


@pytest.mark.parametrize(
    "case",
    [
        (2, 6, 6, (11,), 5, 1, "same", 1, 6),  # depthwise 1-d
        (2, 4, 8, (12,), 3, 2, 1, 2, 4),  # multiplier 2, strided, dilated
    ],
)
def test_conv1d_depthwise_matches_torch(case):
    _compare(1, *case, np.float64)


def test_conv3d_depthwise_matches_torch():
    _compare(3, 2, 4, 4, (5, 6, 5), 3, 1, 1, 1, 4, np.float64)
    _compare(3, 1, 4, 8, (6, 5, 6), 3, 2, 1, 1, 4, np.float32)


def test_plan_routes_groups_with_few_channels_to_the_grouped_cores():
    geometry = ((1, 1), (1, 1, 1, 1), (1, 1))
    assert _takes_grouped_route((2, 8, 6, 6), (8, 1, 3, 3), (2, 8, 6, 6), *geometry, 8)
    assert _takes_grouped_route((2, 8, 6, 6), (16, 4, 3, 3), (2, 16, 6, 6), *geometry, 2)
    # A dense convolution and groups with many channels each stay on the GEMM routes.
    assert not _takes_grouped_route((2, 8, 6, 6), (8, 8, 3, 3), (2, 8, 6, 6), *geometry, 1)
    wide = _conv_routing.GROUPED_DIRECT_MAX_CHANNELS + 1
    assert not _takes_grouped_route((2, 2 * wide, 6, 6), (4, wide, 3, 3), (2, 4, 6, 6), *geometry, 2)


@pytest.mark.parametrize("stride, padding, dilation", [(1, 1, 1), (2, 1, 1), (1, 2, 2)])
def test_conv2d_depthwise_gradcheck_float64(stride, padding, dilation):
    rng = np.random.default_rng(stride + 3 * dilation)
    x = numdiff.tensor(rng.standard_normal((2, 4, 5, 6)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((8, 2, 3, 3)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(8), requires_grad=True)

    def f(x, w, b):
        return numdiff.nn.functional.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=2)

    assert numdiff.autograd.gradcheck(f, (x, w, b))
    assert numdiff.autograd.gradgradcheck(f, (x, w, b))


def test_conv_transpose2d_depthwise_matches_torch():
    """conv_transpose's forward is the input-gradient kernel and its input gradient the forward."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 5, 5))
    w = rng.standard_normal((4, 1, 3, 3))
    options = dict(stride=2, padding=1, output_padding=1, groups=4)
    got = numdiff.nn.functional.conv_transpose2d(numdiff.tensor(x), numdiff.tensor(w), **options)
    want = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), **options)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_groups_not_dividing_channels_names_the_op_and_the_values():
    x = numdiff.zeros(1, 6, 5, 5)
    w = numdiff.zeros(6, 1, 3, 3)
    with pytest.raises(ValueError, match=r"conv2d: groups=4 must divide in_channels=6 and out_channels=6"):
        numdiff.nn.functional.conv2d(x, w, groups=4)


def test_kernel_rejects_a_weight_that_does_not_fit_the_groups():
    """The kernels' own check runs before any compiled loop: a weight with 2 channels a group
    for an input of 1 a group."""
    with pytest.raises(ValueError, match="conv2d_forward"):
        conv.conv2d_forward(np.zeros((1, 4, 5, 5)), np.zeros((4, 2, 3, 3)), None, np.zeros((1, 4, 3, 3)), groups=4)


@pytest.mark.parametrize("build", ["serial", "parallel"])
@pytest.mark.parametrize(
    "case",
    [
        (5, 6, 6, (9, 8), 3, 2, 1, 1, 6),  # strided depthwise, 5 images in blocks of 2 (the last one short)
        (7, 4, 8, (6, 7), 5, 1, 2, 2, 4),  # multiplier 2, dilated 5x5, blocks of 3
        (3, 8, 8, (5, 5), 3, 1, 1, 1, 2),  # 4 channels a group, 1 image a block
    ],
)
def test_grouped_cores_stack_images_in_blocks_like_one_at_a_time(case, build, monkeypatch):
    """The cores stage a block of images one after another and run each tap over the whole block:
    several blocks, a short last one and blocks of one image give torch's results, in both builds."""
    n, c_in, c_out, size, kernel, stride, padding, dilation, groups = case
    cg, cog = c_in // groups, c_out // groups
    out_h = (size[0] + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    out_w = (size[1] + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    plane = (out_h + (kernel - 1) * dilation // stride) * (out_w + (kernel - 1) * dilation // stride)
    per_image = (cg * stride * stride + cog) * plane
    images = {5: 2, 7: 3, 3: 1}[n]
    monkeypatch.setattr(_conv_routing, "GROUPED_BLOCK_ELEMENTS", images * per_image)
    assert _conv_routing.grouped_images(n, groups, cg, cog, kernel, kernel, stride, stride, dilation, dilation,
                                        out_h, out_w, 1) == images
    force = _parallel.always_parallel if build == "parallel" else _parallel.always_serial
    with force():
        _compare(2, n, c_in, c_out, size, kernel, stride, padding, dilation, groups, np.float64)


def test_grouped_images_fills_the_block_budget_in_equal_blocks_for_every_thread(monkeypatch):
    geometry = (3, 3, 1, 1, 1, 1, 14, 14)  # 3x3, stride 1: planes of 16 x 16 staged positions
    per_image = 2 * 256  # one staged input channel and one output run, depthwise
    monkeypatch.setattr(_conv_routing, "GROUPED_BLOCK_ELEMENTS", 64 * per_image)
    # 200 images fit 64 a block: 4 blocks, of 50 each rather than 64, 64, 64, 8.
    assert _conv_routing.grouped_images(200, 128, 1, 1, *geometry, 1) == 50
    assert _conv_routing.grouped_images(64, 128, 1, 1, *geometry, 1) == 64
    # Two groups and four threads: the batch is cut so that groups x blocks >= threads.
    assert _conv_routing.grouped_images(8, 2, 1, 1, *geometry, 4) == 4
    # A budget smaller than one image still runs one image a block.
    monkeypatch.setattr(_conv_routing, "GROUPED_BLOCK_ELEMENTS", 1)
    assert _conv_routing.grouped_images(8, 2, 1, 1, *geometry, 1) == 1
