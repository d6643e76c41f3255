"""numdiff.kernels._conv_narrow: the stride-1 forward to few output channels (any kernel size,
padding, dilation, groups) agrees with torch, is the route taken for such shapes, has a float64
gradient through conv2d, and bad arguments are refused before it runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.kernels import _conv_routing as routing
from numdiff.kernels._conv_narrow import narrow_forward_core
from numdiff.kernels._parallel import always_parallel, always_serial
from numdiff.kernels.conv import conv2d_forward, conv2d_plan


@pytest.fixture(autouse=True)
def _grouped_cases_stay_on_this_route(monkeypatch):
    """The grouped and depthwise cases here test the narrow loop; few channels a group would
    otherwise run the grouped stencil (numdiff.kernels._conv_grouped, tested in
    test_conv_grouped_kernels.py)."""
    monkeypatch.setattr(routing, "GROUPED_DIRECT_MAX_CHANNELS", 0)

SHAPES = [
    # (N, C, H, W, Co, (KH, KW), padding, dilation, groups)
    (2, 16, 20, 17, 3, (9, 9), 4, 1, 1),  # style transfer's last layer, smaller
    (3, 8, 12, 12, 4, (7, 7), 3, 1, 1),
    (2, 6, 11, 13, 2, (3, 3), 1, 2, 2),  # dilation and groups
    (2, 4, 10, 9, 4, (3, 5), (1, 2), 1, 4),  # depthwise, a rectangular filter
    (1, 5, 9, 16, 1, (5, 5), 0, 1, 1),  # one output channel, no padding
    (2, 3, 40, 21, 2, (5, 3), (2, 1), 1, 1),  # 40 rows: two row blocks, the second partial
    (1, 2, 5, 600, 1, (3, 3), 1, 1, 1),  # rows wider than a block: one row a block
    (2, 2, 15, 30, 3, (3, 7), (1, 6), 2, 1),  # more tap columns than channels: products along them
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("build", [always_serial, always_parallel])
@pytest.mark.parametrize("n,c,h,w,co,k,padding,dilation,groups", SHAPES)
def test_narrow_forward_matches_torch(n, c, h, w, co, k, padding, dilation, groups, build, dtype):
    rng = np.random.default_rng(n * c + co)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((co, c // groups, *k)).astype(dtype)
    bias = rng.standard_normal(co).astype(dtype)
    expected = torch.nn.functional.conv2d(
        torch.tensor(x), torch.tensor(weight), torch.tensor(bias), padding=padding, dilation=dilation, groups=groups
    ).numpy()
    pads = (padding,) * 4 if isinstance(padding, int) else (padding[0], padding[0], padding[1], padding[1])
    core, _ = conv2d_plan("forward", x.shape, weight.shape, expected.shape, (1, 1), pads, (dilation,) * 2, groups)
    assert core in narrow_forward_core
    out = np.full(expected.shape, np.nan, dtype)
    with build():
        conv2d_forward(x, weight, bias, out, (1, 1), pads, (dilation, dilation), groups)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)


def test_narrow_route_needs_few_output_channels_and_stride_one():
    assert routing.use_narrow(3, 16, 81, 64)
    assert not routing.use_narrow(routing.NARROW_MAX_CHANNELS + 1, 16, 81, 64)
    assert not routing.use_narrow(3, 1, 1, 64)  # a 1x1 from one channel: nothing to gather
    core, _ = conv2d_plan("forward", (2, 16, 20, 20), (3, 16, 9, 9), (2, 3, 10, 10), (2, 2), (4,) * 4, (1, 1), 1)
    assert core not in narrow_forward_core


def test_narrow_forward_has_a_float64_gradient():
    x = numdiff.randn(2, 4, 9, 10, dtype=numdiff.float64, requires_grad=True)
    weight = numdiff.randn(2, 4, 5, 5, dtype=numdiff.float64, requires_grad=True)
    bias = numdiff.randn(2, dtype=numdiff.float64, requires_grad=True)
    conv = numdiff.nn.functional.conv2d
    assert numdiff.autograd.gradcheck(lambda a, b, c: conv(a, b, c, padding=2), (x, weight, bias))


def test_narrow_forward_refuses_a_wrong_output_shape():
    x, weight = np.ones((1, 8, 12, 12)), np.ones((2, 8, 5, 5))
    with pytest.raises(ValueError, match="conv2d_forward"):
        conv2d_forward(x, weight, None, np.empty((1, 2, 9, 8)), (1, 1), (0, 0, 0, 0))
