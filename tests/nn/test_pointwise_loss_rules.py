"""The pointwise losses that are one scalar rule (numdiff/_ground/scalar_rules.py): one recorded op
before the reduction, values and gradients (input and target) PyTorch's in float32 and float64 at
every reduction, and their argument errors naming the loss and the value."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tnf

import numdiff
import numdiff.nn.functional as nnf
from tests.ops.op_cases import recorded_ops

# (numdiff loss, torch loss, the rule it records, keyword arguments, target builder)
LOSSES = [
    ("smooth_l1_loss", "smooth_l1", {"beta": 0.7}, "normal"),
    ("smooth_l1_loss", "smooth_l1", {}, "normal"),
    ("huber_loss", "huber", {"delta": 1.3}, "normal"),
    ("mse_loss", "squared_error", {}, "normal"),
    ("binary_cross_entropy_with_logits", "bce_with_logits", {}, "unit"),
    ("soft_margin_loss", "soft_margin", {}, "sign"),
]


def _target(kind: str, rng: np.random.Generator, shape: tuple) -> np.ndarray:
    if kind == "unit":
        return rng.uniform(0.0, 1.0, shape)
    if kind == "sign":
        return rng.choice([-1.0, 1.0], shape)
    return rng.standard_normal(shape)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("loss", "rule", "kwargs", "target_kind"), LOSSES)
def test_pointwise_loss_is_one_rule_and_matches_torch(loss, rule, kwargs, target_kind, dtype, reduction):
    rng = np.random.default_rng(7)
    shape = (37, 45)  # above the small-backward cut-off and not a multiple of the SIMD width
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    t = _target(target_kind, rng, shape).astype(dtype)
    ours_x, ours_t = numdiff.tensor(x, requires_grad=True), numdiff.tensor(t, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    # PyTorch refuses a gradient to soft_margin_loss's target; its formula is checked by gradcheck.
    theirs_t = torch.tensor(t, requires_grad=rule != "soft_margin")
    ours = getattr(nnf, loss)(ours_x, ours_t, reduction=reduction, **kwargs)
    theirs = getattr(tnf, loss)(theirs_x, theirs_t, reduction=reduction, **kwargs)
    if loss == "mse_loss" and reduction == "mean":
        assert recorded_ops(ours) == {"mse_loss_mean"}  # the rule and its mean in one op
    else:
        assert rule in recorded_ops(ours)
        assert recorded_ops(ours) <= {rule, "mean", "sum", "div"}  # a mean may record as sum and div
    seed = rng.standard_normal(ours.shape).astype(dtype)
    ours.backward(numdiff.tensor(seed))
    theirs.backward(torch.tensor(seed))
    tolerance = dict(rtol=2e-6, atol=2e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tolerance)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), **tolerance)
    if theirs_t.grad is not None:
        np.testing.assert_allclose(ours_t.grad.numpy(), theirs_t.grad.numpy(), **tolerance)


def test_losses_stay_finite_and_quiet_at_huge_logits():
    x = numdiff.tensor(np.array([-1e4, -90.0, 0.0, 90.0, 1e4], np.float32), requires_grad=True)
    t = numdiff.tensor(np.array([1.0, 0.0, 0.5, 1.0, 0.0], np.float32))
    with np.errstate(all="raise"):
        loss = nnf.binary_cross_entropy_with_logits(x, t, reduction="sum")
        loss.backward()
    theirs_x = torch.tensor(x.detach().numpy(), requires_grad=True)
    expected = tnf.binary_cross_entropy_with_logits(theirs_x, torch.tensor(t.numpy()), reduction="sum")
    expected.backward()
    np.testing.assert_allclose(float(loss), float(expected.detach()), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-6, atol=1e-37)  # torch flushes subnormals


def test_smooth_l1_beta_zero_is_l1_with_l1_gradients():
    x = numdiff.tensor([1.5, -2.0, 0.25], requires_grad=True)
    loss = nnf.smooth_l1_loss(x, numdiff.zeros(3, dtype=numdiff.float64), beta=0.0, reduction="sum")
    loss.backward()
    assert float(loss) == pytest.approx(3.75)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 1.0])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: nnf.smooth_l1_loss(x, x.detach(), beta=-0.5), r"smooth_l1_loss: beta must be non-negative, got -0.5"),
        (lambda x: nnf.huber_loss(x, x.detach(), delta=0.0), r"huber_loss: delta must be positive, got 0.0"),
        (lambda x: nnf.huber_loss(x, x.detach(), delta=float("nan")), r"huber_loss: delta must be positive, got nan"),
        (lambda x: nnf.binary_cross_entropy_with_logits(x, x.detach()[:2]), r"binary_cross_entropy_with_logits: target size \(2,\)"),
    ],
)
def test_bad_pointwise_loss_arguments_name_the_loss_and_value(call, message):
    with pytest.raises(ValueError, match=message):
        call(numdiff.tensor([0.5, 1.0, -2.0], requires_grad=True))


def test_an_integer_input_is_refused_naming_the_loss():
    with pytest.raises(TypeError, match="soft_margin_loss"):
        nnf.soft_margin_loss(numdiff.tensor([1, 2]), numdiff.tensor([1.0, -1.0]))
