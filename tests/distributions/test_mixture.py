"""MixtureSameFamily against torch.distributions: densities, moments, cdf, sampling, expand,
gradients of log_prob (float64, central differences) and the constructor's refusals."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)
LOGITS = _rng.normal(size=(2, 3))
LOC = _rng.normal(size=(2, 3, 2))
SCALE = _rng.uniform(0.5, 1.5, size=(2, 3, 2))
VALUES = _rng.normal(size=(5, 1, 2))


def _mixture(lib, logits, loc, scale, event: bool):
    dist = lib.distributions
    # Scalar components: the first coordinate only, so the batch's last dimension is the 3 components.
    component = dist.Independent(dist.Normal(loc, scale), 1) if event else dist.Normal(loc[..., 0], scale[..., 0])
    return dist.MixtureSameFamily(dist.Categorical(logits=logits), component)


def _both(event: bool, logits=LOGITS, loc=LOC, scale=SCALE):
    return [
        _mixture(lib, *(lib.tensor(a, dtype=lib.float64) for a in (logits, loc, scale)), event)
        for lib in (numdiff, torch)
    ]


@pytest.mark.parametrize("event", [False, True], ids=["scalar_components", "vector_components"])
def test_log_prob_moments_and_shapes_match_torch(event):
    ours, theirs = _both(event)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    values = VALUES if event else VALUES[..., 0]
    for quantity in ("mean", "variance", "stddev"):
        np.testing.assert_allclose(getattr(ours, quantity).numpy(), getattr(theirs, quantity).numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        ours.log_prob(numdiff.tensor(values)).numpy(), theirs.log_prob(torch.tensor(values)).numpy(), rtol=1e-12
    )
    assert tuple(ours.sample((4,)).shape) == tuple(theirs.sample((4,)).shape)
    expanded = ours.expand((3, 2))
    assert tuple(expanded.log_prob(numdiff.tensor(values[:3])).shape) == (3, 2)


def test_cdf_and_a_broadcast_mixture_batch_match_torch():
    # One set of weights shared by every batch entry: mixture batch () against component batch (2,).
    logits = LOGITS[0]
    ours, theirs = (
        lib.distributions.MixtureSameFamily(
            lib.distributions.Categorical(logits=lib.tensor(logits)),
            lib.distributions.Normal(lib.tensor(LOC[..., 0]), lib.tensor(SCALE[..., 0])),
        )
        for lib in (numdiff, torch)
    )
    values = VALUES[..., 0]
    np.testing.assert_allclose(ours.cdf(numdiff.tensor(values)).numpy(), theirs.cdf(torch.tensor(values)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.mean.numpy(), theirs.mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        ours.log_prob(numdiff.tensor(values)).numpy(), theirs.log_prob(torch.tensor(values)).numpy(), rtol=1e-12
    )


def test_samples_come_from_the_chosen_components_in_proportion():
    numdiff.manual_seed(0)
    weights = np.array([0.2, 0.8])
    mixture = numdiff.distributions.MixtureSameFamily(
        numdiff.distributions.Categorical(probs=numdiff.tensor(weights)),
        numdiff.distributions.Normal(numdiff.tensor([-10.0, 10.0]), numdiff.tensor([0.1, 0.1])),
    )
    draws = mixture.sample((4000,)).numpy()
    assert np.all(np.minimum(np.abs(draws + 10), np.abs(draws - 10)) < 1.0)
    assert abs((draws > 0).mean() - 0.8) < 0.03


@pytest.mark.parametrize("event", [False, True], ids=["scalar_components", "vector_components"])
def test_log_prob_gradcheck(event):
    leaves = [numdiff.tensor(a, dtype=numdiff.float64, requires_grad=True) for a in (LOGITS, LOC, SCALE)]
    values = numdiff.tensor(VALUES if event else VALUES[..., 0])
    assert gradcheck(lambda *ps: _mixture(numdiff, *ps, event).log_prob(values), leaves)
    assert gradcheck(lambda *ps: _mixture(numdiff, *ps, event).mean, leaves)


def test_refuses_mixtures_it_cannot_build():
    dist = numdiff.distributions
    normal = dist.Normal(numdiff.zeros(3), numdiff.ones(3))
    with pytest.raises(ValueError, match="MixtureSameFamily: mixture_distribution must be a .*Categorical, got Normal"):
        dist.MixtureSameFamily(normal, normal)
    with pytest.raises(ValueError, match="component_distribution must be .*Distribution, got Tensor"):
        dist.MixtureSameFamily(dist.Categorical(logits=numdiff.zeros(3)), numdiff.zeros(3))
    with pytest.raises(ValueError, match="has 2 components but component_distribution.batch_shape\\[-1\\] is 3"):
        dist.MixtureSameFamily(dist.Categorical(logits=numdiff.zeros(2)), normal)
    with pytest.raises(ValueError, match="batch_shape \\(4,\\) is not compatible .* \\(2, 3\\)"):
        dist.MixtureSameFamily(
            dist.Categorical(logits=numdiff.zeros(4, 3)), dist.Normal(numdiff.zeros(2, 3), numdiff.ones(2, 3))
        )
    with pytest.raises(ValueError, match="needs a batch dimension of components"):
        dist.MixtureSameFamily(dist.Categorical(logits=numdiff.zeros(1)), dist.Normal(numdiff.tensor(0.0), numdiff.tensor(1.0)))
