"""Distributions made by transforming a simpler one, as PyTorch builds them: HalfCauchy (|X| for a
Cauchy X), Pareto (scale * exp(E) for an Exponential(alpha) E) and Weibull
(scale * E^(1 / concentration) for a standard Exponential E). Sampling, rsample, log_prob and
cdf/icdf come from TransformedDistribution; the moments and entropies are closed forms.
"""

from __future__ import annotations

import math
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.continuous import Exponential
from numdiff.distributions.distribution import Distribution, broadcast_all, delegated
from numdiff.distributions.normal_relatives import Cauchy
from numdiff.distributions.transformed import TransformedDistribution
from numdiff.distributions.transforms import AbsTransform, AffineTransform, ExpTransform, PowerTransform
from numdiff.tensor import Size, Tensor

_EULER_GAMMA = 0.5772156649015329


class HalfCauchy(TransformedDistribution):
    """|X| for X ~ Cauchy(0, scale).

    >>> numdiff.distributions.HalfCauchy(1.0).log_prob(numdiff.tensor(0.0))
    tensor(-0.4516)
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base = Cauchy(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    scale = delegated("base_dist", "scale")

    @property
    def mean(self) -> Tensor:
        return numdiff.full(
            self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device
        )

    @property
    def mode(self) -> Tensor:
        return numdiff.zeros_like(self.scale)

    variance = delegated("base_dist", "variance")

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return numdiff.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class Pareto(TransformedDistribution):
    """Pareto (type I) with minimum `scale` and tail index `alpha`.

    >>> numdiff.distributions.Pareto(1.0, 3.0).mean
    tensor(1.5000)
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(
        self, scale: Tensor | float, alpha: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Pareto:
        new = super().expand(batch_shape)
        new.scale = self.scale.expand(Size(batch_shape))
        new.alpha = self.alpha.expand(Size(batch_shape))
        return new

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        # Infinite for alpha <= 1 (PyTorch divides by zero there; the where keeps the warning away).
        a = numdiff.where(self.alpha > 1, self.alpha, 2.0)
        return numdiff.where(self.alpha > 1, a * self.scale / (a - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        # Infinite for alpha <= 2.
        a = numdiff.where(self.alpha > 2, self.alpha, 3.0)
        return numdiff.where(self.alpha > 2, self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2)), math.inf)

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())

    def __repr__(self) -> str:
        return Distribution.__repr__(self)


class Weibull(TransformedDistribution):
    """Weibull with `scale` and shape `concentration`.

    >>> numdiff.distributions.Weibull(1.0, 1.0).mean
    tensor(1.)
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(
        self, scale: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(numdiff.ones_like(self.scale), validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=self.concentration_reciprocal),
            AffineTransform(loc=0, scale=self.scale),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Weibull:
        shape = Size(batch_shape)
        new = super().expand(shape)
        new.scale = self.scale.expand(shape)
        new.concentration = self.concentration.expand(shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        new.transforms = [
            PowerTransform(exponent=new.concentration_reciprocal),
            AffineTransform(loc=0, scale=new.scale),
        ]
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * numdiff.lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self) -> Tensor:
        # NaN for concentration < 1, as PyTorch's negative base to a fractional power gives.
        base = ((self.concentration - 1) / self.concentration).clamp(min=0)
        return numdiff.where(
            self.concentration >= 1, self.scale * base**self.concentration_reciprocal, math.nan
        )

    @property
    def variance(self) -> Tensor:
        first = numdiff.lgamma(1 + self.concentration_reciprocal)
        return self.scale.pow(2) * (
            (numdiff.lgamma(1 + 2 * self.concentration_reciprocal)).exp() - (2 * first).exp()
        )

    def entropy(self) -> Tensor:
        return (
            _EULER_GAMMA * (1 - self.concentration_reciprocal)
            + (self.scale * self.concentration_reciprocal).log()
            + 1
        )

    def __repr__(self) -> str:
        return Distribution.__repr__(self)
