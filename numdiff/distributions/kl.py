"""kl_divergence(p, q) = E_p[log p - log q], in closed form for registered pairs of types.

Lookup picks the most specific registered (type_p, type_q) by subclass distance; when ranking by
p first and by q first disagree, the first wins and a RuntimeWarning names the pair to register.
Infinite divergences (q puts zero mass where p does not) are written with `where`, so their
gradient is zero, as PyTorch's masked assignment gives.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numdiff
from numdiff.distributions.continuous import Exponential, Laplace, Normal, Uniform
from numdiff.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from numdiff.distributions.distribution import Distribution, sum_rightmost
from numdiff.distributions.independent import Independent
from numdiff.distributions.multivariate import MultivariateNormal
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.tensor import Tensor

KLFunction = Callable[[Distribution, Distribution], Tensor]
_KL_REGISTRY: dict[tuple[type, type], KLFunction] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[KLFunction], KLFunction]:
    """Decorator registering `fun(p, q)` as the KL divergence between instances of the two types.

    >>> @register_kl(Normal, Laplace)
    ... def kl_normal_laplace(p, q): ...
    """
    for name, kind in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(kind, type) and issubclass(kind, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {kind!r}")

    def decorator(fun: KLFunction) -> KLFunction:
        _KL_REGISTRY[type_p, type_q] = fun
        return fun

    return decorator


def _distance(kind: type, ancestor: type) -> int:
    return kind.__mro__.index(ancestor)


def _lookup(type_p: type, type_q: type) -> KLFunction | None:
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return None
    by_p = min(matches, key=lambda m: (_distance(type_p, m[0]), _distance(type_q, m[1])))
    by_q = min(matches, key=lambda m: (_distance(type_q, m[1]), _distance(type_p, m[0])))
    if _KL_REGISTRY[by_p] is not _KL_REGISTRY[by_q]:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({by_p[0].__name__}, {by_q[1].__name__})",
            RuntimeWarning,
            stacklevel=3,
        )
    return _KL_REGISTRY[by_p]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), one value per batch entry.

    >>> Normal = numdiff.distributions.Normal
    >>> numdiff.distributions.kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
    tensor(0.5000)
    """
    fun = _lookup(type(p), type(q))
    if fun is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p={type(p).__name__}, q={type(q).__name__}; "
            "register one with numdiff.distributions.register_kl"
        )
    return fun(p, q)


def _infinite_where(condition: Tensor, value: Tensor) -> Tensor:
    return numdiff.where(condition, math.inf, value)


def _zero_where(condition: Tensor, value: Tensor) -> Tensor:
    return numdiff.where(condition, 0.0, value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    variance_ratio = (p.scale / q.scale).pow(2)
    mean_term = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (variance_ratio + mean_term - 1 - variance_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    terms = p.probs * (p.logits - q.logits)
    terms = _infinite_where((q.probs == 0).expand_as(terms), terms)
    terms = _zero_where((p.probs == 0).expand_as(terms), terms)
    return terms.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    # log p - log q for each outcome, through softplus so extreme logits stay finite.
    ones = p.probs * (functional.softplus(-q.logits) - functional.softplus(-p.logits))
    ones = _zero_where(p.probs == 0, _infinite_where(q.probs == 0, ones))
    zeros = (1 - p.probs) * (functional.softplus(q.logits) - functional.softplus(p.logits))
    zeros = _zero_where(p.probs == 1, _infinite_where(q.probs == 1, zeros))
    return ones + zeros


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _infinite_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return rate_ratio - rate_ratio.log() - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_distance = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_distance / q.scale + scale_ratio * (-loc_distance / p.scale).exp() - 1


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(
            "kl_divergence between Independent distributions needs equal reinterpreted_batch_ndims, "
            f"got {p.reinterpreted_batch_ndims} and {q.reinterpreted_batch_ndims}"
        )
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    # log|Sq|/2 - log|Sp|/2 + (tr(Sq^-1 Sp) + |Lq^-1 (mu_q - mu_p)|^2 - d) / 2, with Sq^-1 Sp's trace
    # the squared Frobenius norm of Lq^-1 Lp.
    if p.event_shape != q.event_shape:
        raise ValueError(
            "kl_divergence(MultivariateNormal, MultivariateNormal): the event shapes differ, "
            f"{tuple(p.event_shape)} and {tuple(q.event_shape)}"
        )
    batch = tuple(numdiff.broadcast_shapes(p.batch_shape, q.batch_shape))
    d = p.event_shape[0]
    q_tril = q._unbroadcasted_scale_tril.expand(batch + (d, d))
    p_tril = p._unbroadcasted_scale_tril.expand(batch + (d, d))
    shift = (q.loc - p.loc).expand(batch + (d,)).unsqueeze(-1)
    half_log_ratio = q._half_log_det() - p._half_log_det()
    trace = numdiff.linalg.solve_triangular(q_tril, p_tril, upper=False).pow(2).sum((-2, -1))
    mahalanobis = numdiff.linalg.solve_triangular(q_tril, shift, upper=False).pow(2).sum((-2, -1))
    return half_log_ratio + 0.5 * (trace + mahalanobis - d)
