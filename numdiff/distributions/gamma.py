"""The gamma family: Gamma, Chi2 and StudentT, with reparameterised samplers.

A gamma draw has no closed-form inverse cdf, so `rsample` draws standard gamma variates on the
host (NumPy's generator under numdiff's seed) and differentiates them implicitly in the shape:
x is held at its quantile P(alpha, x) = u, so dx/dalpha = -(dP/dalpha) / p(x)
(numdiff/kernels/gamma_grad.py, as PyTorch's _standard_gamma_grad; Figurnov et al. 2018). The
rate enters as x / rate, differentiated as usual. StudentT's rsample is Normal / sqrt(Chi2 / df),
so its df gradient comes through the same implicit derivative.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import numdiff
from numdiff import _random
from numdiff.autograd.function import Function
from numdiff.distributions import constraints
from numdiff.distributions.continuous import _batch_shape
from numdiff.distributions.distribution import Distribution, broadcast_all, noise
from numdiff.kernels.gamma_grad import standard_gamma_shape_grad
from numdiff.ops.search import _host, _on_device_of
from numdiff.tensor import Size, Tensor


class _StandardGamma(Function):
    """Standard gamma draws of shape `concentration` (one per element), differentiable in the
    shape through the implicit derivative of the draw at a fixed quantile."""

    @staticmethod
    def forward(ctx, concentration):
        alpha = _host("Gamma.rsample", concentration)
        draws = _random.rng(None).standard_gamma(alpha.astype(np.float64))
        # A draw that underflows to 0 is kept at the smallest normal number, as in PyTorch, so
        # log_prob of the draw stays finite.
        draws = np.asarray(np.maximum(draws, np.finfo(alpha.dtype).tiny), dtype=alpha.dtype)  # 0-d stays an array
        out = _on_device_of(draws, concentration)
        ctx.save_for_backward(concentration, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        concentration, out = ctx.saved_tensors
        alpha = _host("Gamma.rsample", concentration).astype(np.float64).reshape(-1)
        draws = _host("Gamma.rsample", out).astype(np.float64).reshape(-1)
        slope = np.empty_like(draws)
        standard_gamma_shape_grad(draws, alpha, slope)
        slope = slope.reshape(tuple(out.shape)).astype(_host("Gamma.rsample", out).dtype)
        return grad * _on_device_of(slope, out)


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws of `concentration`'s shape, differentiable in concentration."""
    if not concentration.is_floating_point():
        raise TypeError(
            f"standard_gamma: concentration must be a floating point tensor, got {concentration.dtype}"
        )
    return _StandardGamma.apply(concentration)


class Gamma(Distribution):
    """Gamma with shape `concentration` and inverse scale `rate` (mean concentration / rate).

    >>> d = numdiff.distributions.Gamma(numdiff.tensor([2.0]), numdiff.tensor([3.0]))
    >>> d.log_prob(numdiff.tensor([1.0]))
    tensor([-0.8028])
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(
        self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(_batch_shape((concentration, rate), self.concentration), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        # Chi2's constrained parameter is df: its concentration and rate are expanded here.
        new = super().expand(batch_shape)
        new.concentration = self.concentration.expand(Size(batch_shape))
        new.rate = self.rate.expand(Size(batch_shape))
        return new

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        alpha, rate = self.concentration, self.rate
        return (
            numdiff.xlogy(alpha, rate)
            + numdiff.xlogy(alpha - 1, value)
            - rate * value
            - numdiff.lgamma(alpha)
        )

    def cdf(self, value: Tensor) -> Tensor:
        """P(concentration, rate * value): differentiable in the rate and the value; in the
        concentration it raises on backward, as PyTorch's."""
        if self._validate_args:
            self._validate_sample(value)
        return numdiff.special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        alpha = self.concentration
        return alpha - self.rate.log() + numdiff.lgamma(alpha) + (1.0 - alpha) * numdiff.digamma(alpha)


class Chi2(Gamma):
    """Chi-squared with `df` degrees of freedom: Gamma(df / 2, 1 / 2).

    >>> numdiff.distributions.Chi2(numdiff.tensor([4.0])).mean
    tensor([4.])
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Tensor | float, validate_args: bool | None = None) -> None:
        (self.df,) = broadcast_all(df)
        self.concentration = 0.5 * self.df
        self.rate = numdiff.full_like(self.df, 0.5)
        Distribution.__init__(self, _batch_shape((df,), self.df), validate_args=validate_args)

    def __repr__(self) -> str:
        return "Chi2()"  # PyTorch's (its df is derived from the Gamma parameters it stores)


class StudentT(Distribution):
    """Student's t with `df` degrees of freedom, location `loc` and scale `scale`.

    >>> numdiff.distributions.StudentT(numdiff.tensor([3.0])).log_prob(numdiff.tensor([0.0]))
    tensor([-1.0005])
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(
        self,
        df: Tensor | float,
        loc: Tensor | float = 0.0,
        scale: Tensor | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(_batch_shape((df, loc, scale), self.df), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return numdiff.where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        return numdiff.where(self.df > 2, finite, numdiff.where(self.df > 1, math.inf, math.nan))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        # Y = X / sqrt(Z / df) with X standard normal and Z ~ Chi2(df): a t draw with df degrees.
        shape = self._extended_shape(sample_shape)
        normal = noise("normal", shape, self.df)
        chi2 = 2 * standard_gamma(0.5 * self.df.expand(shape))
        return self.loc + self.scale * normal * (chi2 / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        half_df = 0.5 * self.df
        normaliser = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + numdiff.lgamma(half_df)
            - numdiff.lgamma(half_df + 0.5)
        )
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - normaliser

    def entropy(self) -> Tensor:
        half_df = 0.5 * self.df
        log_beta = numdiff.lgamma(half_df) + math.lgamma(0.5) - numdiff.lgamma(half_df + 0.5)
        return (
            self.scale.log()
            + (half_df + 0.5) * (numdiff.digamma(half_df + 0.5) - numdiff.digamma(half_df))
            + 0.5 * self.df.log()
            + log_beta
        )
