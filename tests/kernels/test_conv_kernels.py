"""Convolution kernels against the einsum references in ``reference.py`` and against torch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import numdiff
from numdiff.kernels import _conv_routing, conv
from tests.kernels import kernel_reference as ref


@pytest.fixture(autouse=True)
def _grouped_cases_stay_on_this_route(monkeypatch):
    """The grouped cases here test this file's route; few channels a group would otherwise run
    the grouped stencil (numdiff.kernels._conv_grouped, tested in test_conv_grouped_kernels.py)."""
    monkeypatch.setattr(_conv_routing, "GROUPED_DIRECT_MAX_CHANNELS", 0)

# (N, C, H, W, Co, KH, KW, stride, padding (t, b, l, r), dilation, groups)
CASES = [
    (2, 3, 7, 6, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 4, 9, 8, 6, 3, 2, (2, 1), (1, 0, 2, 1), (1, 2), 2),
    (3, 4, 6, 6, 4, 3, 3, (1, 2), (2, 2, 0, 1), (2, 1), 4),  # depthwise
    (2, 6, 5, 7, 3, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 3),  # pointwise, grouped
    (1, 2, 5, 5, 2, 1, 1, (2, 2), (1, 1, 1, 1), (1, 1), 1),  # 1x1 that is not pointwise
    (2, 2, 8, 8, 3, 2, 2, (3, 3), (0, 0, 0, 0), (3, 3), 1),
    (1, 1, 6, 6, 1, 3, 3, (1, 1), (1, -1, 2, -1), (1, 1), 1),  # negative pad crops
]


def _run(case, dtype, rng):
    n, c, h, w, co, kh, kw, stride, padding, dilation, groups = case
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((co, c // groups, kh, kw)).astype(dtype)
    bias = rng.standard_normal(co).astype(dtype)
    expected = ref.conv2d(x, weight, bias, stride, padding, dilation, groups)
    out = np.full(expected.shape, np.nan, dtype)
    conv.conv2d_forward(x, weight, bias, out, stride, padding, dilation, groups)
    go = rng.standard_normal(expected.shape).astype(dtype)
    gi = np.full_like(x, np.nan)
    conv.conv2d_backward_input(go, weight, gi, stride, padding, dilation, groups)
    gw = np.full_like(weight, np.nan)
    conv.conv2d_backward_weight(x, go, gw, stride, padding, dilation, groups)
    return x, weight, go, expected, out, gi, gw


def _close(actual, expected, dtype, scale=1.0):
    rtol, atol = (1e-11, 1e-11) if dtype == np.float64 else (1e-4, 1e-4)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale)


@pytest.fixture(params=["im2col", "batched"])
def route(request, monkeypatch):
    """Every output size through the per-image im2col cores, or through the batched ones."""
    most_positions = 0 if request.param == "im2col" else 1 << 30
    monkeypatch.setattr(_conv_routing, "BATCHED_MAX_POSITIONS", most_positions)
    monkeypatch.setattr(_conv_routing, "BATCHED_GRADIENT_MAX_POSITIONS", most_positions)
    return request.param


@pytest.mark.parametrize("case", CASES)
def test_conv2d_forward_and_backward_match_reference(case, dtype, rng, route):
    x, weight, go, expected, out, gi, gw = _run(case, dtype, rng)
    _, _, _, _, _, _, _, stride, padding, dilation, groups = case
    _close(out, expected, dtype)
    _close(gi, ref.conv2d_backward_input(go, weight, x.shape, stride, padding, dilation, groups), dtype)
    _close(gw, ref.conv2d_backward_weight(x, go, weight.shape, stride, padding, dilation, groups), dtype, 4)


@pytest.mark.parametrize("case", CASES[:3])
def test_conv2d_with_one_row_tiles_matches_reference(case, rng, monkeypatch):
    monkeypatch.setattr(_conv_routing, "TILE_ELEMENTS", 1)
    monkeypatch.setattr(_conv_routing, "BATCHED_MAX_POSITIONS", 0)  # the per-image cores' tiles
    x, weight, go, expected, out, gi, gw = _run(case, np.float64, rng)
    _, _, _, _, _, _, _, stride, padding, dilation, groups = case
    for kind in ("forward", "backward_input", "backward_weight"):  # the plans read the patched size
        _, sizes = conv.conv2d_plan(kind, x.shape, weight.shape, out.shape, stride, padding, dilation, groups)
        assert sizes[10] == 1, kind  # one output row a tile
    _close(out, expected, np.float64)
    _close(gi, ref.conv2d_backward_input(go, weight, x.shape, stride, padding, dilation, groups), np.float64)
    _close(gw, ref.conv2d_backward_weight(x, go, weight.shape, stride, padding, dilation, groups), np.float64)


# (N, C, H, W, Co, KH, KW, padding, dilation, groups): stride 1, to at most half the channels
FEW_CHANNEL_CASES = [
    (2, 16, 20, 18, 3, 9, 9, (4, 4, 4, 4), (1, 1), 1),  # style transfer's last layer, smaller
    (2, 8, 9, 11, 2, 3, 5, (1, 0, 2, 1), (2, 1), 2),  # uneven pads, dilation, groups
    (2, 12, 10, 10, 2, 3, 3, (1, -1, 2, -1), (1, 1), 1),  # negative pads crop
    (1, 6, 12, 13, 3, 4, 2, (3, 0, 0, 1), (1, 2), 3),  # even kernel, one channel a group
]


@pytest.mark.parametrize("case", FEW_CHANNEL_CASES)
def test_input_gradient_to_many_channels_runs_as_a_forward_gather(case, dtype, rng, monkeypatch):
    # From few channels to many (stride 1), the input gradient is a forward convolution of the
    # output gradient with the flipped weight: Cog*KH*KW patch rows gathered, not Cg*KH*KW scattered.
    n, c, h, w, co, kh, kw, padding, dilation, groups = case
    weight = rng.standard_normal((co, c // groups, kh, kw)).astype(dtype)
    out_h = conv.conv_output_size(h, kh, 1, *padding[:2], dilation[0])
    out_w = conv.conv_output_size(w, kw, 1, *padding[2:], dilation[1])
    go = rng.standard_normal((n, co, out_h, out_w)).astype(dtype)
    monkeypatch.setattr(_conv_routing, "BATCHED_MAX_POSITIONS", 0)
    calls = []
    gather = conv._backward_input_as_forward
    monkeypatch.setattr(conv, "_backward_input_as_forward", lambda *args: calls.append(1) or gather(*args))
    gi = conv.conv2d_backward_input(go, weight, np.full((n, c, h, w), np.nan, dtype), (1, 1), padding, dilation, groups)
    assert calls == [1]
    _close(gi, ref.conv2d_backward_input(go, weight, (n, c, h, w), (1, 1), padding, dilation, groups), dtype)
    # Strided, or to as many channels as it reads, the scatter-add route stays.
    assert not _conv_routing.gather_input_gradient(3, 16, (2, 1))
    assert not _conv_routing.gather_input_gradient(9, 16, (1, 1))


def test_conv2d_to_few_channels_passes_gradcheck():
    # 6 -> 2 channels, stride 1, 7x7 outputs: its input gradient takes the forward-gather route.
    assert _conv_routing.gather_input_gradient(2, 6, (1, 1))
    rng = np.random.default_rng(5)
    x = numdiff.tensor(rng.standard_normal((2, 6, 7, 7)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((2, 6, 3, 3)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(2), requires_grad=True)
    fn = numdiff.nn.functional
    assert numdiff.autograd.gradcheck(lambda x, w, b: fn.conv2d(x, w, b, padding=1, dilation=1), (x, w, b))
    assert numdiff.autograd.gradgradcheck(lambda x, w, b: fn.conv2d(x, w, b, padding=(2, 1), dilation=(2, 1)), (x, w, b))


def test_backward_input_is_the_adjoint_of_forward(rng):
    # <conv(x), g> == <x, conv_backward_input(g)> for any x, g: the transposed-conv identity.
    x = rng.standard_normal((2, 4, 7, 5))
    w = rng.standard_normal((6, 2, 3, 2))
    args = ((2, 1), (1, 2, 0, 1), (1, 2), 2)
    out = np.empty((2, 6, 4, 4))
    conv.conv2d_forward(x, w, None, out, *args)
    g = rng.standard_normal(out.shape)
    gi = conv.conv2d_backward_input(g, w, np.empty_like(x), *args)
    assert np.isclose(np.vdot(out, g), np.vdot(x, gi), rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 3),
    cg=st.integers(1, 3),
    cog=st.integers(1, 3),
    groups=st.integers(1, 3),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
)
def test_conv2d_random_configurations_match_reference(
    n, cg, cog, groups, size, kernel, stride, padding, dilation
):
    h, w = size
    eff_h, eff_w = dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1
    assume(h + padding[0] + padding[1] >= eff_h and w + padding[2] + padding[3] >= eff_w)
    case = (n, cg * groups, h, w, cog * groups, kernel[0], kernel[1], stride, padding, dilation, groups)
    previous = _conv_routing.BATCHED_MAX_POSITIONS, _conv_routing.BATCHED_GRADIENT_MAX_POSITIONS
    try:
        for most_positions in (0, 1 << 30):  # the per-image im2col cores, then the batched ones
            _conv_routing.BATCHED_MAX_POSITIONS = most_positions
            _conv_routing.BATCHED_GRADIENT_MAX_POSITIONS = most_positions
            rng = np.random.default_rng(0)
            x, weight, go, expected, out, gi, gw = _run(case, np.float64, rng)
            _close(out, expected, np.float64)
            _close(gi, ref.conv2d_backward_input(go, weight, x.shape, stride, padding, dilation, groups), np.float64)
            _close(gw, ref.conv2d_backward_weight(x, go, weight.shape, stride, padding, dilation, groups), np.float64)
    finally:
        _conv_routing.BATCHED_MAX_POSITIONS, _conv_routing.BATCHED_GRADIENT_MAX_POSITIONS = previous


@pytest.mark.parametrize("case", CASES[:3])
def test_conv2d_matches_torch(case, dtype, rng):
    torch = pytest.importorskip("torch")
    n, c, h, w, co, kh, kw, stride, padding, dilation, groups = case
    top, bottom, left, right = padding
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((co, c // groups, kh, kw)).astype(dtype)
    bias = rng.standard_normal(co).astype(dtype)
    tx = torch.from_numpy(x).requires_grad_()
    tw = torch.from_numpy(weight).requires_grad_()
    tb = torch.from_numpy(bias).requires_grad_()
    padded = torch.nn.functional.pad(tx, (left, right, top, bottom))
    y = torch.nn.functional.conv2d(padded, tw, tb, stride, 0, dilation, groups)
    go = rng.standard_normal(tuple(y.shape)).astype(dtype)
    y.backward(torch.from_numpy(go))
    out = conv.conv2d_forward(
        x, weight, bias, np.empty(tuple(y.shape), dtype), stride, padding, dilation, groups
    )
    gi = conv.conv2d_backward_input(go, weight, np.empty_like(x), stride, padding, dilation, groups)
    gw = conv.conv2d_backward_weight(x, go, np.empty_like(weight), stride, padding, dilation, groups)
    scale = 1.0 if dtype == np.float64 else 4.0
    _close(out, y.detach().numpy(), dtype, scale)
    _close(gi, tx.grad.numpy(), dtype, scale)
    _close(gw, tw.grad.numpy(), dtype, scale)


def test_conv2d_rejects_groups_not_dividing_channels():
    with pytest.raises(ValueError, match="conv2d_forward: groups=2 must divide in_channels=3"):
        conv.conv2d_forward(
            np.ones((1, 3, 4, 4)), np.ones((2, 1, 3, 3)), None, np.empty((1, 2, 2, 2)), groups=2
        )


def test_conv2d_rejects_weight_channel_mismatch():
    with pytest.raises(ValueError, match=r"weight \(2, 2, 3, 3\) expects 2 input channels"):
        conv.conv2d_forward(np.ones((1, 3, 4, 4)), np.ones((2, 2, 3, 3)), None, np.empty((1, 2, 2, 2)))


def test_conv2d_rejects_kernel_larger_than_padded_input():
    with pytest.raises(ValueError, match=r"kernel 5x5 \(dilation 1x1\) is larger than the padded input 4x4"):
        conv.conv2d_forward(np.ones((1, 1, 4, 4)), np.ones((1, 1, 5, 5)), None, np.empty((1, 1, 1, 1)))


def test_conv2d_rejects_wrong_output_shape():
    with pytest.raises(ValueError, match=r"output must have shape \(1, 1, 2, 2\)"):
        conv.conv2d_forward(np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)), None, np.empty((1, 1, 3, 3)))


def test_conv2d_rejects_non_positive_stride():
    with pytest.raises(ValueError, match=r"conv2d_forward: stride must be positive, got \(0, 1\)"):
        conv.conv2d_forward(
            np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)), None, np.empty((1, 1, 2, 2)), (0, 1)
        )


def test_conv2d_rejects_mixed_dtypes():
    with pytest.raises(TypeError, match="all arrays must share one dtype"):
        conv.conv2d_forward(
            np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3)), None, np.empty((1, 1, 2, 2))
        )


def test_conv2d_rejects_bias_of_wrong_length():
    with pytest.raises(ValueError, match=r"bias must have shape \(1\), got \(2,\)"):
        conv.conv2d_forward(np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)), np.ones(2), np.empty((1, 1, 2, 2)))
