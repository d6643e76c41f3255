"""Counting distributions on the non-negative integers: Poisson, Geometric, Binomial,
NegativeBinomial and Multinomial (a vector of counts). Draws come from numdiff's generator on the host (numdiff.poisson,
numdiff.binomial, uniform noise) and are cut from the graph (no rsample); log_prob, entropy and
the moments are differentiable in the parameters.

Geometric, Binomial and NegativeBinomial take `probs` or `logits` (exactly one), the other derived
on first use as in Bernoulli.
"""

from __future__ import annotations

import math
from functools import cached_property
from numbers import Number
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.discrete import (
    Categorical,
    _clamped_probs,
    _cross_entropy_with_logits,
    _one_parameter,
)
from numdiff.distributions.distribution import Distribution, broadcast_all, delegated, noise
from numdiff.distributions.gamma import Gamma
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.tensor import Size, Tensor


class Poisson(Distribution):
    """Poisson with mean `rate` (rate >= 0).

    >>> numdiff.distributions.Poisson(numdiff.tensor([2.0])).log_prob(numdiff.tensor([1.0]))
    tensor([-1.3069])
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(Size() if isinstance(rate, Number) else self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with numdiff.no_grad():
            return numdiff.poisson(self.rate.detach().expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return numdiff.xlogy(value, rate) - rate - numdiff.lgamma(value + 1)


class _ProbsOrLogits(Distribution):
    """A distribution given by a success probability `probs` or its log-odds `logits`."""

    def _set_parameter(self, probs: Any, logits: Any, *others: Any) -> tuple[Tensor, ...]:
        """Broadcasts `others` with the given parameter; returns `others` broadcast."""
        _one_parameter(probs, logits)
        name = "probs" if probs is not None else "logits"
        broadcast = broadcast_all(*others, probs if probs is not None else logits)
        self.__dict__[name] = broadcast[-1]
        self._param = broadcast[-1]
        return broadcast[:-1]

    @cached_property
    def probs(self) -> Tensor:
        return self.logits.sigmoid()

    @cached_property
    def logits(self) -> Tensor:
        clamped = _clamped_probs(self.probs)
        return clamped.log() - (-clamped).log1p()

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        new = super().expand(batch_shape)
        new._param = new.__dict__["probs" if self._param is self.__dict__.get("probs") else "logits"]
        return new


class Geometric(_ProbsOrLogits):
    """The number of failures before the first success in Bernoulli(probs) trials.

    >>> numdiff.distributions.Geometric(probs=numdiff.tensor([0.25])).mean
    tensor([3.])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._set_parameter(probs, logits)
        given = probs if probs is not None else logits
        super().__init__(
            Size() if isinstance(given, Number) else self._param.shape, validate_args=validate_args
        )
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            value = self.probs
            raise ValueError(
                f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"of distribution {self!r} to be positive but found invalid values:\n{value[value <= 0]}"
            )

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return numdiff.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Tensor:
        # floor(log u / log(1 - p)) for u uniform in (0, 1]: the inverse of the cdf 1 - (1 - p)^(k + 1).
        with numdiff.no_grad():
            probs = self.probs.detach()
            u = noise("uniform", self._extended_shape(sample_shape), probs)
            u = (1 - u).clamp(min=numdiff.finfo(probs.dtype).tiny)
            return (u.log() / (-probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # probs = 1 puts all mass at 0: 0 * log(0) there is 0, not NaN.
        probs = numdiff.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return _cross_entropy_with_logits(self.logits, self.probs) / self.probs


class Binomial(_ProbsOrLogits):
    """The number of successes in `total_count` Bernoulli(probs) trials.

    >>> numdiff.distributions.Binomial(10, numdiff.tensor([0.3])).mean
    tensor([3.])
    """

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self,
        total_count: Tensor | int = 1,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        (total_count,) = self._set_parameter(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with numdiff.no_grad():
            return numdiff.binomial(
                self.total_count.detach().expand(shape), self.probs.detach().expand(shape)
            )

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_binomial = numdiff.lgamma(n + 1) - numdiff.lgamma(value + 1) - numdiff.lgamma(n - value + 1)
        # n log(1 + e^l) = n (max(l, 0) + log1p(e^-|l|)), finite for any logit.
        log_normaliser = n * (logits.clamp(min=0) + (-logits.abs()).exp().log1p())
        return log_binomial + value * logits - log_normaliser

    def _homogeneous_count(self, what: str) -> int:
        count = int(self.total_count.max())
        if not bool((self.total_count == count).all()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return count

    def enumerate_support(self, expand: bool = True) -> Tensor:
        count = self._homogeneous_count("enumerate_support")
        values = numdiff.arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(Size((1 + count,) + tuple(self._batch_shape))) if expand else values

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)


class NegativeBinomial(_ProbsOrLogits):
    """The number of successes before `total_count` failures in Bernoulli(probs) trials (a real
    total_count > 0 allowed): Poisson draws with Gamma(total_count, (1 - p) / p) rates.

    >>> numdiff.distributions.NegativeBinomial(3.0, numdiff.tensor([0.5])).mean
    tensor([3.])
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self,
        total_count: Tensor | float,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        (total_count,) = self._set_parameter(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with numdiff.no_grad():
            gamma = Gamma(self.total_count.detach(), (-self.logits.detach()).exp(), validate_args=False)
            return numdiff.poisson(gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        unnormalised = n * functional.logsigmoid(-logits) + value * functional.logsigmoid(logits)
        log_normaliser = -numdiff.lgamma(n + value) + numdiff.lgamma(1.0 + value) + numdiff.lgamma(n)
        # total_count = 0 puts all mass at 0, where lgamma(0) would be infinite.
        log_normaliser = numdiff.where(n + value == 0.0, 0.0, log_normaliser)
        return unnormalised - log_normaliser


class Multinomial(Distribution):
    """Counts of each of the K categories (last dimension of `probs` or `logits`) in `total_count`
    independent Categorical draws; one int `total_count` for the whole batch, as in PyTorch.

    >>> d = numdiff.distributions.Multinomial(4, probs=numdiff.tensor([0.5, 0.5]))
    >>> d.log_prob(numdiff.tensor([2.0, 2.0]))
    tensor(-0.9808)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(
        self,
        total_count: int = 1,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        batch_shape = self._categorical.batch_shape
        super().__init__(batch_shape, self._categorical.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Multinomial:
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._categorical = self._categorical.expand(batch_shape)
        new._batch_shape = Size(batch_shape)
        return new

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.multinomial(self.total_count)

    probs = delegated("_categorical", "probs")
    logits = delegated("_categorical", "logits")
    param_shape = delegated("_categorical", "param_shape")

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with numdiff.no_grad():
            draws = self._categorical.sample(Size((self.total_count,) + tuple(Size(sample_shape))))
            counts = functional.one_hot(draws, self._event_shape[0]).sum(0)
            return counts.reshape(self._extended_shape(sample_shape)).type_as(self.probs)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # A category of probability 0 drawn 0 times contributes 0 (not 0 * -inf).
        logits = numdiff.where((value == 0) & (logits == -math.inf), 0.0, logits)
        log_factorials = numdiff.lgamma(value.sum(-1) + 1) - numdiff.lgamma(value + 1).sum(-1)
        return log_factorials + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        # H = n H(Categorical) - log n! + sum_k E[log x_k!], with x_k ~ Binomial(n, p_k).
        n = self.total_count
        binomial = Binomial(n, probs=self.probs, validate_args=False)
        counts = binomial.enumerate_support(expand=False)[1:]
        weights = numdiff.lgamma(counts + 1)
        expected_log_factorials = (binomial.log_prob(counts).exp() * weights).sum([0, -1])
        return n * self._categorical.entropy() - math.lgamma(n + 1) + expected_log_factorials
