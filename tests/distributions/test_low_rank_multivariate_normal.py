"""LowRankMultivariateNormal against torch.distributions (densities, moments, the derived matrices,
a batch that broadcasts), its log_prob and rsample gradients against central differences in
float64, and bad parameters refused by name before any work."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd.gradcheck import gradcheck

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(11)
LOC = _rng.normal(size=(2, 4))
FACTOR = _rng.normal(size=(4, 2))  # batch () broadcast against loc's (2,)
DIAG = _rng.uniform(0.5, 2.0, size=(2, 4))
VALUES = _rng.normal(size=(3, 2, 4))


def _build(lib):
    return lib.distributions.LowRankMultivariateNormal(lib.tensor(LOC), lib.tensor(FACTOR), lib.tensor(DIAG))


@pytest.mark.parametrize(
    "quantity",
    ["log_prob", "entropy", "mean", "variance", "covariance_matrix", "precision_matrix", "scale_tril", "batch"],
)
def test_low_rank_normal_matches_torch(quantity):
    results = []
    for lib in (torch, numdiff):
        d = _build(lib)
        if quantity == "log_prob":
            out = d.log_prob(lib.tensor(VALUES))
        elif quantity == "entropy":
            out = d.entropy()
        elif quantity == "batch":
            out = lib.tensor(list(d.batch_shape) + list(d.event_shape) + list(d.expand((5, 2)).batch_shape))
        else:
            out = getattr(d, quantity)
        results.append(out.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12, atol=1e-12)


def test_low_rank_normal_agrees_with_the_full_covariance_normal():
    d = _build(numdiff)
    full = numdiff.distributions.MultivariateNormal(d.loc, d.covariance_matrix)
    values = numdiff.tensor(VALUES)
    np.testing.assert_allclose(d.log_prob(values).numpy(), full.log_prob(values).numpy(), rtol=1e-12)
    numdiff.manual_seed(0)
    draws = d.sample((4000,))
    assert tuple(draws.shape) == (4000, 2, 4)
    np.testing.assert_allclose(draws.mean(0).numpy(), LOC, atol=0.15)


def test_low_rank_normal_log_prob_and_rsample_gradients_match_central_differences():
    loc, factor, diag = (numdiff.tensor(a, requires_grad=True) for a in (LOC, FACTOR, DIAG))
    values = numdiff.tensor(VALUES)
    dist = numdiff.distributions.LowRankMultivariateNormal
    assert gradcheck(lambda m, w, dg: dist(m, w, dg).log_prob(values), (loc, factor, diag))
    assert gradcheck(lambda m, w, dg: dist(m, w, dg).entropy(), (loc, factor, diag))

    def draw(m, w, dg):
        numdiff.manual_seed(3)
        return dist(m, w, dg).rsample((2,))

    assert gradcheck(draw, (loc, factor, diag))


def test_low_rank_normal_refuses_bad_parameters_naming_them():
    dist = numdiff.distributions.LowRankMultivariateNormal
    with pytest.raises(ValueError, match=r"LowRankMultivariateNormal: loc must be at least one-dimensional, got shape \(\)"):
        dist(numdiff.tensor(0.0), numdiff.ones(1, 1), numdiff.ones(1))
    with pytest.raises(ValueError, match=r"cov_factor must be a batch of 3 x rank matrices \(loc has 3 dimensions\), got shape \(2, 1\)"):
        dist(numdiff.zeros(3), numdiff.ones(2, 1), numdiff.ones(3))
    with pytest.raises(ValueError, match=r"cov_diag must be a batch of vectors of 3 entries, got shape \(2,\)"):
        dist(numdiff.zeros(3), numdiff.ones(3, 1), numdiff.ones(2))
    with pytest.raises(ValueError, match="cov_diag"):
        dist(numdiff.zeros(3), numdiff.ones(3, 1), -numdiff.ones(3), validate_args=True)
