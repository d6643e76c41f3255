"""MultivariateNormal against torch.distributions under each of its three parameterisations:
densities, entropy, moments, derived matrices, rsample's statistics and gradients (float64,
central differences), expand, and the constructor's refusals."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(11)
_A = _rng.normal(size=(2, 3, 3))
COVARIANCE = _A @ _A.transpose(0, 2, 1) + 2.0 * np.eye(3)
MATRICES = {
    "covariance_matrix": COVARIANCE,
    "precision_matrix": np.linalg.inv(COVARIANCE),
    "scale_tril": np.linalg.cholesky(COVARIANCE),
}
LOC = _rng.normal(size=(2, 3))
VALUES = _rng.normal(size=(4, 2, 3))


@pytest.mark.parametrize("kind", sorted(MATRICES))
def test_matches_torch_under_each_parameterisation(kind):
    ours, theirs = (
        lib.distributions.MultivariateNormal(lib.tensor(LOC), **{kind: lib.tensor(MATRICES[kind])})
        for lib in (numdiff, torch)
    )
    assert tuple(ours.batch_shape) == (2,) and tuple(ours.event_shape) == (3,)
    np.testing.assert_allclose(ours.log_prob(numdiff.tensor(VALUES)).numpy(), theirs.log_prob(torch.tensor(VALUES)).numpy(), rtol=1e-12)
    for quantity in ("entropy",):
        np.testing.assert_allclose(getattr(ours, quantity)().numpy(), getattr(theirs, quantity)().numpy(), rtol=1e-12)
    for quantity in ("mean", "mode", "variance", "stddev", "covariance_matrix", "precision_matrix", "scale_tril"):
        np.testing.assert_allclose(getattr(ours, quantity).numpy(), getattr(theirs, quantity).numpy(), rtol=1e-10, atol=1e-12)
    assert tuple(ours.expand((5, 2)).log_prob(numdiff.tensor(VALUES[0])).shape) == (5, 2)


def test_diagonal_covariance_as_ppo_writes_it_matches_torch():
    variance = np.array([0.25, 0.5])
    means = _rng.normal(size=(6, 2)).astype(np.float32)
    actions = _rng.normal(size=(6, 2)).astype(np.float32)
    ours, theirs = (
        lib.distributions.MultivariateNormal(lib.tensor(means), lib.diag(lib.tensor(variance, dtype=lib.float32)).unsqueeze(0))
        for lib in (numdiff, torch)
    )
    np.testing.assert_allclose(ours.log_prob(numdiff.tensor(actions)).numpy(), theirs.log_prob(torch.tensor(actions)).numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-6)


def test_rsample_has_the_distribution_s_moments():
    numdiff.manual_seed(0)
    d = numdiff.distributions.MultivariateNormal(numdiff.tensor(LOC[0]), numdiff.tensor(COVARIANCE[0]))
    draws = d.rsample((20000,)).numpy()
    np.testing.assert_allclose(draws.mean(0), LOC[0], atol=0.1)
    np.testing.assert_allclose(np.cov(draws.T), COVARIANCE[0], rtol=0.1, atol=0.15)


def test_log_prob_entropy_and_rsample_gradcheck():
    loc = numdiff.tensor(LOC, requires_grad=True)
    a = numdiff.tensor(_A, requires_grad=True)

    def build(loc, a):
        covariance = a @ a.mT + 2.0 * numdiff.eye(3, dtype=numdiff.float64)
        return numdiff.distributions.MultivariateNormal(loc, covariance_matrix=covariance)

    values = numdiff.tensor(VALUES)
    assert gradcheck(lambda loc, a: build(loc, a).log_prob(values), [loc, a])
    assert gradcheck(lambda loc, a: build(loc, a).entropy(), [loc, a])
    tril = numdiff.tensor(MATRICES["scale_tril"], requires_grad=True)

    def drawn(loc, tril):
        numdiff.manual_seed(3)  # the same noise on every evaluation
        return numdiff.distributions.MultivariateNormal(loc, scale_tril=tril.tril()).rsample((2,))

    assert gradcheck(drawn, [loc, tril])
    precision = numdiff.tensor(MATRICES["precision_matrix"], requires_grad=True)
    assert gradcheck(
        lambda p: numdiff.distributions.MultivariateNormal(numdiff.tensor(LOC), precision_matrix=(p + p.mT) / 2).log_prob(values),
        [precision],
    )


def test_refuses_what_it_cannot_build():
    mvn = numdiff.distributions.MultivariateNormal
    eye = numdiff.eye(3)
    with pytest.raises(ValueError, match="exactly one of covariance_matrix, precision_matrix or scale_tril .* got 0"):
        mvn(numdiff.zeros(3))
    with pytest.raises(ValueError, match="exactly one .* got 2"):
        mvn(numdiff.zeros(3), covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(ValueError, match="loc has 2 dimensions but the matrix is 3 x 3"):
        mvn(numdiff.zeros(2), eye)
    with pytest.raises(ValueError, match="square matrices .* got shape \\(3, 2\\)"):
        mvn(numdiff.zeros(2), numdiff.ones(3, 2))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional, got shape \\(\\)"):
        mvn(numdiff.tensor(0.0), eye)
    with pytest.raises(ValueError, match="covariance_matrix .* PositiveDefinite"):
        mvn(numdiff.zeros(2), numdiff.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="scale_tril .* LowerCholesky"):
        mvn(numdiff.zeros(2), scale_tril=numdiff.tensor([[1.0, 1.0], [0.0, 1.0]]))


def test_kl_divergence_matches_torch_across_broadcast_batches():
    other = np.linalg.cholesky(COVARIANCE[1] + np.eye(3))
    results = []
    for lib in (numdiff, torch):
        p = lib.distributions.MultivariateNormal(lib.tensor(LOC), lib.tensor(COVARIANCE))  # batch (2,)
        q = lib.distributions.MultivariateNormal(lib.tensor(LOC[0] + 1.0), scale_tril=lib.tensor(other))  # batch ()
        results.append([lib.distributions.kl_divergence(p, q).numpy(), lib.distributions.kl_divergence(q, p).numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_kl_divergence_gradcheck_and_refusal():
    loc = numdiff.tensor(LOC, requires_grad=True)
    a = numdiff.tensor(_A, requires_grad=True)
    q = numdiff.distributions.MultivariateNormal(numdiff.tensor(LOC[1]), numdiff.tensor(COVARIANCE[0]))

    def kl(loc, a):
        covariance = a @ a.mT + 2.0 * numdiff.eye(3, dtype=numdiff.float64)
        return numdiff.distributions.kl_divergence(numdiff.distributions.MultivariateNormal(loc, covariance), q)

    assert gradcheck(kl, [loc, a])
    two = numdiff.distributions.MultivariateNormal(numdiff.zeros(2), numdiff.eye(2))
    with pytest.raises(ValueError, match="event shapes differ, \\(2,\\) and \\(3,\\)"):
        numdiff.distributions.kl_divergence(two, q)
