"""The rarer univariate families of torch.distributions: Kumaraswamy (a transformed Uniform),
LogisticNormal (a stick-broken Normal), FisherSnedecor (a ratio of gamma draws), InverseGamma (the
reciprocal of a gamma draw) and GeneralizedPareto (sampled through its closed-form inverse cdf).

Each rsample is differentiable in every parameter: Kumaraswamy and GeneralizedPareto through
their inverse cdfs, FisherSnedecor and InverseGamma through the implicit derivative of their
gamma draws.
"""

from __future__ import annotations

import math
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.continuous import Normal, Uniform, _batch_shape
from numdiff.distributions.distribution import Distribution, broadcast_all, delegated, noise
from numdiff.distributions.gamma import Gamma, standard_gamma
from numdiff.distributions.kl_families import EULER_GAMMA
from numdiff.distributions.transformed import TransformedDistribution
from numdiff.distributions.transforms import AffineTransform, PowerTransform, StickBreakingTransform
from numdiff.tensor import Size, Tensor


def _kumaraswamy_moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[X^n] = b B(1 + n / a, b) of a Kumaraswamy(a, b) variable."""
    shifted = 1 + n / a
    return b * (numdiff.lgamma(shifted) + numdiff.lgamma(b) - numdiff.lgamma(shifted + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy on [0, 1] with concentrations a = `concentration1` and b = `concentration0`:
    (1 - U^(1/b))^(1/a) for U uniform, density a b x^(a-1) (1 - x^a)^(b-1).

    >>> numdiff.distributions.Kumaraswamy(2.0, 3.0).log_prob(numdiff.tensor(0.5))
    tensor(0.5232)
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        concentration1: Tensor | float,
        concentration0: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(
            numdiff.zeros_like(self.concentration0),
            numdiff.ones_like(self.concentration0),
            validate_args=validate_args,
        )
        transforms = [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Kumaraswamy:
        new = super().expand(batch_shape)
        new.concentration1 = self.concentration1.expand(Size(batch_shape))
        new.concentration0 = self.concentration0.expand(Size(batch_shape))
        return new

    @property
    def mean(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """((a - 1) / (a b - 1))^(1/a); NaN where a or b is below 1 (no interior mode). PyTorch's
        formula takes log1p(-b), NaN for every b > 1 as well: a test pins the difference."""
        a, b = self.concentration1, self.concentration0
        interior = (a >= 1) & (b >= 1)
        a_safe, b_safe = numdiff.where(interior, a, 2.0), numdiff.where(interior, b, 2.0)
        mode = ((a_safe - 1) / (a_safe * b_safe - 1)).pow(a_safe.reciprocal())
        return numdiff.where(interior, mode, math.nan)

    @property
    def variance(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic = numdiff.digamma(b + 1) + EULER_GAMMA  # the harmonic number H_b
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()

    def __repr__(self) -> str:
        return Distribution.__repr__(self)


class LogisticNormal(TransformedDistribution):
    """The logistic-normal distribution on the simplex: StickBreakingTransform applied to a Normal
    vector of K - 1 entries (`loc`, `scale`), giving K entries.

    >>> d = numdiff.distributions.LogisticNormal(numdiff.zeros(2), numdiff.ones(2))
    >>> d.event_shape
    numdiff.Size([3])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])  # a scalar Normal is one stick of length 1
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale

    def __repr__(self) -> str:
        return f"{type(self).__name__}(loc: {self.loc.size()}, scale: {self.scale.size()})"


class FisherSnedecor(Distribution):
    """The F distribution with `df1` and `df2` degrees of freedom: (G1 / df1) / (G2 / df2) for
    independent chi-squared G1, G2.

    >>> numdiff.distributions.FisherSnedecor(4.0, 6.0).mean
    tensor(1.5000)
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Tensor | float, df2: Tensor | float, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        super().__init__(_batch_shape((df1, df2), self.df1), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        df2 = numdiff.where(self.df2 > 2, self.df2, math.nan)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return numdiff.where(self.df1 > 2, mode, math.nan)

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, numdiff.where(self.df2 > 4, self.df2, math.nan)
        return 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        tiny = numdiff.finfo(self.df1.dtype).tiny
        # Gamma(df / 2, rate df) draws: chi-squared over its degrees of freedom.
        ratio1 = standard_gamma(0.5 * self.df1.expand(shape)) / self.df1
        ratio2 = (standard_gamma(0.5 * self.df2.expand(shape)) / self.df2).clamp(min=tiny)
        return (ratio1 / ratio2).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        half1, half2, ratio = 0.5 * self.df1, 0.5 * self.df2, self.df1 / self.df2
        log_beta = numdiff.lgamma(half1 + half2) - numdiff.lgamma(half1) - numdiff.lgamma(half2)
        return (
            log_beta
            + half1 * ratio.log()
            + (half1 - 1) * value.log()
            - (half1 + half2) * (ratio * value).log1p()
        )


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate): density rate^a / Gamma(a) x^(-a-1) exp(-rate / x).

    >>> numdiff.distributions.InverseGamma(3.0, 2.0).mean
    tensor(1.)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True
    concentration = delegated("base_dist", "concentration")
    rate = delegated("base_dist", "rate")

    def __init__(
        self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None
    ) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-base.rate.new_ones(())), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        a = numdiff.where(self.concentration > 1, self.concentration, 2.0)
        return numdiff.where(self.concentration > 1, self.rate / (a - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a = numdiff.where(self.concentration > 2, self.concentration, 3.0)
        return numdiff.where(self.concentration > 2, self.rate.pow(2) / ((a - 1).pow(2) * (a - 2)), math.inf)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + self.rate.log() + numdiff.lgamma(a) - (1 + a) * numdiff.digamma(a)

    def __repr__(self) -> str:
        return Distribution.__repr__(self)


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution with `loc`, `scale` and shape `concentration` (xi):
    survival (1 + xi z)^(-1/xi) for z = (x - loc) / scale, exp(-z) at xi = 0.

    >>> numdiff.distributions.GeneralizedPareto(0.0, 1.0, 0.0).log_prob(numdiff.tensor(1.0))
    tensor(-1.)
    """

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(
        self,
        loc: Tensor | float,
        scale: Tensor | float,
        concentration: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(_batch_shape((loc, scale, concentration), self.loc), validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        # Bounded above at loc - scale / xi when xi < 0.
        below = self.concentration < 0
        upper = self.loc - self.scale / numdiff.where(below, self.concentration, -1.0)
        return constraints.interval(self.loc, numdiff.where(below, upper, math.inf))

    def _zero_and_safe(self) -> tuple[Tensor, Tensor]:
        """Where xi is 0 (to PyTorch's isclose tolerance) and xi with those entries set to 1, so the
        xi != 0 formulas stay finite there and their gradient is an exact zero."""
        xi = self.concentration
        at_zero = xi.abs() <= 1e-8
        return at_zero, numdiff.where(at_zero, 1.0, xi)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.icdf(noise("uniform", self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        at_zero, xi = self._zero_and_safe()
        power = 1 / xi + 1
        # At power 0 (xi = -1, the uniform case) the log1p term is 0 even where it is -inf.
        nonzero = numdiff.where(power == 0, power, power * (xi * z).log1p())
        return -self.scale.log() - numdiff.where(at_zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        at_zero, xi = self._zero_and_safe()
        return numdiff.where(at_zero, -z, -(xi * z).log1p() / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        at_zero, xi = self._zero_and_safe()
        log_survival = (-value).log1p()
        nonzero = self.loc + self.scale / xi * (-xi * log_survival).expm1()
        return numdiff.where(at_zero, self.loc - self.scale * log_survival, nonzero)

    @property
    def mean(self) -> Tensor:
        xi = self.concentration
        safe = numdiff.where(xi < 1, xi, 0.5)
        return numdiff.where(xi < 1, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self) -> Tensor:
        xi = self.concentration
        safe = numdiff.where(xi < 0.5, xi, 0.25)
        return numdiff.where(xi < 0.5, self.scale.pow(2) / ((1 - safe).pow(2) * (1 - 2 * safe)), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(self._batch_shape)
