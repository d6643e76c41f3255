"""Continuous distributions with closed-form densities on the real line and its positive half:
Cauchy and Gumbel (location-scale, sampled through the inverse cdf of uniform noise), and
HalfNormal and LogNormal (|X| and exp(X) of a Normal X; LogNormal is the TransformedDistribution of
that Normal through ExpTransform, as PyTorch's).
"""

from __future__ import annotations

import math
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.continuous import Normal, _batch_shape, _LocationScale
from numdiff.distributions.distribution import Distribution, broadcast_all, delegated, noise
from numdiff.distributions.transformed import TransformedDistribution
from numdiff.distributions.transforms import ExpTransform
from numdiff.tensor import Tensor

_EULER_GAMMA = 0.5772156649015329


def _open_uniform(shape: Any, like: Tensor) -> Tensor:
    """Uniform noise in (0, 1), both ends excluded: the inverse cdfs below are infinite there."""
    info = numdiff.finfo(like.dtype)
    return noise("uniform", shape, like).clamp(min=info.tiny, max=1 - info.eps)


class Cauchy(_LocationScale):
    """Cauchy (Lorentz) with median `loc` and half-width `scale`; its mean and variance do not exist.

    >>> numdiff.distributions.Cauchy(0.0, 1.0).log_prob(numdiff.tensor(0.0))
    tensor(-1.1447)
    """

    @property
    def mean(self) -> Tensor:
        return numdiff.full_like(self.loc, math.nan)

    @property
    def variance(self) -> Tensor:
        return numdiff.full_like(self.loc, math.inf)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.icdf(_open_uniform(self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - ((value - self.loc) / self.scale).pow(2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return numdiff.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return numdiff.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class Gumbel(_LocationScale):
    """Gumbel (type-I extreme value) with mode `loc` and scale `scale`.

    >>> numdiff.distributions.Gumbel(0.0, 1.0).log_prob(numdiff.tensor(0.0))
    tensor(-1.)
    """

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.icdf(_open_uniform(self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -(self.scale.log() + z + (-z).exp())

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (-(-(value - self.loc) / self.scale).exp()).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc - self.scale * (-value.log()).log()

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + _EULER_GAMMA)


class HalfNormal(Distribution):
    """|X| for X ~ Normal(0, scale).

    >>> numdiff.distributions.HalfNormal(1.0).log_prob(numdiff.tensor(0.0))
    tensor(-0.2258)
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        (self.scale,) = broadcast_all(scale)
        super().__init__(_batch_shape((scale,), self.scale), validate_args=validate_args)

    def _normal(self) -> Normal:
        return Normal(numdiff.zeros_like(self.scale), self.scale, validate_args=False)

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        return numdiff.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self._normal().rsample(sample_shape).abs()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self._normal().log_prob(value) + math.log(2)
        return numdiff.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self._normal().cdf(value) - 1

    def icdf(self, value: Tensor) -> Tensor:
        return self._normal().icdf((value + 1) / 2)

    def entropy(self) -> Tensor:
        return 0.5 * (math.pi * self.scale.pow(2) / 2).log() + 0.5


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ Normal(loc, scale): a TransformedDistribution of that Normal through
    ExpTransform, as in PyTorch (so kl_divergence, cdf and icdf come from the transform).

    >>> numdiff.distributions.LogNormal(0.0, 1.0).log_prob(numdiff.tensor(1.0))
    tensor(-0.9189)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    loc = delegated("base_dist", "loc")
    scale = delegated("base_dist", "scale")

    def _normal(self) -> Normal:
        return self.base_dist

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self) -> Tensor:
        squared = self.scale.pow(2)
        return squared.expm1() * (2 * self.loc + squared).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc

    def __repr__(self) -> str:
        # PyTorch prints LogNormal(); the parameters are shown here, as for Normal.
        return repr(self.base_dist).replace("Normal", "LogNormal", 1)
