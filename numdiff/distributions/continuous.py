"""Continuous distributions with reparameterised samplers: Normal, Uniform, Exponential, Laplace.

Each rsample is a differentiable expression in the parameters and constant standard noise, so
`loss(dist.rsample()).backward()` reaches loc/scale/low/high/rate (the VAE reparameterisation).
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.distribution import Distribution, broadcast_all, noise
from numdiff.tensor import Size, Tensor

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def _batch_shape(params: tuple[Any, ...], broadcast: Tensor) -> Size:
    """A distribution made from plain numbers has an empty batch shape, else the broadcast shape."""
    return Size() if all(isinstance(p, Number) for p in params) else broadcast.shape


class _LocationScale(Distribution):
    """A distribution on the real line given by a location `loc` (its mean and mode) and a positive
    `scale`: what Normal and Laplace share."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape((loc, scale), self.loc), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc


class Normal(_LocationScale):
    """Gaussian with mean `loc` and standard deviation `scale`.

    >>> d = numdiff.distributions.Normal(numdiff.tensor([0.0]), numdiff.tensor([2.0]))
    >>> d.log_prob(numdiff.tensor([0.0]))
    tensor([-1.6121])
    """

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = noise("normal", self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.scale**2) - self.scale.log() - _HALF_LOG_TWO_PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + numdiff.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * numdiff.special.ndtri(value)

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_TWO_PI + self.scale.log()


class Uniform(Distribution):
    """Uniform on [low, high). With validation on, `low < high` is checked (as in PyTorch) and
    values outside get a ValueError; without it they get log_prob -inf.

    >>> numdiff.distributions.Uniform(0.0, 4.0).entropy()
    tensor(1.3863)
    """

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        # Each bound is constrained by the other, so the constraints are made per instance.
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low: Tensor | float, high: Tensor | float, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(_batch_shape((low, high), self.low), validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return self.high * math.nan

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / math.sqrt(12)

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = noise("uniform", self._extended_shape(sample_shape), self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value) & (self.high > value)
        return inside.type_as(self.low).log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()


class Exponential(Distribution):
    """Exponential with `rate` (mean 1 / rate).

    >>> numdiff.distributions.Exponential(numdiff.tensor([2.0])).mean
    tensor([0.5000])
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(_batch_shape((rate,), self.rate), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return numdiff.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        # -log(1 - u) for u in [0, 1) is a standard exponential draw, finite everywhere.
        u = noise("uniform", self._extended_shape(sample_shape), self.rate)
        return -(-u).log1p() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()


class Laplace(_LocationScale):
    """Laplace (double exponential) with location `loc` and scale `scale`.

    >>> numdiff.distributions.Laplace(0.0, 1.0).variance
    tensor(2.)
    """

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        # u uniform on [eps - 1, 1): inverting the CDF on each half, never log(0).
        eps = numdiff.finfo(self.loc.dtype).eps
        u = noise("uniform", self._extended_shape(sample_shape), self.loc) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        offset = value - self.loc
        return 0.5 - 0.5 * offset.sign() * (-offset.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        centred = value - 0.5
        return self.loc - self.scale * centred.sign() * (-2 * centred.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()
