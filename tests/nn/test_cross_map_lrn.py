"""nn.CrossMapLRN2d against torch's forward (its window quirk included), a float64 gradient check
(torch's own hand-written backward fails gradcheck, so gradients are checked against central
differences, not torch), and the errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff


@pytest.mark.parametrize(("size", "channels"), [(1, 3), (2, 5), (3, 2), (3, 6), (4, 6), (5, 7), (8, 3)])
def test_forward_matches_torch(size, channels):
    x = np.random.default_rng(size * 10 + channels).standard_normal((2, channels, 3, 2))
    x[0, 0, 0, 0] = 0.0
    x[1, :, 1, 1] = 0.0
    x[0, -1, 2, 0] = -40.0
    x[1, 0, 0, 1] = 1e3
    for dtype in ("float64", "float32"):
        expected = torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 2.0)(torch.tensor(x.astype(dtype)))
        got = numdiff.nn.CrossMapLRN2d(size, 0.5, 0.75, 2.0)(numdiff.tensor(x.astype(dtype)))
        assert str(got.dtype).endswith(dtype)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-13 if dtype == "float64" else 1e-6)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf / inf, as in torch
def test_nan_and_inf_spread_to_later_channels_as_torch():
    x = np.ones((1, 7, 1, 4))
    x[0, 3, 0, 0] = np.nan
    x[0, 2, 0, 1] = np.inf
    x[0, 0, 0, 2] = -np.inf  # channel 0 never leaves the running sum
    expected = torch.nn.CrossMapLRN2d(3)(torch.tensor(x)).numpy()
    got = numdiff.nn.CrossMapLRN2d(3)(numdiff.tensor(x)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-13)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_gradient_passes_gradcheck(size):
    x = numdiff.tensor(
        np.random.default_rng(size).standard_normal((2, 5, 2, 2)), dtype=numdiff.float64, requires_grad=True
    )
    layer = numdiff.nn.CrossMapLRN2d(size, 0.3, 0.6, 1.5)
    assert numdiff.autograd.gradcheck(layer, (x,))


def test_repr_and_bad_arguments():
    assert repr(numdiff.nn.CrossMapLRN2d(3, 0.5)) == repr(torch.nn.CrossMapLRN2d(3, 0.5))
    with pytest.raises(ValueError, match=r"CrossMapLRN2d: expects a 4D input \(N, C, H, W\), got shape \(2, 3, 4\)"):
        numdiff.nn.CrossMapLRN2d(3)(numdiff.ones(2, 3, 4))
    with pytest.raises(ValueError, match="CrossMapLRN2d: size must be a positive int, got 0"):
        numdiff.nn.CrossMapLRN2d(0)(numdiff.ones(1, 3, 2, 2))
    with pytest.raises(TypeError, match="CrossMapLRN2d: argument 'input' must be a Tensor, not list"):
        numdiff.nn.CrossMapLRN2d(3)([1.0])
