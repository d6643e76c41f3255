"""The relaxed (Gumbel-softmax / concrete) distributions: RelaxedBernoulli on (0, 1) and
RelaxedOneHotCategorical on the simplex, for discrete latent variables trained by rsample.

Each is, as in PyTorch, a TransformedDistribution of a distribution on logits: logistic noise
added to the logits and divided by the temperature (LogitRelaxedBernoulli, then sigmoid), or
Gumbel noise added to the logits, divided by the temperature and log-normalised
(ExpRelaxedCategorical, then exp). A draw is a differentiable function of the logits (and of a
tensor temperature) and the noise. The rounding of a draw is exact at any temperature:
P(RelaxedBernoulli > 1/2) = probs, and the argmax of a RelaxedOneHotCategorical draw is a
Categorical(probs) draw (the Gumbel-max trick).
"""

from __future__ import annotations

from numbers import Number
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.counting import _ProbsOrLogits
from numdiff.distributions.discrete import Categorical
from numdiff.distributions.distribution import Distribution, broadcast_all, delegated, noise
from numdiff.distributions.transformed import TransformedDistribution
from numdiff.distributions.transforms import ExpTransform, SigmoidTransform
from numdiff.tensor import Size, Tensor


def _clamped_uniform(shape: Any, like: Tensor) -> Tensor:
    """Uniform noise kept eps away from 0 and 1, so that its logarithms stay finite."""
    eps = numdiff.finfo(like.dtype).eps
    return noise("uniform", shape, like).clamp(min=eps, max=1 - eps)


class LogitRelaxedBernoulli(_ProbsOrLogits):
    """The logit of a RelaxedBernoulli draw: (logits + logistic noise) / temperature."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self.temperature = temperature
        self._set_parameter(probs, logits)
        given = probs if probs is not None else logits
        super().__init__(
            Size() if isinstance(given, Number) else self._param.shape, validate_args=validate_args
        )

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = _clamped_uniform(shape, self._param)
        return (u.log() - (-u).log1p() + self.logits.expand(shape)) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        shifted = logits - value * self.temperature
        return self.temperature.log() + shifted - 2 * shifted.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed Bernoulli on (0, 1): sigmoid of a LogitRelaxedBernoulli draw; as the temperature
    goes to 0, draws approach Bernoulli(probs) 0s and 1s.

    >>> d = numdiff.distributions.RelaxedBernoulli(numdiff.tensor(0.5), probs=numdiff.tensor([0.3]))
    >>> d.rsample().shape
    numdiff.Size([1])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    temperature = delegated("base_dist", "temperature")
    logits = delegated("base_dist", "logits")
    probs = delegated("base_dist", "probs")


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical draw: log_softmax((logits + Gumbel noise) / temperature)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        super().__init__(batch_shape, self._categorical.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> ExpRelaxedCategorical:
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._categorical = self._categorical.expand(batch_shape)
        new._batch_shape = Size(batch_shape)
        return new

    param_shape = delegated("_categorical", "param_shape")
    logits = delegated("_categorical", "logits")
    probs = delegated("_categorical", "probs")

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = _clamped_uniform(self._extended_shape(sample_shape), self.logits)
        gumbels = -(-u.log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self._categorical._num_events
        logits, value = broadcast_all(self.logits, value)
        # Normalising constant of the concrete density: (K - 1)! temperature^(K - 1).
        log_scale = numdiff.full_like(self.temperature, float(k)).lgamma() + (k - 1) * self.temperature.log()
        score = logits - value * self.temperature
        return (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A relaxed one-hot vector on the simplex (Gumbel-softmax): exp of an ExpRelaxedCategorical
    draw; as the temperature goes to 0, draws approach OneHotCategorical(probs) vectors.

    >>> d = numdiff.distributions.RelaxedOneHotCategorical(numdiff.tensor(0.5), logits=numdiff.zeros(3))
    >>> d.rsample().sum()
    tensor(1.)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    temperature = delegated("base_dist", "temperature")
    logits = delegated("base_dist", "logits")
    probs = delegated("base_dist", "probs")
