"""VonMises: its modified Bessel functions against scipy, log_prob and variance against torch (whose
polynomial fits are accurate to ~1e-7) and against the exact values, float64 gradchecks, draws
with the circular mean and variance the distribution states, and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck
from numdiff.distributions import VonMises
from numdiff.distributions.von_mises import log_modified_bessel

torch = pytest.importorskip("torch")
special = pytest.importorskip("scipy.special")

X = np.concatenate([np.geomspace(1e-6, 700.0, 300), [29.999, 30.0, 30.001]])


@pytest.mark.parametrize(("order", "scaled"), [(0, special.i0e), (1, special.i1e)])
def test_log_modified_bessel_matches_scipy(order: int, scaled) -> None:
    ours = log_modified_bessel(numdiff.tensor(X), order).numpy()
    np.testing.assert_allclose(ours, np.log(scaled(X)) + X, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("order", [0, 1])
def test_log_modified_bessel_gradcheck_on_both_sides_of_the_switch(order: int) -> None:
    x = numdiff.tensor([0.01, 0.7, 5.0, 29.5, 30.5, 120.0], dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda v: log_modified_bessel(v, order), (x,))
    # d/dx log I0 = I1 / I0.
    (grad,) = numdiff.autograd.grad(log_modified_bessel(x, 0).sum(), [x])
    values = x.detach().numpy()
    np.testing.assert_allclose(grad.numpy(), special.i1e(values) / special.i0e(values), rtol=1e-12)


LOC = np.array([[0.3, -2.0, 3.0], [1.0, 0.0, -0.5]])
KAPPA = np.array([0.05, 2.0, 45.0])


def _pair():
    return (
        VonMises(numdiff.tensor(LOC), numdiff.tensor(KAPPA)),
        torch.distributions.VonMises(torch.tensor(LOC), torch.tensor(KAPPA)),
    )


def test_log_prob_and_variance_match_torch_and_the_exact_values() -> None:
    ours, theirs = _pair()
    value = np.array([0.1, -3.0, 2.9])
    log_prob = ours.log_prob(numdiff.tensor(value)).numpy()
    np.testing.assert_allclose(log_prob, theirs.log_prob(torch.tensor(value)).numpy(), rtol=1e-6)
    exact = KAPPA * np.cos(value - LOC) - np.log(2 * np.pi) - (np.log(special.i0e(KAPPA)) + KAPPA)
    np.testing.assert_allclose(log_prob, exact, rtol=1e-13)
    # 1 - I1/I0 cancels at large kappa: torch's fits leave it 5e-7 off at kappa = 45.
    np.testing.assert_allclose(ours.variance.numpy(), theirs.variance.numpy(), rtol=0, atol=1e-6)
    exact_variance = np.broadcast_to(1 - special.i1e(KAPPA) / special.i0e(KAPPA), LOC.shape)
    np.testing.assert_allclose(ours.variance.numpy(), exact_variance, rtol=1e-13, atol=1e-14)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.expand((4, 2, 3)).sample((5,)).shape) == (5, 4, 2, 3)
    assert np.array_equal(ours.mean.numpy(), LOC) and np.array_equal(ours.mode.numpy(), LOC)
    assert repr(VonMises(0.5, 1.0)) == repr(torch.distributions.VonMises(0.5, 1.0))


def test_log_prob_gradcheck_in_loc_and_concentration() -> None:
    loc = numdiff.tensor(LOC, requires_grad=True)
    kappa = numdiff.tensor(KAPPA, requires_grad=True)
    value = numdiff.tensor([0.1, -3.0, 2.9], dtype=numdiff.float64)
    assert gradcheck(lambda m, k: VonMises(m, k).log_prob(value), (loc, kappa))
    assert gradcheck(lambda k: VonMises(0.0, k).variance, (kappa,))


@pytest.mark.parametrize("kappa", [1e-6, 0.5, 4.0, 200.0])
def test_draws_have_the_circular_mean_and_variance(kappa: float) -> None:
    d = VonMises(numdiff.tensor([2.5], dtype=numdiff.float64), numdiff.tensor([kappa], dtype=numdiff.float64))
    numdiff.manual_seed(17)
    draws = d.sample((20000,)).numpy()[:, 0]
    assert draws.min() >= -np.pi and draws.max() < np.pi
    resultant = np.mean(np.exp(1j * draws))
    mean_length = special.i1e(kappa) / special.i0e(kappa)  # E[cos(x - loc)]
    np.testing.assert_allclose(abs(resultant), mean_length, atol=6 * np.sqrt(0.5 / 20000))
    if kappa > 0.1:  # the direction is only defined for a concentrated distribution
        assert abs(np.angle(resultant) - 2.5) < 6 * np.sqrt(0.5 / 20000) / mean_length


BAD = [
    ("zero-concentration", lambda lib: lib.distributions.VonMises(0.0, lib.tensor([0.0]))),
    ("nan-loc", lambda lib: lib.distributions.VonMises(lib.tensor([float("nan")]), 1.0)),
    ("value-not-a-tensor", lambda lib: lib.distributions.VonMises(0.0, 1.0).log_prob(0.5)),
]


@pytest.mark.parametrize("make", [m for _, m in BAD], ids=[n for n, _ in BAD])
def test_bad_input_raises_value_error_like_torch(make) -> None:
    with pytest.raises(ValueError) as theirs:
        make(torch)
    with pytest.raises(ValueError) as ours:
        make(numdiff)
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0].replace("torch.", "numdiff.")
