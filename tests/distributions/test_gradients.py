"""float64 gradient checks (central differences) of log_prob, entropy, kl_divergence and of
rsample-based expressions with respect to every tensor parameter, and the gradients of a
reparameterised draw against the closed form (d/dloc = 1, d/dscale = eps)."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck

from .cases import CASES, KL_CASES, NO_ENTROPY, split_kl, tensors

torch = pytest.importorskip("torch")


def _differentiable(case):
    return [t for t in tensors(numdiff, case, requires_grad=True) if isinstance(t, numdiff.Tensor)]


def _rebuild(case, leaves):
    """The case's parameter list with its tensor entries replaced by `leaves`, numbers kept."""
    leaves = iter(leaves)
    return [case.params[i] if i in case.numbers else next(leaves) for i in range(len(case.params))]


def _value(case):
    torch.manual_seed(0)
    theirs = case.build(torch, *tensors(torch, case))
    return numdiff.tensor(theirs.sample((3,)).numpy())


# Cases made from plain numbers only: nothing to differentiate.
NUMBERS_ONLY = tuple(c.name for c in CASES if len(c.numbers) == len(c.params))


@pytest.mark.parametrize("case", [c for c in CASES if c.name not in NUMBERS_ONLY], ids=lambda c: c.name)
def test_log_prob_and_entropy_gradcheck(case) -> None:
    value = _value(case)
    leaves = _differentiable(case)
    assert gradcheck(lambda *ps: case.build(numdiff, *_rebuild(case, ps)).log_prob(value), leaves)
    if case.name.startswith(NO_ENTROPY):
        return
    assert gradcheck(lambda *ps: case.build(numdiff, *_rebuild(case, ps)).entropy(), leaves)


@pytest.mark.parametrize(
    "case",
    # pareto-heavy draws reach 1e4, where sin(draw^2) turns faster than the difference step.
    [
        c
        for c in CASES
        if c.continuous
        and not c.implicit_rsample
        and c.name not in NUMBERS_ONLY + ("pareto-heavy", "lkj-cholesky")  # LKJCholesky has no rsample
    ],
    ids=lambda c: c.name,
)
def test_rsample_expression_gradcheck(case) -> None:
    leaves = _differentiable(case)

    def loss(*ps):
        numdiff.manual_seed(11)  # the same noise on every evaluation, so the draw is a function of ps
        draw = case.build(numdiff, *_rebuild(case, ps)).rsample((4,))
        return (draw * draw).sin().sum(0)

    assert gradcheck(loss, leaves)


@pytest.mark.parametrize("case", KL_CASES, ids=lambda c: c.name)
def test_kl_divergence_gradcheck(case) -> None:
    p_case, q_case = split_kl(case)
    p_leaves, q_leaves = _differentiable(p_case), _differentiable(q_case)
    count = len(p_leaves)

    def kl(*ps):
        p = p_case.build(numdiff, *ps[:count])
        q = q_case.build(numdiff, *ps[count:])
        return numdiff.distributions.kl_divergence(p, q)

    assert gradcheck(kl, p_leaves + q_leaves)


def test_normal_rsample_gradient_is_one_for_loc_and_the_noise_for_scale() -> None:
    loc = numdiff.tensor([0.5, -1.0], dtype=numdiff.float64, requires_grad=True)
    scale = numdiff.tensor([2.0, 0.3], dtype=numdiff.float64, requires_grad=True)
    numdiff.manual_seed(5)
    draw = numdiff.distributions.Normal(loc, scale).rsample((6,))
    draw.sum().backward()
    eps = (draw.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(loc.grad.numpy(), [6.0, 6.0])
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-12)


def test_sample_is_cut_from_the_graph_and_rsample_is_not() -> None:
    loc = numdiff.zeros(3, requires_grad=True)
    d = numdiff.distributions.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    c = numdiff.distributions.Categorical(logits=numdiff.zeros(3, requires_grad=True))
    assert not c.sample().requires_grad


def test_categorical_log_prob_gradient_matches_torch_for_probs_and_logits() -> None:
    raw = np.array([[0.2, 1.5, 0.3], [2.0, 0.5, 0.5]])
    actions = [2, 0]
    grads = {}
    for lib in (numdiff, torch):
        for kind in ("probs", "logits"):
            param = lib.tensor(raw, dtype=lib.float64, requires_grad=True)
            d = lib.distributions.Categorical(**{kind: param})
            (d.log_prob(lib.tensor(actions)).sum() + d.entropy().sum()).backward()
            grads[lib.__name__, kind] = np.asarray(param.grad.numpy())
    for kind in ("probs", "logits"):
        np.testing.assert_allclose(grads["numdiff", kind], grads["torch", kind], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["Normal", "Laplace"])
def test_log_prob_is_differentiable_in_the_value(name: str) -> None:
    value = numdiff.tensor([0.3, -0.7, 1.9], dtype=numdiff.float64, requires_grad=True)
    make = getattr(numdiff.distributions, name)
    assert gradcheck(lambda v: make(numdiff.tensor(0.1, dtype=numdiff.float64), 1.5).log_prob(v), (value,))
