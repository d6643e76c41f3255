"""Poisson, Geometric, Binomial, NegativeBinomial and Multinomial: draws with the distribution's
mean and variance (fixed seeds, many standard errors), integer values in the support, refused
parameters and values with torch's messages, and the edge cases of their kl_divergence."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.distributions import Binomial, Geometric, Multinomial, NegativeBinomial, Poisson

torch = pytest.importorskip("torch")
DRAWS = 20000


def _f64(values) -> numdiff.Tensor:
    return numdiff.tensor(np.asarray(values, dtype=np.float64))


SAMPLED = [
    ("poisson", lambda: Poisson(_f64([0.3, 4.0, 50.0]))),
    ("geometric", lambda: Geometric(probs=_f64([0.05, 0.5, 0.9]))),
    ("geometric-logits", lambda: Geometric(logits=_f64([-2.0, 1.0]))),
    ("binomial", lambda: Binomial(_f64([1.0, 10.0, 40.0]), probs=_f64([0.3, 0.5, 0.95]))),
    ("negative-binomial", lambda: NegativeBinomial(_f64([0.5, 3.0, 20.0]), probs=_f64([0.3, 0.5, 0.8]))),
    ("multinomial", lambda: Multinomial(9, probs=_f64([[0.1, 0.3, 0.6], [0.5, 0.25, 0.25]]))),
]


@pytest.mark.parametrize(("name", "make"), SAMPLED)
def test_draws_have_the_distributions_mean_and_variance(name: str, make) -> None:
    d = make()
    numdiff.manual_seed(4321)
    draws = d.sample((DRAWS,)).numpy()
    assert tuple(draws.shape) == (DRAWS,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert np.array_equal(draws, np.round(draws)) and draws.min() >= 0
    mean, variance = d.mean.numpy(), d.variance.numpy()
    sample_mean, sample_variance = draws.mean(0), draws.var(0, ddof=1)
    fourth = ((draws - sample_mean) ** 4).mean(0)
    assert np.all(np.abs(sample_mean - mean) < 6 * np.sqrt(variance / DRAWS)), (sample_mean, mean)
    assert np.all(
        np.abs(sample_variance - variance) < 6 * np.sqrt((fourth - sample_variance**2) / DRAWS) + 1e-12
    )
    assert np.all(d.support.check(numdiff.tensor(draws)).numpy())


def test_multinomial_draws_count_total_count_trials() -> None:
    numdiff.manual_seed(2)
    draws = Multinomial(7, logits=numdiff.zeros(2, 4)).sample((5,))
    assert np.all(draws.sum(-1).numpy() == 7)


def test_binomial_entropy_and_enumerate_support_need_one_total_count() -> None:
    d = Binomial(_f64([3.0, 4.0]), probs=_f64([0.5, 0.5]))
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count not supported by `entropy`"):
        d.entropy()
    with pytest.raises(NotImplementedError, match="enumerate_support"):
        d.enumerate_support()


def test_binomial_kl_is_infinite_where_p_has_more_trials_and_refused_where_fewer() -> None:
    p = Binomial(_f64([5.0, 6.0]), probs=_f64([0.3, 0.6]))
    q = Binomial(_f64([5.0, 4.0]), probs=_f64([0.4, 0.5]))
    kl = numdiff.distributions.kl_divergence(p, q).numpy()
    theirs = torch.distributions.kl_divergence(
        torch.distributions.Binomial(
            torch.tensor([5.0, 6.0], dtype=torch.float64), probs=torch.tensor([0.3, 0.6], dtype=torch.float64)
        ),
        torch.distributions.Binomial(
            torch.tensor([5.0, 4.0], dtype=torch.float64), probs=torch.tensor([0.4, 0.5], dtype=torch.float64)
        ),
    ).numpy()
    np.testing.assert_allclose(kl, theirs, rtol=1e-12)
    assert np.isfinite(kl[0]) and kl[1] == np.inf
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        numdiff.distributions.kl_divergence(q, p)


def test_multinomial_refuses_a_tensor_total_count() -> None:
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        Multinomial(numdiff.tensor(3), probs=numdiff.ones(2))


BAD = [
    ("poisson-negative-rate", lambda lib: lib.distributions.Poisson(lib.tensor([1.0, -1.0]))),
    ("poisson-fractional-value", lambda lib: lib.distributions.Poisson(2.0).log_prob(lib.tensor(1.5))),
    ("poisson-no-tensor-value", lambda lib: lib.distributions.Poisson(2.0).log_prob(1.0)),
    ("geometric-zero-probs", lambda lib: lib.distributions.Geometric(probs=lib.tensor([0.5, 0.0]))),
    ("geometric-probs-above-one", lambda lib: lib.distributions.Geometric(probs=lib.tensor([1.5]))),
    ("geometric-both", lambda lib: lib.distributions.Geometric(probs=lib.tensor([0.5]), logits=lib.tensor([0.0]))),
    ("geometric-negative-value", lambda lib: lib.distributions.Geometric(0.5).log_prob(lib.tensor(-1.0))),
    ("binomial-fractional-count", lambda lib: lib.distributions.Binomial(lib.tensor([2.5]), probs=lib.tensor([0.5]))),
    ("binomial-value-above-count", lambda lib: lib.distributions.Binomial(3, probs=lib.tensor(0.5)).log_prob(lib.tensor(4.0))),
    ("negative-binomial-probs-one", lambda lib: lib.distributions.NegativeBinomial(2.0, probs=lib.tensor([1.0]))),
    ("negative-binomial-negative-count", lambda lib: lib.distributions.NegativeBinomial(lib.tensor([-1.0]), logits=lib.tensor([0.0]))),
    ("multinomial-value-too-many", lambda lib: lib.distributions.Multinomial(3, probs=lib.tensor([0.2, 0.8])).log_prob(lib.tensor([2.0, 2.0]))),
    ("multinomial-negative-probs", lambda lib: lib.distributions.Multinomial(3, probs=lib.tensor([-0.2, 1.2]))),
]  # fmt: skip


@pytest.mark.parametrize("make", [m for _, m in BAD], ids=[n for n, _ in BAD])
def test_bad_input_raises_value_error_like_torch(make) -> None:
    with pytest.raises(ValueError) as theirs:
        make(torch)
    with pytest.raises(ValueError) as ours:
        make(numdiff)
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0].replace("torch.", "numdiff.")
