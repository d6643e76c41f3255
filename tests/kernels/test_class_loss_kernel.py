"""The one-pass cross-entropy kernel (numdiff.kernels.class_loss) against a float64 NumPy
reference, the op's general NumPy form, and its argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nnf
from numdiff.kernels.class_loss import cross_entropy_rows
from numdiff.ops.class_loss import CrossEntropy


def _reference(x, target, ignore_index, mean):
    """per_entry, kept, d loss / d x in float64 for the 'mean' (mean=True) or 'sum' loss."""
    x = x.astype(np.float64)
    shifted = x - x.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    kept = target != ignore_index
    safe = np.where(kept, target, 0)
    rows = np.arange(len(target))
    per_entry = np.where(kept, -log_probs[rows, safe], 0.0)
    divisor = kept.sum() if mean and kept.any() else 1
    one_hot = np.zeros_like(x)
    one_hot[rows, safe] = kept
    grad = (np.exp(log_probs) * kept[:, None] - one_hot) / divisor
    return per_entry, int(kept.sum()), grad


@pytest.mark.parametrize("n,classes", [(1, 1), (5, 3), (64, 10), (7, 130), (9, 1001)])
@pytest.mark.parametrize("mean", [True, False], ids=["mean", "sum"])
def test_kernel_matches_float64_reference_with_ignored_entries(n, classes, mean, dtype, tol, rng):
    x = (3 * rng.standard_normal((n, classes))).astype(dtype)
    target = rng.integers(0, classes, n)
    target[::3] = -100
    per_entry, total, kept, coeff, coeff_sum, first_order = cross_entropy_rows(x, target, -100, mean)
    want_entry, want_kept, want_grad = _reference(x, target, -100, mean)
    assert kept == want_kept
    np.testing.assert_allclose(per_entry, want_entry, **tol)
    np.testing.assert_allclose(total, want_entry.sum(), rtol=tol["rtol"], atol=tol["atol"] * n)
    np.testing.assert_allclose(first_order, want_grad, **tol)
    np.testing.assert_allclose(coeff.sum(axis=1, keepdims=True), coeff_sum, **tol)
    assert per_entry.dtype == coeff.dtype == first_order.dtype == dtype


def test_minus_infinity_logits_get_zero_probability_and_nan_rows_stay_nan():
    x = np.array([[0.0, -np.inf, 1.0, -np.inf, 2.0], [np.nan, 1.0, 2.0, 0.0, 0.0]], np.float32)
    per_entry, _, _, _, _, first_order = cross_entropy_rows(x, np.array([0, 1]), -100, False)
    want_entry, _, want_grad = _reference(x[:1], np.array([0]), -100, False)
    np.testing.assert_allclose(per_entry[0], want_entry[0], rtol=1e-6)
    np.testing.assert_allclose(first_order[0], want_grad[0], rtol=1e-6, atol=1e-7)
    assert np.isnan(per_entry[1])


@pytest.mark.parametrize("classes", [16, 37, 1000])
def test_row_maximum_is_found_at_every_position_of_the_lanes_and_the_tail(classes, dtype, tol):
    # Row i holds its maximum at column i: in each running maximum and in the tail. A
    # missed maximum overflows the exponentials (a shift of 800) and shows as inf or NaN.
    x = np.zeros((classes, classes), dtype)
    x[np.arange(classes), np.arange(classes)] = 800.0
    target = np.arange(classes) % 3
    per_entry, _, _, _, _, first_order = cross_entropy_rows(x, target, -100, True)
    want_entry, _, want_grad = _reference(x, target, -100, True)
    np.testing.assert_allclose(per_entry, want_entry, **tol)
    np.testing.assert_allclose(first_order, want_grad, **tol)


def test_nan_anywhere_in_a_wide_row_makes_the_row_nan_and_leaves_the_others():
    x = np.ones((3, 40), np.float32)
    x[0, 5], x[1, 39] = np.nan, np.nan  # one inside the eight-wide blocks, one in the tail
    per_entry, _, _, _, _, first_order = cross_entropy_rows(x, np.array([0, 1, 2]), -100, False)
    assert np.isnan(per_entry[:2]).all() and np.isnan(first_order[:2]).all()
    np.testing.assert_allclose(per_entry[2], np.log(40.0), rtol=1e-6)


def test_kernel_with_every_entry_ignored_leaves_zero_coefficients():
    per_entry, total, kept, coeff, coeff_sum, first_order = cross_entropy_rows(
        np.ones((3, 4)), np.full(3, 7), 7, True
    )
    assert kept == 0 and total == 0.0
    assert not per_entry.any() and not coeff.any() and not coeff_sum.any() and not first_order.any()


def test_kernel_refuses_out_of_range_target_naming_entry_and_class_count():
    with pytest.raises(IndexError, match=r"target 4 \(entry 1\).*\[0, 3\]"):
        cross_entropy_rows(np.zeros((2, 4), np.float32), np.array([0, 4]), -100, True)
    with pytest.raises(IndexError, match=r"target -1 \(entry 0\)"):
        cross_entropy_rows(np.zeros((2, 4), np.float32), np.array([-1, 0]), -100, True)


def test_kernel_refuses_bad_dtypes_and_shapes():
    with pytest.raises(TypeError, match="x must be float32 or float64"):
        cross_entropy_rows(np.zeros((2, 3), np.int64), np.zeros(2, np.int64), -100, True)
    with pytest.raises(TypeError, match="target must be an int64"):
        cross_entropy_rows(np.zeros((2, 3)), np.zeros(2, np.int32), -100, True)
    with pytest.raises(ValueError, match=r"target must have shape \(2\)"):
        cross_entropy_rows(np.zeros((2, 3)), np.zeros(3, np.int64), -100, True)
    with pytest.raises(ValueError, match=r"\(N, C\) with C >= 1"):
        cross_entropy_rows(np.zeros((2, 0)), np.zeros(2, np.int64), -100, True)


def test_op_called_directly_refuses_out_of_range_target():
    # The functional validates targets first; OPS replay and direct calls reach the kernel.
    with pytest.raises(IndexError, match="cross_entropy: target 9"):
        CrossEntropy.apply(
            numdiff.zeros(2, 3, requires_grad=True), target=np.array([0, 9]), weight=None,
            ignore_index=-100, reduction="mean", label_smoothing=0.0,
        )  # fmt: skip


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_kernel_path_matches_the_general_form(reduction, rng):
    # (N, C) runs the kernel; the same values as (N, C, 1) run the general NumPy form.
    logits = rng.standard_normal((6, 5))
    target = np.array([0, 4, -100, 2, 2, 1])
    flat = numdiff.tensor(logits, requires_grad=True)
    spatial = numdiff.tensor(logits[:, :, None], requires_grad=True)
    loss_flat = nnf.cross_entropy(flat, numdiff.tensor(target), reduction=reduction)
    loss_spatial = nnf.cross_entropy(spatial, numdiff.tensor(target[:, None]), reduction=reduction)
    np.testing.assert_allclose(
        loss_flat.detach().numpy(), loss_spatial.detach().numpy().reshape(loss_flat.shape), rtol=1e-12
    )
    seed = rng.standard_normal(tuple(loss_flat.shape))
    loss_flat.backward(numdiff.tensor(seed))
    loss_spatial.backward(numdiff.tensor(seed.reshape(loss_spatial.shape)))
    np.testing.assert_allclose(flat.grad.numpy(), spatial.grad.numpy()[:, :, 0], rtol=1e-12, atol=1e-15)


def test_kernel_path_second_derivative_passes_gradgradcheck(rng):
    target = numdiff.tensor(np.array([1, 0, 2]))
    x = numdiff.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert numdiff.autograd.gradgradcheck(lambda t: nnf.cross_entropy(t, target), (x,))
