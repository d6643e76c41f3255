"""numdiff.kernels._gate_math: the recurrent kernels' sigmoid and tanh, float32 kept in float32,
against exact values (float64 NumPy) over wide samples, and their special values."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels._gate_math import sigmoid, tanh
from numdiff.kernels._self_healing_cache import njit


@njit(cache=True, error_model="numpy")
def _apply(x, which):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = sigmoid(x[i]) if which == 0 else tanh(x[i])
    return out


def _exact(x, which):
    wide = x.astype(np.float64)
    return 1.0 / (1.0 + np.exp(-wide)) if which == 0 else np.tanh(wide)


def _ulps(got, exact):
    """|got - exact| in units of the float32 spacing at the exact value."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


def _samples(rng):
    return np.concatenate([
        rng.standard_normal(20000) * 4,  # the range gate pre-activations take
        rng.uniform(-1e-3, 1e-3, 2000),  # tanh near zero, where cancellation would show
        rng.uniform(-40, 40, 2000),  # saturation
        10.0 ** rng.uniform(-30, 1, 2000) * rng.choice([-1, 1], 2000),
    ]).astype(np.float32)  # fmt: skip


@pytest.mark.parametrize("which, name", [(0, "sigmoid"), (1, "tanh")])
def test_float32_within_4_ulp_of_exact(which, name):
    x = _samples(np.random.default_rng(which))
    got = _apply(x, which)
    assert got.dtype == np.float32
    worst = _ulps(got, _exact(x, which))
    assert worst.max() <= 4, f"{name}: {worst.max():.1f} ulp at x={x[worst.argmax()]!r}"


@pytest.mark.parametrize("which", [0, 1])
def test_float64_matches_numpy(which):
    x = np.random.default_rng(2).standard_normal(5000) * 6
    np.testing.assert_allclose(_apply(x, which), _exact(x, which), rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values(dtype):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 2000.0, -2000.0], dtype)
    s = _apply(x, 0)
    t = _apply(x, 1)
    assert np.isnan(s[0]) and np.isnan(t[0])
    np.testing.assert_array_equal(s[1:], np.array([1, 0, 0.5, 0.5, 1, 0], dtype))
    np.testing.assert_array_equal(t[1:], np.array([1, -1, 0, 0, 1, -1], dtype))
    assert not np.signbit(t[3]) and np.signbit(t[4])  # tanh keeps the sign of zero
