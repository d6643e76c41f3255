"""Sampling: draws have the moments and frequencies the distribution says (within many standard
errors, fixed seeds), the right shapes and dtypes, and manual_seed makes them reproducible."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.distributions import (
    Bernoulli,
    Categorical,
    Exponential,
    Gumbel,
    HalfNormal,
    Laplace,
    LogNormal,
    Normal,
    OneHotCategorical,
    Pareto,
    Uniform,
    Weibull,
)

DRAWS = 20000


def _f64(values) -> numdiff.Tensor:
    return numdiff.tensor(np.asarray(values, dtype=np.float64))


CONTINUOUS = [
    ("normal", lambda: Normal(_f64([0.5, -2.0]), _f64([1.0, 3.0]))),
    ("uniform", lambda: Uniform(_f64([-1.0, 2.0]), _f64([1.0, 2.5]))),
    ("exponential", lambda: Exponential(_f64([0.5, 4.0]))),
    ("laplace", lambda: Laplace(_f64([1.0, -1.0]), _f64([0.5, 2.0]))),
    ("gumbel", lambda: Gumbel(_f64([1.0, -1.0]), _f64([0.5, 2.0]))),
    ("halfnormal", lambda: HalfNormal(_f64([0.5, 2.0]))),
    ("lognormal", lambda: LogNormal(_f64([0.0, -1.0]), _f64([0.3, 0.5]))),
    ("pareto", lambda: Pareto(_f64([0.5, 2.0]), _f64([9.0, 12.0]))),
    ("weibull", lambda: Weibull(_f64([0.5, 2.0]), _f64([0.8, 3.0]))),
]


@pytest.mark.parametrize(("name", "make"), CONTINUOUS)
@pytest.mark.parametrize("method", ["sample", "rsample"])
def test_draws_have_the_distributions_mean_and_variance(name: str, make, method: str) -> None:
    d = make()
    numdiff.manual_seed(1234)
    draws = getattr(d, method)((DRAWS,)).detach().numpy()
    mean, variance = d.mean.numpy(), d.variance.numpy()
    sample_mean = draws.mean(0)
    sample_variance = draws.var(0, ddof=1)
    fourth = ((draws - sample_mean) ** 4).mean(0)
    assert np.all(np.abs(sample_mean - mean) < 6 * np.sqrt(variance / DRAWS)), (sample_mean, mean)
    assert np.all(np.abs(sample_variance - variance) < 6 * np.sqrt((fourth - sample_variance**2) / DRAWS))
    assert np.all(d.support.check(numdiff.tensor(draws)).numpy())


@pytest.mark.parametrize(
    "make",
    [
        lambda probs: Categorical(probs=probs),
        lambda probs: Categorical(
            logits=_f64(np.log(probs.numpy(), where=probs.numpy() > 0, out=np.full((2, 3), -np.inf)))
        ),
        lambda probs: OneHotCategorical(probs=probs),
    ],
    ids=["categorical-probs", "categorical-logits", "one-hot"],
)
def test_categorical_frequencies_match_probs(make) -> None:
    probs = _f64([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]])
    d = make(probs)
    numdiff.manual_seed(99)
    draws = d.sample((DRAWS,)).numpy()
    counts = draws.sum(0) if draws.ndim == 3 else np.stack([(draws == k).sum(0) for k in range(3)], -1)
    frequencies = counts / DRAWS
    p = probs.numpy()
    assert np.all(np.abs(frequencies - p) <= 6 * np.sqrt(p * (1 - p) / DRAWS))
    assert counts[1, 1] == 0  # a zero-probability category is never drawn


def test_bernoulli_frequencies_match_probs() -> None:
    probs = _f64([0.05, 0.5, 0.9, 0.0, 1.0])
    numdiff.manual_seed(7)
    draws = Bernoulli(probs=probs).sample((DRAWS,)).numpy()
    assert set(np.unique(draws)) <= {0.0, 1.0}
    p = probs.numpy()
    assert np.all(np.abs(draws.mean(0) - p) <= 6 * np.sqrt(p * (1 - p) / DRAWS))


@pytest.mark.parametrize(
    "make",
    [
        lambda: Normal(numdiff.zeros(2, 3), 1.0),
        lambda: Categorical(logits=numdiff.zeros(2, 3, 4)),
        lambda: Bernoulli(logits=numdiff.zeros(5)),
        lambda: OneHotCategorical(probs=numdiff.ones(2, 4)),
        lambda: Exponential(numdiff.ones(3)),
    ],
)
def test_manual_seed_makes_draws_reproducible_and_shapes_follow_sample_shape(make) -> None:
    d = make()
    numdiff.manual_seed(3)
    first = d.sample((4, 2))
    numdiff.manual_seed(3)
    second = d.sample((4, 2))
    assert np.array_equal(first.numpy(), second.numpy())
    assert tuple(first.shape) == (4, 2) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert tuple(d.sample().shape) == tuple(d.batch_shape) + tuple(d.event_shape)
    assert tuple(d.sample_n(3).shape) == (3,) + tuple(d.batch_shape) + tuple(d.event_shape)


def test_scalar_parameters_give_scalar_draws() -> None:
    assert Normal(0.0, 1.0).sample().shape == ()
    assert Categorical(probs=numdiff.tensor([0.3, 0.7])).sample().shape == ()
    assert Bernoulli(0.3).sample((5,)).shape == (5,)
