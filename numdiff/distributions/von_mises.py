"""VonMises: the circular normal distribution on angles, with its own modified Bessel functions.

log_prob needs log I0(kappa) and the variance I1(kappa) / I0(kappa). Both are computed from numdiff
ops (so they differentiate on their own): the power series
I_n(x) = sum_k (x / 2)^(2k + n) / (k! (k + n)!) below x = 30, summed in log space relative to its
largest term, and above it the asymptotic expansion
I_n(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k prod_{j <= k} (4 n^2 - (2j - 1)^2) / (k! (8x)^k),
whose 16 terms are below 1e-16 there. Both agree with scipy.special.i0e / i1e to 1e-13
(tests/distributions/test_von_mises.py). PyTorch evaluates the Abramowitz-Stegun polynomial fits
instead, accurate to about 1e-7, so the two libraries' values differ at that level.
"""

from __future__ import annotations

import math
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.continuous import _batch_shape
from numdiff.distributions.distribution import Distribution, broadcast_all, noise
from numdiff.tensor import Tensor

_SERIES_BELOW = 30.0
_SERIES_TERMS = 56  # at x = 30 the terms fall below 1e-17 of the sum (~1e12) by k = 50
_ASYMPTOTIC_TERMS = 16


def log_modified_bessel(x: Tensor, order: int) -> Tensor:
    """log I_order(x) for x > 0 and order 0 or 1, differentiable in x."""
    small = x.clamp(max=_SERIES_BELOW)
    large = x.clamp(min=_SERIES_BELOW)
    # Series: term_k / term_0 = prod_{j <= k} (x / 2)^2 / (j (j + order)).
    quarter_square = (small / 2).pow(2)
    term = numdiff.ones_like(small)
    total = numdiff.ones_like(small)
    for j in range(1, _SERIES_TERMS):
        term = term * quarter_square / (j * (j + order))
        total = total + term
    series = total.log() + order * (small / 2).log() - math.lgamma(order + 1)
    # Asymptotic expansion in 1 / (8x).
    mu = 4 * order * order
    inverse = 1 / (8 * large)
    factor = numdiff.ones_like(large)
    expansion = numdiff.ones_like(large)
    for k in range(1, _ASYMPTOTIC_TERMS):
        factor = factor * (-(mu - (2 * k - 1) ** 2) / k) * inverse
        expansion = expansion + factor
    asymptotic = large - 0.5 * (2 * math.pi * large).log() + expansion.log()
    return numdiff.where(x < _SERIES_BELOW, series, asymptotic)


class VonMises(Distribution):
    """Von Mises on the circle with mean direction `loc` and concentration `kappa` (draws in
    [-pi, pi); no rsample, as in PyTorch).

    >>> numdiff.distributions.VonMises(0.0, 1.0).log_prob(numdiff.tensor(0.0))
    tensor(-1.0707)
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real

    def __init__(
        self, loc: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(_batch_shape((loc, concentration), self.loc), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """The circular variance, 1 - I1(kappa) / I0(kappa)."""
        kappa = self.concentration
        return 1 - (log_modified_bessel(kappa, 1) - log_modified_bessel(kappa, 0)).exp()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        kappa = self.concentration
        return kappa * (value - self.loc).cos() - math.log(2 * math.pi) - log_modified_bessel(kappa, 0)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Best and Fisher's rejection sampler (wrapped Cauchy envelope), in float64."""
        shape = self._extended_shape(sample_shape)
        with numdiff.no_grad():
            loc = self.loc.detach().double().expand(shape)
            kappa = self.concentration.detach().double().expand(shape)
            tau = 1 + (1 + 4 * kappa.pow(2)).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
            # r = (1 + rho^2) / (2 rho), with its Taylor form where rho underflows.
            r = numdiff.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho.pow(2)) / (2 * rho))
            angle = numdiff.zeros_like(loc)
            done = numdiff.zeros(shape, dtype=numdiff.bool, device=loc.device)
            while not bool(done.all()):
                u1, u2, u3 = noise("uniform", (3,) + tuple(shape), loc).unbind(0)
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                angle = numdiff.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), angle)
                done = done | accept
            wrapped = (angle + math.pi + loc) % (2 * math.pi) - math.pi
            return wrapped.to(self.loc.dtype)
