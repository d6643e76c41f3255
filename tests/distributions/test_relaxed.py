"""RelaxedBernoulli, RelaxedOneHotCategorical and ContinuousBernoulli (the relaxations of the
discrete distributions VAEs use). The relaxed ones: the rounding of a draw is exact at any
temperature (P(draw > 1/2) = probs; the argmax of a one-hot draw is Categorical(probs)), low
temperatures give near-discrete draws, rsample gradients reach logits and temperature, and
refusals match torch. ContinuousBernoulli: sample moments and its probs check."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.distributions import RelaxedBernoulli, RelaxedOneHotCategorical

torch = pytest.importorskip("torch")
DRAWS = 20000


@pytest.mark.parametrize("temperature", [0.1, 1.0, 5.0])
def test_relaxed_bernoulli_rounds_to_bernoulli_probs(temperature: float) -> None:
    probs = np.array([0.05, 0.5, 0.8])
    d = RelaxedBernoulli(numdiff.tensor(temperature, dtype=numdiff.float64), probs=numdiff.tensor(probs))
    numdiff.manual_seed(11)
    draws = d.sample((DRAWS,)).numpy()
    assert draws.min() > 0 and draws.max() < 1
    frequencies = (draws > 0.5).mean(0)
    assert np.all(np.abs(frequencies - probs) < 6 * np.sqrt(probs * (1 - probs) / DRAWS))


@pytest.mark.parametrize("temperature", [0.1, 1.0, 5.0])
def test_relaxed_one_hot_argmax_is_categorical(temperature: float) -> None:
    probs = np.array([[0.1, 0.3, 0.6], [0.7, 0.2, 0.1]])
    d = RelaxedOneHotCategorical(
        numdiff.tensor(temperature, dtype=numdiff.float64), probs=numdiff.tensor(probs)
    )
    numdiff.manual_seed(12)
    draws = d.sample((DRAWS,)).numpy()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    counts = np.stack([(draws.argmax(-1) == k).mean(0) for k in range(3)], -1)
    assert np.all(np.abs(counts - probs) < 6 * np.sqrt(probs * (1 - probs) / DRAWS))


def test_low_temperature_draws_are_nearly_one_hot() -> None:
    d = RelaxedOneHotCategorical(numdiff.tensor(0.01), logits=numdiff.zeros(4))
    numdiff.manual_seed(3)
    assert (d.sample((200,)).max(-1)[0].numpy() > 0.9).mean() > 0.9


def test_rsample_gradients_reach_logits_and_temperature() -> None:
    logits = numdiff.tensor([0.3, -1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    temperature = numdiff.tensor(0.7, dtype=numdiff.float64, requires_grad=True)
    numdiff.manual_seed(5)
    draw = RelaxedOneHotCategorical(temperature, logits=logits).rsample((8,))
    d_logits, d_temperature = numdiff.autograd.grad((draw[..., 0] * 2).sum(), [logits, temperature])
    assert d_logits[0].item() > 0 and np.isfinite(d_temperature.item())
    assert abs(d_logits.sum().item()) < 1e-12  # softmax is unchanged by a common shift of the logits


BAD = [
    ("bernoulli-probs-above-one", lambda lib: lib.distributions.RelaxedBernoulli(lib.tensor(0.5), probs=lib.tensor([1.5]))),
    ("bernoulli-both", lambda lib: lib.distributions.RelaxedBernoulli(lib.tensor(0.5), probs=lib.tensor([0.5]), logits=lib.tensor([0.0]))),
    ("bernoulli-value-outside", lambda lib: lib.distributions.RelaxedBernoulli(lib.tensor(0.5), probs=lib.tensor([0.5])).log_prob(lib.tensor([1.5]))),
    ("one-hot-negative-probs", lambda lib: lib.distributions.RelaxedOneHotCategorical(lib.tensor(0.5), probs=lib.tensor([-0.5, 1.5]))),
    ("one-hot-value-off-simplex", lambda lib: lib.distributions.RelaxedOneHotCategorical(lib.tensor(0.5), logits=lib.zeros(2)).log_prob(lib.tensor([0.6, 0.6]))),
]  # fmt: skip


@pytest.mark.parametrize("make", [m for _, m in BAD], ids=[n for n, _ in BAD])
def test_bad_input_raises_value_error_like_torch(make) -> None:
    with pytest.raises(ValueError) as theirs:
        make(torch)
    with pytest.raises(ValueError) as ours:
        make(numdiff)
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0].replace("torch.", "numdiff.")


def test_continuous_bernoulli_draws_have_its_mean_and_variance() -> None:
    probs = np.array([0.03, 0.3, 0.5, 0.9])
    d = numdiff.distributions.ContinuousBernoulli(probs=numdiff.tensor(probs))
    numdiff.manual_seed(8)
    draws = d.sample((DRAWS,)).numpy()
    assert draws.min() >= 0 and draws.max() <= 1
    mean, variance = d.mean.numpy(), d.variance.numpy()
    assert np.all(np.abs(draws.mean(0) - mean) < 6 * np.sqrt(variance / DRAWS))
    fourth = ((draws - draws.mean(0)) ** 4).mean(0)
    assert np.all(np.abs(draws.var(0, ddof=1) - variance) < 6 * np.sqrt((fourth - variance**2) / DRAWS))


def test_continuous_bernoulli_refuses_probs_outside_the_interval_when_asked_to_validate() -> None:
    for lib in (torch, numdiff):
        with pytest.raises(ValueError, match="The parameter probs has invalid values"):
            lib.distributions.ContinuousBernoulli(probs=lib.tensor([1.5]), validate_args=True)
