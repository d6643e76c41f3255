"""Pooling kernels against the loop references in ``kernel_reference.py`` and against torch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from numdiff.kernels import pool
from tests.kernels import kernel_reference as ref

# (H, W, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = [
    (6, 6, (2, 2), (2, 2), (0, 0), (1, 1), False),
    (7, 5, (3, 2), (2, 1), (1, 1), (1, 2), True),
    (5, 8, (2, 3), (3, 2), (1, 1), (2, 1), True),
    (9, 4, (3, 3), (1, 3), (1, 0), (1, 1), False),
    (6, 7, (2, 2), (2, 2), (1, 1), (1, 1), True),  # last window starts in padding: dropped
]

# (H, W, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_CASES = [
    (6, 6, (2, 2), (2, 2), (0, 0), False, True, None),
    (5, 5, (3, 3), (2, 2), (1, 1), True, True, None),
    (5, 5, (3, 3), (2, 2), (1, 1), True, False, None),
    (7, 4, (2, 3), (3, 2), (1, 1), True, True, None),
    (6, 5, (3, 2), (2, 2), (1, 0), False, False, 5),
    (4, 9, (1, 4), (1, 3), (0, 2), True, True, None),
]


def _max(x, case):
    h, w, k, s, p, d, ceil_mode = case
    oh, ow = (
        ref.pool_out(h, k[0], s[0], p[0], d[0], ceil_mode),
        ref.pool_out(w, k[1], s[1], p[1], d[1], ceil_mode),
    )
    out = np.full(x.shape[:2] + (oh, ow), np.nan, x.dtype)
    idx = np.full(out.shape, -7, np.int64)
    pool.max_pool2d_forward(x, out, idx, k, s, p, d, ceil_mode)
    return out, idx


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool2d_matches_reference_values_and_indices(case, dtype, rng):
    x = rng.standard_normal((2, 3, case[0], case[1])).astype(dtype)
    out, idx = _max(x, case)
    expected, expected_idx = ref.max_pool2d(x, *case[2:])
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(idx, expected_idx)


def test_max_pool_ties_keep_first_and_nan_keeps_last_nan():
    x = np.array([[[[2.0, 2.0, np.nan, 1.0, np.nan, 0.0, -np.inf, -np.inf]]]])
    out, idx = _max(x, (1, 8, (1, 2), (1, 2), (0, 0), (1, 1), False))
    np.testing.assert_array_equal(out[0, 0, 0], [2.0, np.nan, np.nan, -np.inf])
    np.testing.assert_array_equal(idx[0, 0, 0], [0, 2, 4, 6])
    window = np.array([[[[np.nan, 3.0, np.nan, 5.0]]]])
    out, idx = _max(window, (1, 4, (1, 4), (1, 1), (0, 0), (1, 1), False))
    assert np.isnan(out[0, 0, 0, 0]) and idx[0, 0, 0, 0] == 2


@pytest.mark.parametrize("case", MAX_CASES[:3])
def test_max_pool_backward_scatters_and_gather_is_its_adjoint(case, dtype, rng):
    x = rng.standard_normal((2, 2, case[0], case[1])).astype(dtype)
    _, idx = _max(x, case)
    go = rng.standard_normal(idx.shape).astype(dtype)
    gi = pool.max_pool_backward(go, idx, np.full_like(x, np.nan))
    expected = np.zeros(x.shape, np.float64)
    for a, b, o in np.ndindex(2, 2, idx[0, 0].size):
        expected[a, b].flat[idx[a, b].flat[o]] += go[a, b].flat[o]
    np.testing.assert_allclose(gi, expected, rtol=1e-6)
    src = rng.standard_normal(x.shape).astype(dtype)
    gathered = pool.max_pool_gather(src, idx, np.empty_like(go))
    np.testing.assert_allclose(np.vdot(gathered, go), np.vdot(src, gi), rtol=1e-5)


def test_window_wholly_in_padding_gives_minus_inf_and_no_gradient():
    # H = 1, kernel 2 with dilation 2 and padding 1: the taps sit at rows -1 and 1, both outside.
    x = np.array([[[[3.0]]]])
    out, idx = _max(x, (1, 1, (2, 1), (1, 1), (1, 0), (2, 1), False))
    assert out[0, 0, 0, 0] == -np.inf and idx[0, 0, 0, 0] == 1  # PyTorch reports row 1 too
    gi = pool.max_pool_backward(np.ones((1, 1, 1, 1)), idx, np.full_like(x, np.nan))
    assert gi[0, 0, 0, 0] == 0
    assert pool.max_pool_gather(np.ones_like(x), idx, np.full((1, 1, 1, 1), np.nan))[0, 0, 0, 0] == 0


def test_scatter_and_gather_ignore_indices_outside_the_plane():
    gi = pool.max_pool_backward(np.ones((1, 1, 3)), np.array([[[0, 4, -1]]]), np.full((1, 1, 4), np.nan))
    np.testing.assert_array_equal(gi, [[[1.0, 0.0, 0.0, 0.0]]])
    out = pool.max_pool_gather(np.full((1, 1, 4), 2.0), np.array([[[-1, 3]]]), np.empty((1, 1, 2)))
    np.testing.assert_array_equal(out, [[[0.0, 2.0]]])


@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool2d_forward_and_backward_match_reference(case, dtype, rng):
    h, w, k, s, p, ceil_mode, cip, div = case
    x = rng.standard_normal((2, 3, h, w)).astype(dtype)
    expected = ref.avg_pool2d(x, k, s, p, ceil_mode, cip, div)
    out = pool.avg_pool2d_forward(x, np.full(expected.shape, np.nan, dtype), k, s, p, ceil_mode, cip, div)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol)
    # The backward is the adjoint of the (linear) forward: <avg(x), g> == <x, avg_backward(g)>.
    g = rng.standard_normal(expected.shape).astype(dtype)
    gi = pool.avg_pool2d_backward(g, np.full_like(x, np.nan), k, s, p, ceil_mode, cip, div)
    np.testing.assert_allclose(np.vdot(x.astype(np.float64), gi), np.vdot(expected, g), rtol=rtol * 10)
    basis = np.zeros_like(x)
    basis[1, 2, h - 1, w - 1] = 1.0
    column = ref.avg_pool2d(basis, k, s, p, ceil_mode, cip, div)
    assert np.isclose(gi[1, 2, h - 1, w - 1], np.vdot(column, g), rtol=rtol * 10, atol=rtol)


@pytest.mark.parametrize(
    "in_hw,out_hw", [((5, 7), (3, 2)), ((4, 4), (4, 4)), ((3, 8), (5, 3)), ((6, 6), (1, 1))]
)
def test_adaptive_pools_match_reference(in_hw, out_hw, dtype, rng):
    x = rng.standard_normal((2, 3) + in_hw).astype(dtype)
    out = pool.adaptive_avg_pool2d_forward(x, np.empty((2, 3) + out_hw, dtype))
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out, ref.adaptive_avg_pool2d(x, out_hw), rtol=rtol, atol=rtol)
    g = rng.standard_normal(out.shape).astype(dtype)
    gi = pool.adaptive_avg_pool2d_backward(g, np.empty_like(x))
    np.testing.assert_allclose(
        np.vdot(x.astype(np.float64), gi), np.vdot(out.astype(np.float64), g), rtol=rtol * 10
    )
    vals, idx = np.empty((2, 3) + out_hw, dtype), np.empty((2, 3) + out_hw, np.int64)
    pool.adaptive_max_pool2d_forward(x, vals, idx)
    expected_vals, expected_idx = ref.adaptive_max_pool2d(x, out_hw)
    np.testing.assert_array_equal(vals, expected_vals)
    np.testing.assert_array_equal(idx, expected_idx)


def test_adaptive_avg_pool_windows_overlap_like_pytorch():
    x = np.array([[[[1.0, 2.0, 4.0, 8.0, 16.0]]]])
    out = pool.adaptive_avg_pool2d_forward(x, np.empty((1, 1, 1, 3)))
    np.testing.assert_allclose(out[0, 0, 0], [1.5, 14.0 / 3.0, 12.0])


@settings(max_examples=40, deadline=None)
@given(
    size=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pad=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    ceil_mode=st.booleans(),
    count_include_pad=st.booleans(),
)
def test_pools_random_configurations_match_reference(
    size, kernel, stride, pad, dilation, ceil_mode, count_include_pad
):
    pad = (min(pad[0], kernel[0] // 2), min(pad[1], kernel[1] // 2))
    eff = (dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1)
    assume(size[0] + 2 * pad[0] >= eff[0] and size[1] + 2 * pad[1] >= eff[1])
    x = np.random.default_rng(5).standard_normal((1, 2) + size)
    out, idx = _max(x, (size[0], size[1], kernel, stride, pad, dilation, ceil_mode))
    expected, expected_idx = ref.max_pool2d(x, kernel, stride, pad, dilation, ceil_mode)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(idx, expected_idx)
    expected = ref.avg_pool2d(x, kernel, stride, pad, ceil_mode, count_include_pad, None)
    out = pool.avg_pool2d_forward(
        x, np.empty(expected.shape), kernel, stride, pad, ceil_mode, count_include_pad
    )
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool2d_matches_torch(case, dtype, rng):
    torch = pytest.importorskip("torch")
    h, w, k, s, p, ceil_mode, cip, div = case
    x = rng.standard_normal((2, 3, h, w)).astype(dtype)
    tx = torch.from_numpy(x).requires_grad_()
    y = torch.nn.functional.avg_pool2d(tx, k, s, p, ceil_mode, cip, div)
    g = rng.standard_normal(tuple(y.shape)).astype(dtype)
    y.backward(torch.from_numpy(g))
    out = pool.avg_pool2d_forward(x, np.empty(tuple(y.shape), dtype), k, s, p, ceil_mode, cip, div)
    gi = pool.avg_pool2d_backward(g, np.empty_like(x), k, s, p, ceil_mode, cip, div)
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(out, y.detach().numpy(), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(gi, tx.grad.numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool2d_matches_torch_including_nan(case, dtype, rng):
    torch = pytest.importorskip("torch")
    h, w, k, s, p, d, ceil_mode = case
    x = rng.standard_normal((2, 3, h, w)).astype(dtype)
    x[0, 0, 1, 1] = np.nan
    x[1, 2, 0, :2] = np.nan
    values, indices = torch.nn.functional.max_pool2d(
        torch.from_numpy(x), k, s, p, d, ceil_mode, return_indices=True
    )
    out, idx = _max(x, case)
    np.testing.assert_array_equal(out, values.numpy())
    np.testing.assert_array_equal(idx, indices.numpy())


def test_pool_rejects_padding_over_half_the_kernel():
    with pytest.raises(ValueError, match=r"padding \(2, 0\) must be at most half the kernel size \(3, 3\)"):
        pool.avg_pool2d_forward(np.ones((1, 1, 5, 5)), np.empty((1, 1, 3, 3)), (3, 3), (1, 1), (2, 0))


def test_pool_rejects_wrong_output_shape():
    with pytest.raises(
        ValueError, match=r"max_pool2d_forward: output must have shape \(1, 1, 2, 2\), got \(1, 1, 3, 3\)"
    ):
        pool.max_pool2d_forward(
            np.ones((1, 1, 4, 4)), np.empty((1, 1, 3, 3)), np.empty((1, 1, 3, 3), np.int64), (2, 2), (2, 2)
        )


def test_pool_rejects_zero_divisor_override():
    with pytest.raises(ValueError, match="avg_pool2d_forward: divisor_override must be a non-zero int, got 0"):
        pool.avg_pool2d_forward(
            np.ones((1, 1, 4, 4)), np.empty((1, 1, 2, 2)), (2, 2), (2, 2), divisor_override=0
        )


def test_pool_rejects_int32_indices():
    with pytest.raises(TypeError, match="indices must be an int64 ndarray, got int32"):
        pool.max_pool2d_forward(
            np.ones((1, 1, 4, 4)), np.empty((1, 1, 2, 2)), np.empty((1, 1, 2, 2), np.int32), (2, 2), (2, 2)
        )


def test_pool_output_size_follows_ceil_mode_rule():
    assert pool.pool_output_size(5, 2, 2, 1, 1, True) == 3
    assert pool.pool_output_size(6, 2, 2, 1, 1, True) == 4
    assert pool.pool_output_size(6, 2, 2, 1, 1, False) == 4
    assert pool.pool_output_size(4, 3, 2, 1, 1, True) == 3


@pytest.mark.parametrize("in_hw,out_hw", [((5, 7), (3, 2)), ((3, 8), (5, 3))])
def test_adaptive_pools_match_torch(in_hw, out_hw, dtype, rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3) + in_hw).astype(dtype)
    x[0, 1, 0, 0] = np.nan
    tx = torch.from_numpy(x)
    values, indices = torch.nn.functional.adaptive_max_pool2d(tx, out_hw, return_indices=True)
    vals, idx = np.empty((2, 3) + out_hw, dtype), np.empty((2, 3) + out_hw, np.int64)
    pool.adaptive_max_pool2d_forward(x, vals, idx)
    np.testing.assert_array_equal(vals, values.numpy())
    np.testing.assert_array_equal(idx, indices.numpy())
    x[0, 1, 0, 0] = 0.5
    expected = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x), out_hw).numpy()
    out = pool.adaptive_avg_pool2d_forward(x, np.empty((2, 3) + out_hw, dtype))
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol)
