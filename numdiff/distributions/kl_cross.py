"""kl_divergence between members of different families among Beta, Exponential, Gamma, Gumbel,
Laplace, Normal, Pareto, Uniform and ContinuousBernoulli (with ContinuousBernoulli's own pair,
which shares their cross-entropy helper), and among Bernoulli, Binomial and Poisson: each
E_p[log p] - E_p[log q] in closed form, or infinity where q's support misses part of p's (a Normal
against a Gamma, a Uniform against a Beta where it reaches outside [0, 1]). Registered on import
(numdiff.distributions imports this module).
"""

from __future__ import annotations

import math

import numdiff
from numdiff.distributions.beta import Beta
from numdiff.distributions.continuous import Exponential, Laplace, Normal, Uniform
from numdiff.distributions.continuous_bernoulli import ContinuousBernoulli
from numdiff.distributions.counting import Binomial, Poisson
from numdiff.distributions.discrete import Bernoulli
from numdiff.distributions.distribution import Distribution
from numdiff.distributions.gamma import Gamma
from numdiff.distributions.heavy_tails import Pareto
from numdiff.distributions.kl import _infinite_where, register_kl
from numdiff.distributions.kl_families import EULER_GAMMA
from numdiff.distributions.normal_relatives import Gumbel
from numdiff.tensor import Tensor

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def _x_log_x(x: Tensor) -> Tensor:
    """x log x on [0, 1] or [0, inf), 0 at x = 0; negative x (outside q's support, where the
    divergence is set to infinity) is read as 0, so no log of a negative number is taken."""
    x = x.clamp(min=0)
    return numdiff.xlogy(x, x)


def _beta_mean(p: Beta) -> Tensor:
    return p.concentration1 / (p.concentration1 + p.concentration0)


def _normal_cross_entropy(second_moment_terms: Tensor, q: Normal) -> Tensor:
    """-E_p[log q(x)] for a Normal q given E_p[(x - q.loc)^2]."""
    return q.scale.log() + _HALF_LOG_TWO_PI + 0.5 * second_moment_terms / q.scale.pow(2)


def _infinite(param: Tensor):
    def kl(p: Distribution, q: Distribution) -> Tensor:
        return numdiff.full_like(getattr(p, param), math.inf)

    return kl


# p's support reaches where q has no mass: the divergence is infinite everywhere.
for _p, _q, _param in [
    (Exponential, Beta, "rate"), (Exponential, Uniform, "rate"),
    (Gamma, Beta, "concentration"), (Gamma, Uniform, "concentration"),
    (Gumbel, Beta, "loc"), (Gumbel, Exponential, "loc"), (Gumbel, Gamma, "loc"), (Gumbel, Uniform, "loc"),
    (Laplace, Beta, "loc"), (Laplace, Exponential, "loc"), (Laplace, Gamma, "loc"), (Laplace, Uniform, "loc"),
    (Normal, Beta, "loc"), (Normal, Exponential, "loc"), (Normal, Gamma, "loc"), (Normal, Uniform, "loc"),
    (Beta, Pareto, "concentration1"), (Exponential, Pareto, "rate"), (Gamma, Pareto, "concentration"),
    (Gumbel, Pareto, "loc"), (Laplace, Pareto, "loc"), (Normal, Pareto, "loc"),
    (Pareto, Beta, "scale"), (Pareto, Uniform, "scale"),
]:  # fmt: skip
    register_kl(_p, _q)(_infinite(_param))


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * _beta_mean(p)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    expected_log = numdiff.digamma(p.concentration1) - numdiff.digamma(p.concentration1 + p.concentration0)
    return (
        -p.entropy()
        + numdiff.lgamma(q.concentration)
        - q.concentration * q.rate.log()
        - (q.concentration - 1) * expected_log
        + q.rate * _beta_mean(p)
    )


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    mean = _beta_mean(p)
    second_moment = mean * (1 - mean) / (p.concentration1 + p.concentration0 + 1) + mean.pow(2)
    return -p.entropy() + _normal_cross_entropy(second_moment - 2 * q.loc * mean + q.loc.pow(2), q)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return _infinite_where((q.low > 0) | (q.high < 1), result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    return (
        -q.concentration * ratio.log()
        + ratio
        + numdiff.lgamma(q.concentration)
        + q.concentration * EULER_GAMMA
        - (1 + EULER_GAMMA)
    )


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    product = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    return product.log() - 1 - loc_ratio + loc_ratio.exp() * product / (product + 1) + product.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    # E_p[(x - m)^2] = 2 / rate^2 - 2 m / rate + m^2; the entropy of p is 1 - log rate.
    second = 2 * p.rate.pow(-2) - 2 * q.loc / p.rate + q.loc.pow(2)
    return p.rate.log() - 1 + _normal_cross_entropy(second, q)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    a = p.concentration
    product = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    return (
        (a - 1) * numdiff.digamma(a)
        - numdiff.lgamma(a)
        - a
        + product.log()
        + a / product
        + loc_ratio.exp() * (1 + product.reciprocal()).pow(-a)
        - loc_ratio
    )


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    a, b = p.concentration, p.rate
    second = (a.pow(2) + a) / b.pow(2) - 2 * q.loc * a / b + q.loc.pow(2)
    return -p.entropy() + _normal_cross_entropy(second, q)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    ratio = p.scale / q.scale
    mean_shift = (p.loc + p.scale * EULER_GAMMA - q.loc) / q.scale
    return (
        -(ratio / math.sqrt(2 * math.pi)).log()
        + (math.pi * ratio * 0.5).pow(2) / 3
        + 0.5 * mean_shift.pow(2)
        - (EULER_GAMMA + 1)
    )


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    # E_p[(x - m)^2] = 2 b^2 + (mu - m)^2; the entropy of p is 1 + log(2 b).
    second = 2 * p.scale.pow(2) + (p.loc - q.loc).pow(2)
    return -(1 + (2 * p.scale).log()) + _normal_cross_entropy(second, q)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Normal) -> Tensor:
    mean_ratio = p.loc / q.scale
    variance_ratio = (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    return (
        -0.5 * variance_ratio.log()
        + mean_ratio
        - loc_ratio
        + (-mean_ratio + 0.5 * variance_ratio + loc_ratio).exp()
        - (0.5 + _HALF_LOG_TWO_PI)
    )


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E_p|x - m| for x ~ Normal(mu, s): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt 2)).
    shift = p.loc - q.loc
    standardised = shift / p.scale
    mean_distance = math.sqrt(2 / math.pi) * p.scale * (
        -0.5 * standardised.pow(2)
    ).exp() + shift * numdiff.erf(math.sqrt(0.5) * standardised)
    return -(p.scale / q.scale).log() + mean_distance / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    width = p.high - p.low
    # E_p[log x] and E_p[log(1 - x)] over [low, high], times (a - 1) and (b - 1).
    log_x = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    log_one_minus_x = -(_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    log_beta_function = (
        numdiff.lgamma(q.concentration1) + numdiff.lgamma(q.concentration0)
        - numdiff.lgamma(q.concentration1 + q.concentration0)
    )  # fmt: skip
    result = (
        -width.log()
        - (q.concentration1 - 1) * log_x
        - (q.concentration0 - 1) * log_one_minus_x
        + log_beta_function
    )
    return _infinite_where((p.high > 1) | (p.low < 0), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _infinite_where(p.low < 0, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    width = p.high - p.low
    log_x = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    result = (
        -width.log()
        + numdiff.lgamma(q.concentration)
        - q.concentration * q.rate.log()
        + (1 - q.concentration) * log_x
        + q.rate * (p.high + p.low) / 2
    )
    return _infinite_where(p.low < 0, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    ratio = q.scale / (p.high - p.low)
    high = (p.high - q.loc) / q.scale
    low = (p.low - q.loc) / q.scale
    return ratio.log() + 0.5 * (high + low) - ratio * ((-high).exp() - (-low).exp())


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    second = width.pow(2) / 12 + ((p.high + p.low) / 2 - q.loc).pow(2)
    return -width.log() + _normal_cross_entropy(second, q)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    # log q(k) = k log rate - rate - log k!, and log k! = 0 for k in {0, 1}.
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


# A Poisson reaches counts a Bernoulli or Binomial cannot.
register_kl(Poisson, Bernoulli)(_infinite("rate"))
register_kl(Poisson, Binomial)(_infinite("rate"))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    product = p.scale * q.rate
    result = (p.alpha / product).log() - p.alpha.reciprocal() + p.alpha * product / (p.alpha - 1) - 1
    return _infinite_where(p.alpha <= 1, result)  # p's mean is infinite


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    expected_log = p.scale.log() + p.alpha.reciprocal()  # E_p[log x]
    result = (
        p.alpha.log()
        - expected_log
        + numdiff.lgamma(q.concentration)
        - q.concentration * q.rate.log()
        + (1 - q.concentration) * expected_log
        + q.rate * p.alpha * p.scale / (p.alpha - 1)
        - 1
    )
    return _infinite_where(p.alpha <= 1, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    spread = p.scale / (p.alpha - 1)
    result = (
        (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
        - p.alpha.reciprocal()
        + (p.alpha * spread.pow(2) / (p.alpha - 2) + (p.alpha * spread - q.loc).pow(2)) / (2 * q.scale.pow(2))
        - 1
    )
    return _infinite_where(p.alpha <= 2, result)  # p's variance is infinite


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    width = p.high - p.low
    log_x = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    result = log_x * (q.alpha + 1) - (q.alpha * q.scale.pow(q.alpha) * width).log()
    return _infinite_where(p.low < q.scale, result)


def _cross_entropy_to_continuous_bernoulli(mean: Tensor, q: ContinuousBernoulli) -> Tensor:
    """-E_p[log q(x)] for p with mean `mean` on [0, 1]: log q(x) = x logit + log(1 - p) + log C."""
    return -mean * q.logits - (-q.probs).log1p() - q._log_normaliser()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    return (
        p.mean * (p.logits - q.logits)
        + p._log_normaliser()
        + (-p.probs).log1p()
        - q._log_normaliser()
        - (-q.probs).log1p()
    )


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() + _cross_entropy_to_continuous_bernoulli(p.mean, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    # Infinite only where p reaches outside [0, 1] (PyTorch's test also counts a Uniform that
    # touches 0 or 1, where the divergence is finite).
    result = -p.entropy() + _cross_entropy_to_continuous_bernoulli(p.mean, q)
    return _infinite_where((p.high > 1) | (p.low < 0), result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    second = p.variance + p.mean.pow(2) - 2 * q.loc * p.mean + q.loc.pow(2)
    return -p.entropy() + _normal_cross_entropy(second, q)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    # Infinite where q misses part of [0, 1] (PyTorch's test also counts a q that covers it exactly).
    result = -p.entropy() + (q.high - q.low).log()
    return _infinite_where((q.low > 0) | (q.high < 1), result)


# Supports reaching outside [0, 1] against a ContinuousBernoulli, and [0, 1] against a Pareto.
for _p, _param in [(Exponential, "rate"), (Gamma, "concentration"), (Gumbel, "loc"), (Laplace, "loc"),
                   (Normal, "loc"), (Pareto, "scale")]:  # fmt: skip
    register_kl(_p, ContinuousBernoulli)(_infinite(_param))
register_kl(ContinuousBernoulli, Pareto)(_infinite("probs"))
