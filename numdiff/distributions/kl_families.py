"""kl_divergence between two members of the same family, for the families beyond kl.py's:
Gamma (and Chi2), Beta, Dirichlet, Cauchy, Gumbel, HalfNormal, Pareto, Poisson, Geometric, Binomial,
and two TransformedDistributions that share their transforms (LogNormal, HalfCauchy and Weibull
among them: KL is unchanged by a common bijection). Registered on import (numdiff.distributions
imports this module).
"""

from __future__ import annotations

import math

import numdiff
from numdiff.distributions.beta import Beta, Dirichlet
from numdiff.distributions.counting import Binomial, Geometric, Poisson
from numdiff.distributions.gamma import Gamma
from numdiff.distributions.heavy_tails import Pareto
from numdiff.distributions.kl import kl_divergence, register_kl
from numdiff.distributions.normal_relatives import Cauchy, Gumbel, HalfNormal
from numdiff.distributions.transformed import TransformedDistribution
from numdiff.tensor import Tensor

EULER_GAMMA = 0.5772156649015329


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    # E_p[log p - log q] with E_p[log x] = digamma(a_p) - log b_p and E_p[x] = a_p / b_p.
    a_p, b_p, a_q, b_q = p.concentration, p.rate, q.concentration, q.rate
    return (
        a_q * (b_p / b_q).log()
        + numdiff.lgamma(a_q)
        - numdiff.lgamma(a_p)
        + (a_p - a_q) * numdiff.digamma(a_p)
        + (b_q - b_p) * (a_p / b_p)
    )


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    a_p, b_p, a_q, b_q = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    total_p, total_q = a_p + b_p, a_q + b_q
    log_norms = (
        numdiff.lgamma(a_q) + numdiff.lgamma(b_q) + numdiff.lgamma(total_p)
        - numdiff.lgamma(a_p) - numdiff.lgamma(b_p) - numdiff.lgamma(total_q)
    )  # fmt: skip
    return (
        log_norms
        + (a_p - a_q) * numdiff.digamma(a_p)
        + (b_p - b_q) * numdiff.digamma(b_p)
        + (total_q - total_p) * numdiff.digamma(total_p)
    )


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    # E_p[log x_i] = digamma(a_i) - digamma(sum a).
    a_p, a_q = p.concentration, q.concentration
    total_p, total_q = a_p.sum(-1), a_q.sum(-1)
    expected_log = numdiff.digamma(a_p) - numdiff.digamma(total_p).unsqueeze(-1)
    return (
        numdiff.lgamma(total_p)
        - numdiff.lgamma(total_q)
        - (numdiff.lgamma(a_p) - numdiff.lgamma(a_q)).sum(-1)
        + ((a_p - a_q) * expected_log).sum(-1)
    )


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    # Chyzak and Nielsen's closed form, symmetric in p and q.
    spread = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (spread / (4 * p.scale * q.scale)).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    scale_ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return (
        -scale_ratio.log()
        + shift
        + scale_ratio * EULER_GAMMA
        + (numdiff.lgamma(1 + scale_ratio) - shift).exp()
        - (1 + EULER_GAMMA)
    )


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    variance_ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (variance_ratio - 1 - variance_ratio.log())


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return numdiff.where(p.scale < q.scale, math.inf, result)  # p reaches below q's minimum


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms:
        raise NotImplementedError(
            "kl_divergence between TransformedDistributions needs the same transforms, "
            f"got {p.transforms} and {q.transforms}"
        )
    if p.event_shape != q.event_shape:
        raise NotImplementedError(
            "kl_divergence between TransformedDistributions needs equal event shapes, "
            f"got {tuple(p.event_shape)} and {tuple(q.event_shape)}"
        )
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    # E_p[log q(k)] = E_p[k] log(1 - q) + log q, with E_p[k] = (1 - p) / p.
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    # q cannot reach counts above its total_count, which p can.
    return numdiff.where(p.total_count > q.total_count, math.inf, kl)
