"""The one-pass cross-entropy kernel (numdiff.kernels.class_loss) against NumPy, and its checks."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels.class_loss import cross_entropy_rows


def _reference(x, target, ignore_index, mean):
    shifted = x - x.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    kept = target != ignore_index
    safe = np.where(kept, target, 0)
    divisor = kept.sum() if mean else 1
    coeff = np.zeros_like(x)
    coeff[np.arange(len(x)), safe] = -kept.astype(x.dtype) / divisor
    loss = (coeff * log_probs).sum()
    coeff_sum = coeff.sum(axis=1, keepdims=True)
    return loss, coeff, coeff_sum, coeff - np.exp(log_probs) * coeff_sum


def _run(x, target, ignore_index, mean):
    coeff, coeff_sum, first_order = np.empty_like(x), np.empty((len(x), 1), x.dtype), np.empty_like(x)
    loss = cross_entropy_rows(x, target, ignore_index, mean, coeff, coeff_sum, first_order)
    return loss, coeff, coeff_sum, first_order


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("mean", [True, False])
def test_matches_numpy_with_ignored_entries(dtype, rtol, mean):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((9, 5)) * 4).astype(dtype)
    target = rng.integers(0, 5, 9)
    target[[2, 7]] = -100
    for got, want in zip(_run(x, target, -100, mean), _reference(x.astype(np.float64), target, -100, mean)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_first_order_is_the_gradient_of_the_loss():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3))
    target = np.array([2, 0, -1, 1])
    _, _, _, grad = _run(x, target, -1, True)
    step = 1e-6
    for i in range(4):
        for c in range(3):
            up, down = x.copy(), x.copy()
            up[i, c] += step
            down[i, c] -= step
            numeric = (_run(up, target, -1, True)[0] - _run(down, target, -1, True)[0]) / (2 * step)
            assert abs(numeric - grad[i, c]) < 1e-8


def test_mean_over_no_kept_entry_is_nan_with_zero_gradient():
    loss, coeff, _, grad = _run(np.ones((2, 3)), np.array([-100, -100]), -100, True)
    assert np.isnan(loss)
    assert not coeff.any() and not grad.any()


def test_a_target_out_of_range_raises_before_any_write():
    x = np.zeros((3, 4))
    with pytest.raises(IndexError, match="target 4 at entry 1 is out of range for 4 classes"):
        _run(x, np.array([0, 4, 1]), -100, True)
    with pytest.raises(IndexError, match="target -2 at entry 2"):
        _run(x, np.array([0, 1, -2]), -100, True)


def test_bad_arguments_name_shapes_and_dtypes():
    x = np.zeros((3, 4))
    with pytest.raises(TypeError, match=r"target must be an int64 array of shape \(3,\), got int32 \(3,\)"):
        _run(x, np.zeros(3, np.int32), -100, True)
    with pytest.raises(ValueError, match=r"x must be \(N, C\) with C >= 1, got \(3, 0\)"):
        cross_entropy_rows(np.zeros((3, 0)), np.zeros(3, np.int64), -100, True,
                           np.zeros((3, 0)), np.zeros((3, 1)), np.zeros((3, 0)))
    with pytest.raises(ValueError, match="first_order must have shape"):
        cross_entropy_rows(x, np.zeros(3, np.int64), -100, True, np.zeros((3, 4)), np.zeros((3, 1)), np.zeros((4, 3)))
