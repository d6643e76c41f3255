"""validate_args: bad parameters and out-of-support values raise ValueError naming the parameter
or value, with the message torch.distributions gives (first line, "torch." read as "numdiff.");
validate_args=False and set_default_validate_args turn the checks off."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.distributions import Laplace, Normal

torch = pytest.importorskip("torch")

BAD = [
    ("normal-negative-scale", lambda lib: lib.distributions.Normal(0.0, -1.0)),
    ("normal-zero-scale-tensor", lambda lib: lib.distributions.Normal(lib.zeros(2), lib.tensor([1.0, 0.0]))),
    ("normal-nan-loc", lambda lib: lib.distributions.Normal(lib.tensor([float("nan")]), 1.0)),
    ("laplace-negative-scale", lambda lib: lib.distributions.Laplace(0.0, -2.0)),
    ("exponential-zero-rate", lambda lib: lib.distributions.Exponential(lib.tensor([1.0, 0.0]))),
    ("categorical-negative-probs", lambda lib: lib.distributions.Categorical(probs=lib.tensor([-0.5, 1.0]))),
    (
        "categorical-nan-logits",
        lambda lib: lib.distributions.Categorical(logits=lib.tensor([0.0, float("nan")])),
    ),
    ("categorical-scalar-probs", lambda lib: lib.distributions.Categorical(probs=lib.tensor(0.5))),
    ("categorical-no-parameter", lambda lib: lib.distributions.Categorical()),
    ("categorical-both-parameters", lambda lib: lib.distributions.Categorical(lib.ones(2), lib.ones(2))),
    ("bernoulli-probs-above-one", lambda lib: lib.distributions.Bernoulli(probs=lib.tensor([0.5, 1.5]))),
    ("bernoulli-no-parameter", lambda lib: lib.distributions.Bernoulli()),
    (
        "one-hot-negative-probs",
        lambda lib: lib.distributions.OneHotCategorical(probs=lib.tensor([-1.0, 2.0])),
    ),
    (
        "categorical-value-out-of-range",
        lambda lib: lib.distributions.Categorical(logits=lib.zeros(3)).log_prob(lib.tensor(3)),
    ),
    (
        "categorical-value-negative",
        lambda lib: lib.distributions.Categorical(logits=lib.zeros(3)).log_prob(lib.tensor([-1])),
    ),
    ("bernoulli-value-half", lambda lib: lib.distributions.Bernoulli(0.3).log_prob(lib.tensor(0.5))),
    ("exponential-negative-value", lambda lib: lib.distributions.Exponential(1.0).log_prob(lib.tensor(-1.0))),
    ("uniform-value-above-high", lambda lib: lib.distributions.Uniform(0.0, 1.0).log_prob(lib.tensor(2.0))),
    # low >= high was accepted (the docstring said PyTorch does not check it; 2.13 does).
    ("uniform-low-above-high", lambda lib: lib.distributions.Uniform(lib.tensor([0.0, 2.0]), lib.tensor([1.0, 1.0]))),
    ("uniform-low-equal-to-high", lambda lib: lib.distributions.Uniform(lib.tensor(1.0), lib.tensor(1.0))),
    (
        "one-hot-value-not-one-hot",
        lambda lib: lib.distributions.OneHotCategorical(logits=lib.zeros(2)).log_prob(lib.ones(2)),
    ),
    ("value-not-a-tensor", lambda lib: lib.distributions.Normal(0.0, 1.0).log_prob(0.5)),
    (
        "value-not-broadcastable",
        lambda lib: lib.distributions.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2)),
    ),
    (
        "value-wrong-event-size",
        lambda lib: lib.distributions.OneHotCategorical(logits=lib.zeros(3)).log_prob(lib.zeros(2)),
    ),
    ("cauchy-zero-scale", lambda lib: lib.distributions.Cauchy(lib.tensor([0.0]), lib.tensor([0.0]))),
    ("gumbel-negative-scale", lambda lib: lib.distributions.Gumbel(0.0, lib.tensor([1.0, -1.0]))),
    (
        "multivariate-normal-not-positive-definite",
        lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])),
    ),
    (
        "multivariate-normal-scale-tril-not-lower",
        lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), scale_tril=lib.tensor([[1.0, 1.0], [0.0, 1.0]])),
    ),
    # HalfCauchy's scale lives on its base Cauchy: checked through the property (it was skipped).
    ("halfcauchy-negative-scale", lambda lib: lib.distributions.HalfCauchy(lib.tensor([1.0, -1.0]))),
    ("halfcauchy-negative-value", lambda lib: lib.distributions.HalfCauchy(1.0).log_prob(lib.tensor(-1.0))),
    ("pareto-zero-alpha", lambda lib: lib.distributions.Pareto(1.0, lib.tensor([0.0]))),
    ("pareto-negative-scale", lambda lib: lib.distributions.Pareto(lib.tensor([-1.0]), 2.0)),
    ("pareto-value-below-scale", lambda lib: lib.distributions.Pareto(2.0, 3.0).log_prob(lib.tensor(1.0))),
    ("weibull-negative-concentration", lambda lib: lib.distributions.Weibull(1.0, lib.tensor([-0.5]))),
    ("weibull-negative-scale", lambda lib: lib.distributions.Weibull(lib.tensor([-1.0]), 1.0)),
    (
        "independent-too-many-dims",
        lambda lib: lib.distributions.Independent(lib.distributions.Normal(0.0, 1.0), 1),
    ),
]


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0].replace("torch.", "numdiff.")


@pytest.mark.parametrize("make", [m for _, m in BAD], ids=[n for n, _ in BAD])
def test_bad_input_raises_value_error_like_torch(make) -> None:
    with pytest.raises(ValueError) as theirs:
        make(torch)
    with pytest.raises(ValueError) as ours:
        make(numdiff)
    assert _first_line(ours.value) == _first_line(theirs.value)


def test_parameter_errors_name_the_parameter_and_show_its_values() -> None:
    with pytest.raises(
        ValueError, match=r"Expected parameter scale .*GreaterThan\(lower_bound=0.0\)"
    ) as info:
        numdiff.distributions.Normal(numdiff.zeros(2), numdiff.tensor([1.0, -3.0]))
    assert "-3." in str(info.value)
    with pytest.raises(ValueError, match=r"Expected parameter probs .*Simplex\(\)"):
        numdiff.distributions.Categorical(probs=numdiff.tensor([[0.2, 0.8], [-0.1, 1.1]]))


def test_validate_args_false_skips_the_checks() -> None:
    d = numdiff.distributions.Normal(0.0, -1.0, validate_args=False)
    assert d.scale.item() == -1.0
    c = numdiff.distributions.Categorical(logits=numdiff.zeros(3), validate_args=False)
    assert c.log_prob(numdiff.tensor([0, 2])).shape == (2,)
    assert numdiff.distributions.Bernoulli(0.3, validate_args=False).log_prob(numdiff.tensor(0.5)).shape == ()


def test_set_default_validate_args_turns_validation_off_everywhere() -> None:
    numdiff.distributions.Distribution.set_default_validate_args(False)
    try:
        numdiff.distributions.Exponential(-1.0)
        numdiff.distributions.Bernoulli(0.3).log_prob(numdiff.tensor(0.5))
    finally:
        numdiff.distributions.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="rate"):
        numdiff.distributions.Exponential(-1.0)
    with pytest.raises(ValueError, match="True or False"):
        numdiff.distributions.Distribution.set_default_validate_args(None)


def test_kl_divergence_of_an_unregistered_pair_raises_not_implemented() -> None:
    with pytest.raises(NotImplementedError, match="Normal.*Categorical"):
        numdiff.distributions.kl_divergence(
            numdiff.distributions.Normal(0.0, 1.0), numdiff.distributions.Categorical(logits=numdiff.zeros(2))
        )


def test_register_kl_adds_a_pair_and_subclasses_dispatch_to_the_most_specific() -> None:
    class WideNormal(Normal):
        pass

    @numdiff.distributions.register_kl(Normal, Laplace)
    def normal_laplace(p, q):
        return p.loc * 0 + 1.0

    @numdiff.distributions.register_kl(WideNormal, Laplace)
    def wide_laplace(p, q):
        return p.loc * 0 + 2.0

    try:
        assert numdiff.distributions.kl_divergence(Normal(0.0, 1.0), Laplace(0.0, 1.0)).item() == 1.0
        assert numdiff.distributions.kl_divergence(WideNormal(0.0, 1.0), Laplace(0.0, 1.0)).item() == 2.0
        # The Normal-Normal closed form still serves the subclass.
        assert numdiff.distributions.kl_divergence(WideNormal(0.0, 1.0), Normal(0.0, 1.0)).item() == 0.0
    finally:
        from numdiff.distributions.kl import _KL_REGISTRY

        del _KL_REGISTRY[Normal, Laplace], _KL_REGISTRY[WideNormal, Laplace]
    with pytest.raises(TypeError, match="Distribution subclass"):
        numdiff.distributions.register_kl(int, Normal)


def test_validation_runs_under_vmap_over_every_batch_entry() -> None:
    # The checks called bool() on a batched tensor, so with validation on (the default) a
    # distribution could not be made or scored under numdiff.func.vmap (VmapDataDependentError);
    # torch.func allows it.
    loc = numdiff.tensor([0.1, -0.4, 2.0], dtype=numdiff.float64)
    value = numdiff.tensor(0.5, dtype=numdiff.float64)
    ours = numdiff.func.vmap(lambda m: numdiff.distributions.Normal(m, 1.0).log_prob(value))(loc)
    theirs = torch.func.vmap(lambda m: torch.distributions.Normal(m, 1.0).log_prob(torch.tensor(0.5, dtype=torch.float64)))(
        torch.tensor(loc.numpy())
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)
    grads = numdiff.func.vmap(numdiff.func.grad(lambda m: numdiff.distributions.Normal(m, 1.0).log_prob(value)))(loc)
    np.testing.assert_allclose(grads.numpy(), 0.5 - loc.numpy(), rtol=1e-14)
    with pytest.raises(ValueError, match=r"Expected parameter scale .*GreaterThan.*\n.*-1\."):
        numdiff.func.vmap(lambda s: numdiff.distributions.Normal(0.0, s))(numdiff.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"within the support \(GreaterThanEq"):
        numdiff.func.vmap(lambda v: numdiff.distributions.Exponential(1.0).log_prob(v))(numdiff.tensor([1.0, -1.0]))


@pytest.mark.parametrize(
    "make, support",
    [
        (lambda lib: lib.distributions.HalfNormal(1.0).log_prob(lib.tensor(-0.5)), "GreaterThanEq"),
        (lambda lib: lib.distributions.LogNormal(0.0, 1.0).log_prob(lib.tensor([1.0, 0.0])), "GreaterThan"),
    ],
    ids=["halfnormal-negative-value", "lognormal-zero-value"],
)
def test_a_value_outside_a_half_line_support_is_refused(make, support) -> None:
    # PyTorch's message shows HalfNormal() and LogNormal() (their parameters live on a base
    # distribution); numdiff's shows the parameters, so only the rest of the line is compared.
    with pytest.raises(ValueError, match=f"to be within the support \\({support}"):
        make(torch)
    with pytest.raises(ValueError, match=f"to be within the support \\({support}.*of the distribution .*Normal\\(.*scale: 1.0\\)"):
        make(numdiff)
