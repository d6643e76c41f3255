"""The distribution cases every test in this folder walks: one builder written against a library
module (numdiff or torch), so the same construction runs on both, and float64 parameters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_rng = np.random.default_rng(7)


def _positive(*shape: int) -> np.ndarray:
    return _rng.uniform(0.5, 2.0, shape)


def _real(*shape: int) -> np.ndarray:
    return _rng.normal(size=shape)


def _unit(*shape: int) -> np.ndarray:
    return _rng.uniform(0.1, 0.9, shape)


@dataclass
class Case:
    """`build(lib, *params)` makes the distribution from `params` (tensors of `lib`, or numbers
    where `numbers` names their positions)."""

    name: str
    build: Callable[..., Any]
    params: list[Any]
    numbers: tuple[int, ...] = field(default=())
    continuous: bool = True
    # rsample draws on the host and differentiates the draw implicitly (the gamma family): a
    # redraw at perturbed parameters is not the same quantile, so central differences of the
    # draw do not measure its gradient (tests/distributions/test_gamma_family.py does).
    implicit_rsample: bool = False


def _normal(lib: Any, loc: Any, scale: Any) -> Any:
    return lib.distributions.Normal(loc, scale)


def _uniform(lib: Any, low: Any, width: Any) -> Any:
    return lib.distributions.Uniform(low, low + width)


def _exponential(lib: Any, rate: Any) -> Any:
    return lib.distributions.Exponential(rate)


def _laplace(lib: Any, loc: Any, scale: Any) -> Any:
    return lib.distributions.Laplace(loc, scale)


def _categorical_probs(lib: Any, probs: Any) -> Any:
    return lib.distributions.Categorical(probs=probs)


def _categorical_logits(lib: Any, logits: Any) -> Any:
    return lib.distributions.Categorical(logits=logits)


def _one_hot(lib: Any, probs: Any) -> Any:
    return lib.distributions.OneHotCategorical(probs=probs)


def _one_hot_logits(lib: Any, logits: Any) -> Any:
    return lib.distributions.OneHotCategorical(logits=logits)


def _bernoulli_probs(lib: Any, probs: Any) -> Any:
    return lib.distributions.Bernoulli(probs=probs)


def _bernoulli_logits(lib: Any, logits: Any) -> Any:
    return lib.distributions.Bernoulli(logits=logits)


def _independent_normal(lib: Any, loc: Any, scale: Any) -> Any:
    return lib.distributions.Independent(lib.distributions.Normal(loc, scale), 1)


def _independent_bernoulli(lib: Any, logits: Any) -> Any:
    return lib.distributions.Independent(lib.distributions.Bernoulli(logits=logits), 2)


CASES = [
    Case("normal-vector", _normal, [_real(3), _positive(3)]),
    Case("normal-broadcast", _normal, [_real(2, 3), _positive(3)]),
    Case("normal-number-loc", _normal, [0.5, _positive(2, 2)], numbers=(0,)),
    Case("normal-numbers", _normal, [0.5, 1.5], numbers=(0, 1)),
    Case("uniform", _uniform, [_real(4), _positive(4)]),
    Case("uniform-broadcast", _uniform, [_real(2, 1), _positive(3)]),
    Case("exponential", _exponential, [_positive(2, 3)]),
    Case("laplace", _laplace, [_real(2, 1), _positive(3)]),
    Case("categorical-probs-1d", _categorical_probs, [_positive(5)], continuous=False),
    Case("categorical-probs-2d", _categorical_probs, [_positive(2, 4)], continuous=False),
    Case("categorical-logits-3d", _categorical_logits, [_real(2, 3, 4)], continuous=False),
    Case("one-hot-probs", _one_hot, [_positive(2, 3)], continuous=False),
    Case("one-hot-logits", _one_hot_logits, [_real(3)], continuous=False),
    Case("bernoulli-probs", _bernoulli_probs, [_unit(4)], continuous=False),
    Case("bernoulli-logits", _bernoulli_logits, [_real(2, 3)], continuous=False),
    Case("independent-normal", _independent_normal, [_real(2, 3), _positive(2, 3)]),
    Case("independent-bernoulli", _independent_bernoulli, [_real(2, 2, 3)], continuous=False),
]

# Pairs (p params, q params) for kl_divergence of two distributions built by the same builder.
KL_CASES = [
    Case("normal", _normal, [_real(3), _positive(3), _real(2, 3), _positive(3)]),
    Case("uniform", _uniform, [_real(3), _positive(3), _real(3) - 3.0, _positive(3) + 6.0]),
    Case("exponential", _exponential, [_positive(4), _positive(4)]),
    Case("laplace", _laplace, [_real(2, 3), _positive(3), _real(3), _positive(2, 3)]),
    Case("categorical", _categorical_probs, [_positive(2, 4), _positive(4)], continuous=False),
    Case("categorical-logits", _categorical_logits, [_real(3, 5), _real(3, 5)], continuous=False),
    Case("one-hot", _one_hot, [_positive(2, 3), _positive(2, 3)], continuous=False),
    Case("bernoulli", _bernoulli_probs, [_unit(2, 3), _unit(2, 3)], continuous=False),
    Case("bernoulli-logits", _bernoulli_logits, [_real(4), _real(4)], continuous=False),
    Case("independent-normal", _independent_normal, [_real(2, 3), _positive(2, 3), _real(3), _positive(3)]),
]


# Families without a closed-form entropy (nor one in torch).
NO_ENTROPY = ("poisson", "negative-binomial", "relaxed", "logistic-normal", "fisher-snedecor", "lkj-cholesky")


def tensors(lib: Any, case: Case, requires_grad: bool = False) -> list[Any]:
    """The case's parameters as float64 tensors of `lib` (numbers stay numbers)."""
    out = []
    for i, value in enumerate(case.params):
        if i in case.numbers:
            out.append(value)
        else:
            out.append(lib.tensor(np.asarray(value, dtype=np.float64), requires_grad=requires_grad))
    return out


def split_kl(case: Case) -> tuple[Case, Case]:
    half = len(case.params) // 2
    return (
        Case(case.name + "-p", case.build, case.params[:half]),
        Case(case.name + "-q", case.build, case.params[half:]),
    )


def _cauchy(lib: Any, loc: Any, scale: Any) -> Any:
    return lib.distributions.Cauchy(loc, scale)


def _gumbel(lib: Any, loc: Any, scale: Any) -> Any:
    return lib.distributions.Gumbel(loc, scale)


def _half_normal(lib: Any, scale: Any) -> Any:
    return lib.distributions.HalfNormal(scale)


def _log_normal(lib: Any, loc: Any, scale: Any) -> Any:
    return lib.distributions.LogNormal(loc, scale)


# Drawn after the lists above, so their parameters stay what they were.
CASES += [
    Case("cauchy", _cauchy, [_real(2, 1), _positive(3)]),
    Case("gumbel", _gumbel, [_real(3), _positive(2, 3)]),
    Case("halfnormal", _half_normal, [_positive(2, 3)]),
    Case("lognormal", _log_normal, [_real(2, 3), _positive(3)]),
    Case("lognormal-number-loc", _log_normal, [0.2, _positive(3)], numbers=(0,)),
]


def _gamma(lib: Any, concentration: Any, rate: Any) -> Any:
    return lib.distributions.Gamma(concentration, rate)


def _chi2(lib: Any, df: Any) -> Any:
    return lib.distributions.Chi2(df)


def _student_t(lib: Any, df: Any, loc: Any, scale: Any) -> Any:
    return lib.distributions.StudentT(df, loc, scale)


def _beta(lib: Any, concentration1: Any, concentration0: Any) -> Any:
    return lib.distributions.Beta(concentration1, concentration0)


def _dirichlet(lib: Any, concentration: Any) -> Any:
    return lib.distributions.Dirichlet(concentration)


# Drawn after the lists above, so their parameters stay what they were.
CASES += [
    Case("gamma", _gamma, [_positive(2, 3) * 2, _positive(3)], implicit_rsample=True),
    Case("gamma-small-shape", _gamma, [_positive(4) * 0.2, _positive(4)], implicit_rsample=True),
    Case("gamma-number-rate", _gamma, [_positive(3), 2.5], numbers=(1,), implicit_rsample=True),
    Case("chi2", _chi2, [_positive(2, 3) * 3], implicit_rsample=True),
    Case("studentt", _student_t, [_positive(3) * 3, _real(2, 3), _positive(3)], implicit_rsample=True),
    Case("studentt-heavy", _student_t, [_positive(4) * 0.9, _real(4), _positive(4)], implicit_rsample=True),
    Case("beta", _beta, [_positive(2, 3), _positive(3)], implicit_rsample=True),
    Case("beta-numbers", _beta, [0.7, 2.5], numbers=(0, 1), implicit_rsample=True),
    Case("dirichlet", _dirichlet, [_positive(2, 4)], implicit_rsample=True),
    Case("dirichlet-below-one", _dirichlet, [_positive(3, 3) * 0.4], implicit_rsample=True),
]


def _poisson(lib: Any, rate: Any) -> Any:
    return lib.distributions.Poisson(rate)


def _geometric_probs(lib: Any, probs: Any) -> Any:
    return lib.distributions.Geometric(probs=probs)


def _geometric_logits(lib: Any, logits: Any) -> Any:
    return lib.distributions.Geometric(logits=logits)


def _binomial_probs(lib: Any, total_count: Any, probs: Any) -> Any:
    return lib.distributions.Binomial(total_count, probs=probs)


def _binomial_logits(lib: Any, total_count: Any, logits: Any) -> Any:
    return lib.distributions.Binomial(total_count, logits=logits)


def _negative_binomial_probs(lib: Any, total_count: Any, probs: Any) -> Any:
    return lib.distributions.NegativeBinomial(total_count, probs=probs)


def _negative_binomial_logits(lib: Any, total_count: Any, logits: Any) -> Any:
    return lib.distributions.NegativeBinomial(total_count, logits=logits)


def _multinomial_probs(lib: Any, total_count: Any, probs: Any) -> Any:
    return lib.distributions.Multinomial(total_count, probs=probs)


def _multinomial_logits(lib: Any, total_count: Any, logits: Any) -> Any:
    return lib.distributions.Multinomial(total_count, logits=logits)


CASES += [
    Case("poisson", _poisson, [_positive(2, 3) * 3], continuous=False),
    Case("poisson-number", _poisson, [4.5], numbers=(0,), continuous=False),
    Case("geometric-probs", _geometric_probs, [_unit(2, 3)], continuous=False),
    Case("geometric-logits", _geometric_logits, [_real(4)], continuous=False),
    Case("binomial-probs", _binomial_probs, [7, _unit(2, 3)], numbers=(0,), continuous=False),
    Case("binomial-logits", _binomial_logits, [5, _real(4)], numbers=(0,), continuous=False),
    Case(
        "negative-binomial-probs", _negative_binomial_probs, [_positive(3) * 2, _unit(2, 3)], continuous=False
    ),
    Case(
        "negative-binomial-logits", _negative_binomial_logits, [_positive(4) * 2, _real(4)], continuous=False
    ),
    Case("multinomial-probs", _multinomial_probs, [6, _positive(2, 3)], numbers=(0,), continuous=False),
    Case("multinomial-logits", _multinomial_logits, [4, _real(4)], numbers=(0,), continuous=False),
]


def _half_cauchy(lib: Any, scale: Any) -> Any:
    return lib.distributions.HalfCauchy(scale)


def _pareto(lib: Any, scale: Any, alpha: Any) -> Any:
    return lib.distributions.Pareto(scale, alpha)


def _weibull(lib: Any, scale: Any, concentration: Any) -> Any:
    return lib.distributions.Weibull(scale, concentration)


CASES += [
    Case("halfcauchy", _half_cauchy, [_positive(2, 3)]),
    Case("pareto", _pareto, [_positive(2, 3), _positive(3) * 2]),
    Case("pareto-heavy", _pareto, [_positive(3), _positive(3) * 0.5]),
    Case("weibull", _weibull, [_positive(3), _positive(2, 3) * 2]),
    Case("weibull-numbers", _weibull, [1.5, 0.7], numbers=(0, 1)),
]


def _relaxed_bernoulli_probs(lib: Any, temperature: Any, probs: Any) -> Any:
    return lib.distributions.RelaxedBernoulli(temperature, probs=probs)


def _relaxed_bernoulli_logits(lib: Any, temperature: Any, logits: Any) -> Any:
    return lib.distributions.RelaxedBernoulli(temperature, logits=logits)


def _relaxed_one_hot_probs(lib: Any, temperature: Any, probs: Any) -> Any:
    return lib.distributions.RelaxedOneHotCategorical(temperature, probs=probs)


def _relaxed_one_hot_logits(lib: Any, temperature: Any, logits: Any) -> Any:
    return lib.distributions.RelaxedOneHotCategorical(temperature, logits=logits)


CASES += [
    Case("relaxed-bernoulli-probs", _relaxed_bernoulli_probs, [_positive(), _unit(2, 3)]),
    Case("relaxed-bernoulli-logits", _relaxed_bernoulli_logits, [_positive(3), _real(2, 3)]),
    Case("relaxed-one-hot-probs", _relaxed_one_hot_probs, [_positive(), _positive(2, 4)]),
    Case("relaxed-one-hot-logits", _relaxed_one_hot_logits, [_positive(1), _real(2, 3)]),
]


def _continuous_bernoulli_probs(lib: Any, probs: Any) -> Any:
    return lib.distributions.ContinuousBernoulli(probs=probs)


def _continuous_bernoulli_logits(lib: Any, logits: Any) -> Any:
    return lib.distributions.ContinuousBernoulli(logits=logits)


CASES += [
    # 0.4995 and 0.5008 lie inside the Taylor region (0.499, 0.501].
    Case(
        "continuous-bernoulli-probs",
        _continuous_bernoulli_probs,
        [np.array([[0.2, 0.4995, 0.93], [0.5008, 0.6, 0.05]])],
    ),
    Case("continuous-bernoulli-logits", _continuous_bernoulli_logits, [_real(4) * 2]),
]


def _kumaraswamy(lib: Any, concentration1: Any, concentration0: Any) -> Any:
    return lib.distributions.Kumaraswamy(concentration1, concentration0)


def _logistic_normal(lib: Any, loc: Any, scale: Any) -> Any:
    return lib.distributions.LogisticNormal(loc, scale)


def _fisher_snedecor(lib: Any, df1: Any, df2: Any) -> Any:
    return lib.distributions.FisherSnedecor(df1, df2)


def _inverse_gamma(lib: Any, concentration: Any, rate: Any) -> Any:
    return lib.distributions.InverseGamma(concentration, rate)


def _lkj_cholesky(lib: Any, concentration: Any) -> Any:
    return lib.distributions.LKJCholesky(3, concentration)


def _wishart(lib: Any, df: Any, root: Any) -> Any:
    # root root^T + I: a positive definite covariance that every entry of root reaches.
    eye = lib.eye(root.shape[-1], dtype=root.dtype) if hasattr(root, "shape") else None
    return lib.distributions.Wishart(df, covariance_matrix=root @ root.mT + eye)


def _wishart_tril(lib: Any, df: Any, root: Any) -> Any:
    eye = lib.eye(root.shape[-1], dtype=root.dtype)
    return lib.distributions.Wishart(df, scale_tril=root.tril(-1) + eye * 1.5)


CASES += [
    Case("kumaraswamy", _kumaraswamy, [_positive(2, 3) * 2, _positive(3) * 2]),
    Case("kumaraswamy-numbers", _kumaraswamy, [0.7, 3.0], numbers=(0, 1)),
    Case("logistic-normal", _logistic_normal, [_real(2, 3), _positive(3)]),
    Case("logistic-normal-numbers", _logistic_normal, [0.3, 1.5], numbers=(0, 1)),
    Case("fisher-snedecor", _fisher_snedecor, [_positive(2, 3) * 3, _positive(3) * 6], implicit_rsample=True),
    Case("fisher-snedecor-numbers", _fisher_snedecor, [3.0, 7.0], numbers=(0, 1), implicit_rsample=True),
    Case("inverse-gamma", _inverse_gamma, [_positive(2, 3) * 2, _positive(3)], implicit_rsample=True),
    Case("inverse-gamma-heavy", _inverse_gamma, [_positive(3) * 0.8, 2.0], numbers=(1,), implicit_rsample=True),
    Case("lkj-cholesky", _lkj_cholesky, [_positive(2) * 2]),
    Case("wishart", _wishart, [_positive(2) + 4.0, _real(2, 3, 3)], implicit_rsample=True),
    Case("wishart-scale-tril", _wishart_tril, [7.5, _real(3, 3)], numbers=(0,), implicit_rsample=True),
]
