"""kl_divergence for every pair torch.distributions registers among Bernoulli, Beta, Binomial,
Cauchy, Chi2, Dirichlet, Exponential, Gamma, Geometric, Gumbel, HalfNormal, Laplace, LogNormal,
Normal, Pareto, Poisson, Uniform, HalfCauchy, Weibull and TransformedDistribution: values against torch in float64 (including the infinite pairs, and
Uniforms inside and outside the other's support), float64 gradchecks of the finite ones, and the
refusals."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(23)


def _positive(*shape: int) -> np.ndarray:
    return _rng.uniform(0.5, 2.0, shape)


def _real(*shape: int) -> np.ndarray:
    return _rng.normal(size=shape)


def _unit(*shape: int) -> np.ndarray:
    return _rng.uniform(0.1, 0.9, shape)


PARAMS = {
    "Bernoulli": [_unit(3)],
    "Beta": [_positive(3), _positive(3)],
    "Binomial": [6, _unit(3)],  # total_count stays a number (a perturbed count is refused)
    "Cauchy": [_real(3), _positive(3)],
    "ContinuousBernoulli": [np.array([0.2, 0.4995, 0.85])],
    "Chi2": [_positive(3) * 3],
    "Dirichlet": [_positive(2, 4)],
    "Exponential": [_positive(3)],
    "Gamma": [_positive(3), _positive(3)],
    "Geometric": [_unit(3)],
    "Gumbel": [_real(3), _positive(3)],
    "HalfNormal": [_positive(3)],
    "Laplace": [_real(3), _positive(3)],
    "LogNormal": [_real(3), _positive(3)],
    "Normal": [_real(3), _positive(3)],
    "Poisson": [_positive(3) * 2],
    "Pareto": [_positive(3), _positive(3) * 3],
    "Pareto-heavy": [_positive(3), _positive(3) * 0.8],
    "HalfCauchy": [_positive(3)],
    "Weibull": [_positive(3), _positive(3)],
    "Uniform-inside": [np.array([0.2, 0.1, 0.3]), np.array([0.7, 0.9, 0.5])],
    "Uniform-wide": [np.array([0.15, -0.1, 0.25]), np.array([0.75, 0.95, 1.5])],
}
# Second parameter sets, so that KL(p || q) of one family compares two different members.
OTHER = {
    name: [v[::-1].copy() if isinstance(v, np.ndarray) else v for v in values]
    for name, values in PARAMS.items()
}
# Weibulls compare through their shared transforms, which must be equal (else torch refuses too).
OTHER["Weibull"] = [PARAMS["Weibull"][0], PARAMS["Weibull"][1]]
OTHER["Uniform-inside"] = [np.array([0.1, 0.0, 0.2]), np.array([0.8, 1.0, 0.6])]
OTHER["Uniform-wide"] = [np.array([-0.5, -1.0, 0.0]), np.array([1.0, 2.0, 1.2])]


def _make(lib, name: str, params, requires_grad: bool = False):
    args = [
        lib.tensor(p, dtype=lib.float64, requires_grad=requires_grad) if isinstance(p, np.ndarray) else p
        for p in params
    ]
    tensors = [a for a in args if isinstance(a, lib.Tensor)]
    return getattr(lib.distributions, name.split("-")[0])(*args), tensors


def _torch_pairs():
    pairs = []
    for p_name, q_name in itertools.product(PARAMS, PARAMS):
        q_params = OTHER[q_name] if p_name == q_name else PARAMS[q_name]
        try:
            value = torch.distributions.kl_divergence(
                _make(torch, p_name, PARAMS[p_name])[0], _make(torch, q_name, q_params)[0]
            )
        except NotImplementedError:
            continue
        pairs.append((p_name, q_name, bool(torch.isfinite(value).all())))
    return pairs


PAIRS = _torch_pairs()


def test_the_pairs_cover_the_families() -> None:
    # Every family here has at least its own pair, and the cross pairs torch registers are walked.
    assert len(PAIRS) > 70
    assert {p for p, q, _ in PAIRS if p == q} == set(PARAMS)


@pytest.mark.parametrize(("p_name", "q_name"), [(p, q) for p, q, _ in PAIRS], ids=lambda n: n)
def test_kl_divergence_matches_torch(p_name: str, q_name: str) -> None:
    q_params = OTHER[q_name] if p_name == q_name else PARAMS[q_name]
    ours = numdiff.distributions.kl_divergence(
        _make(numdiff, p_name, PARAMS[p_name])[0], _make(numdiff, q_name, q_params)[0]
    )
    theirs = torch.distributions.kl_divergence(
        _make(torch, p_name, PARAMS[p_name])[0], _make(torch, q_name, q_params)[0]
    )
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


# Weibull-Weibull needs equal transforms, which carry the parameters: no perturbation keeps them equal.
@pytest.mark.parametrize(
    ("p_name", "q_name"), [(p, q) for p, q, finite in PAIRS if finite and p != "Weibull"], ids=lambda n: n
)
def test_kl_divergence_gradcheck(p_name: str, q_name: str) -> None:
    q_params = OTHER[q_name] if p_name == q_name else PARAMS[q_name]
    _, p_leaves = _make(numdiff, p_name, PARAMS[p_name], requires_grad=True)
    _, q_leaves = _make(numdiff, q_name, q_params, requires_grad=True)
    count = len(p_leaves)

    def rebuild(params, leaves):
        leaves = iter(leaves)
        return [next(leaves) if isinstance(v, np.ndarray) else v for v in params]

    def kl(*leaves):
        p = getattr(numdiff.distributions, p_name.split("-")[0])(*rebuild(PARAMS[p_name], leaves[:count]))
        q = getattr(numdiff.distributions, q_name.split("-")[0])(*rebuild(q_params, leaves[count:]))
        return numdiff.distributions.kl_divergence(p, q)

    assert gradcheck(kl, p_leaves + q_leaves)


def test_transformed_distributions_with_equal_transforms_reduce_to_their_bases() -> None:
    d, t = numdiff.distributions, numdiff.distributions.transforms

    def make(loc, scale, transforms):
        return d.TransformedDistribution(d.Normal(numdiff.tensor(loc), numdiff.tensor(scale)), transforms)

    p = make([0.1, 0.4], [1.0, 2.0], [t.AffineTransform(1.0, 2.0), t.TanhTransform()])
    q = make([0.3, -0.2], [0.5, 1.0], [t.AffineTransform(1.0, 2.0), t.TanhTransform()])
    expected = d.kl_divergence(p.base_dist, q.base_dist)
    np.testing.assert_allclose(d.kl_divergence(p, q).numpy(), expected.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="needs the same transforms"):
        d.kl_divergence(p, make([0.3, -0.2], [0.5, 1.0], [t.AffineTransform(1.0, 3.0), t.TanhTransform()]))


def test_uniforms_touching_the_unit_interval_have_finite_kl_with_a_continuous_bernoulli() -> None:
    # torch reports infinity when a Uniform touches 0 or 1; the integrals are finite there.
    d = numdiff.distributions
    q = d.ContinuousBernoulli(probs=numdiff.tensor([0.3], dtype=numdiff.float64))
    p = d.Uniform(numdiff.tensor([0.0], dtype=numdiff.float64), numdiff.tensor([1.0], dtype=numdiff.float64))
    # KL(U(0, 1) || q) = -E_U[log q] = -(logit / 2 + log(1 - p) + log C(p)).
    logit, probs = np.log(0.3 / 0.7), 0.3
    log_c = np.log(2 * np.arctanh(1 - 2 * probs) / (1 - 2 * probs))
    np.testing.assert_allclose(
        d.kl_divergence(p, q).numpy(), [-(logit / 2 + np.log(1 - probs) + log_c)], rtol=1e-12
    )
    np.testing.assert_allclose(d.kl_divergence(q, p).numpy(), -q.entropy().numpy(), rtol=1e-12)
