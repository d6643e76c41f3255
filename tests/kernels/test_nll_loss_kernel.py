"""The one-pass nll_loss kernel (numdiff.kernels.class_loss.nll_loss_rows) against NumPy and
PyTorch: ignored entries, every entry ignored (nan mean, zero gradient), each reduction, and its
argument checks (by the kernel and through the functional)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.kernels.class_loss import nll_loss_rows


@pytest.mark.parametrize("mean", [True, False])
def test_kernel_matches_numpy_with_ignored_entries(mean):
    rng = np.random.default_rng(1)
    log_probs = rng.standard_normal((9, 5))
    target = rng.integers(0, 5, 9)
    target[[2, 7]] = -100
    per_entry, total, kept, coeff = nll_loss_rows(log_probs, target, -100, mean)
    keep = target != -100
    want = np.where(keep, -log_probs[np.arange(9), np.where(keep, target, 0)], 0.0)
    np.testing.assert_allclose(per_entry, want, rtol=1e-15)
    assert kept == 7 and total == pytest.approx(want.sum(), rel=1e-15)
    want_coeff = np.zeros((9, 5))
    want_coeff[np.arange(9)[keep], target[keep]] = -1.0 / (7 if mean else 1)
    np.testing.assert_array_equal(coeff, want_coeff)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_functional_matches_torch_for_each_reduction(reduction, dtype):
    rng = np.random.default_rng(2)
    log_probs = rng.standard_normal((12, 7)).astype(dtype)
    target = rng.integers(0, 7, 12)
    target[3] = 4 if reduction == "none" else -1  # ignore_index=-1 below
    xm, xt = numdiff.tensor(log_probs, requires_grad=True), torch.tensor(log_probs, requires_grad=True)
    out_m = F.nll_loss(xm, numdiff.tensor(target), ignore_index=-1, reduction=reduction)
    out_t = torch.nn.functional.nll_loss(xt, torch.tensor(target), ignore_index=-1, reduction=reduction)
    seed = rng.standard_normal(tuple(out_t.shape)).astype(dtype)
    out_m.backward(numdiff.tensor(seed))
    out_t.backward(torch.tensor(seed))
    tol = dict(rtol=1e-6) if dtype == "float32" else dict(rtol=1e-14)
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), **tol)


def test_every_entry_ignored_gives_a_nan_mean_and_a_zero_gradient():
    x = numdiff.zeros(3, 4, requires_grad=True)
    loss = F.nll_loss(x, numdiff.tensor([-100, -100, -100]))
    loss.backward()
    assert np.isnan(loss.item())
    assert not x.grad.numpy().any()


def test_kernel_names_the_out_of_range_target_and_its_entry():
    with pytest.raises(IndexError, match=r"nll_loss: target 5 \(entry 1\) is out of bounds: class indices must be in \[0, 3\]"):
        nll_loss_rows(np.zeros((2, 4)), np.array([0, 5]), -100, True)


def test_kernel_refuses_integer_log_probs():
    with pytest.raises(TypeError, match="nll_loss_rows: log_probs must be float32 or float64, got int64"):
        nll_loss_rows(np.zeros((2, 4), np.int64), np.array([0, 1]), -100, True)


def test_kernel_refuses_a_target_of_another_length():
    with pytest.raises(ValueError, match="nll_loss_rows: target must have shape"):
        nll_loss_rows(np.zeros((2, 4)), np.array([0, 1, 2]), -100, True)
