"""GeneralizedPareto, Kumaraswamy, FisherSnedecor, LogisticNormal, LKJCholesky and Wishart beyond the
case table: values against SciPy and torch, sample moments against the stated ones, the implicit
rsample gradients (in degrees of freedom) against the derivative of the mean, and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

import numdiff
from numdiff.autograd import gradcheck
from numdiff.distributions import FisherSnedecor, GeneralizedPareto, Kumaraswamy, LKJCholesky, Wishart

torch = pytest.importorskip("torch")

_LOC, _SCALE = np.array([0.0, 1.0, -1.0, 0.5, 2.0]), np.array([1.0, 2.0, 0.5, 1.0, 0.3])
_XI = np.array([0.0, 0.3, -0.5, -1.0, 1e-9])  # exponential, heavy tail, bounded, uniform, 0 to isclose


def _pareto(lib, dtype):
    return lib.distributions.GeneralizedPareto(*(lib.tensor(v, dtype=dtype) for v in (_LOC, _SCALE, _XI)))


def test_generalized_pareto_matches_scipy_in_float64_and_torch_in_float32():
    ours = _pareto(numdiff, numdiff.float64)
    value = _LOC + _SCALE * np.array([0.5, 2.0, 0.9, 0.3, 4.0])
    reference = scipy.stats.genpareto(c=_XI, loc=_LOC, scale=_SCALE)
    # rtol 1e-8: a shape within torch's isclose of 0 (1e-9 here) is taken as 0, the exponential case.
    np.testing.assert_allclose(ours.log_prob(numdiff.tensor(value)).numpy(), reference.logpdf(value), rtol=1e-8)
    np.testing.assert_allclose(ours.cdf(numdiff.tensor(value)).numpy(), reference.cdf(value), rtol=1e-8)
    q = np.array([0.1, 0.5, 0.9, 0.99, 0.3])
    np.testing.assert_allclose(ours.icdf(numdiff.tensor(q)).numpy(), reference.ppf(q), rtol=1e-9)
    np.testing.assert_allclose(ours.mean.numpy(), reference.mean(), rtol=1e-9)
    np.testing.assert_allclose(ours.variance.numpy()[[0, 2, 3]], reference.var()[[0, 2, 3]], rtol=1e-9)
    assert np.isnan(ours.variance.numpy()[1]) == (_XI[1] >= 0.5)
    # torch's own GeneralizedPareto fails in float64 (isclose against a float32 zero): float32 here.
    theirs = _pareto(torch, torch.float32)
    single = _pareto(numdiff, numdiff.float32)
    for method in ("log_prob", "cdf", "log_survival_function"):
        got = getattr(single, method)(numdiff.tensor(value, dtype=numdiff.float32)).numpy()
        np.testing.assert_allclose(got, getattr(theirs, method)(torch.tensor(value, dtype=torch.float32)).numpy(), rtol=2e-6)
    for name in ("mean", "variance", "mode"):
        np.testing.assert_allclose(getattr(single, name).numpy(), getattr(theirs, name).numpy(), rtol=2e-6)
    np.testing.assert_allclose(single.entropy().numpy(), theirs.entropy().numpy(), rtol=2e-6)
    assert tuple(single.expand((3, 5)).sample((2,)).shape) == (2, 3, 5)


def test_generalized_pareto_support_bounds_a_negative_shape_and_validation_refuses_outside():
    d = _pareto(numdiff, numdiff.float64)
    upper = d.support.upper_bound.numpy()
    np.testing.assert_allclose(upper[[2, 3]], _LOC[[2, 3]] - _SCALE[[2, 3]] / _XI[[2, 3]])
    assert np.isinf(upper[[0, 1]]).all()
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(numdiff.tensor(_LOC + 10.0))
    with pytest.raises(ValueError, match=r"Expected parameter scale .* GreaterThan\(lower_bound=0.0\)"):
        GeneralizedPareto(0.0, numdiff.tensor([1.0, -1.0]), 0.1)


def test_generalized_pareto_rsample_gradients_pass_gradcheck_and_moments_hold():
    params = [numdiff.tensor(v, dtype=numdiff.float64, requires_grad=True) for v in (_LOC, _SCALE, _XI + 0.05)]

    def draw(*ps):
        numdiff.manual_seed(3)
        return GeneralizedPareto(*ps).rsample((4,))

    assert gradcheck(draw, params)
    assert gradcheck(lambda *ps: GeneralizedPareto(*ps).log_prob(numdiff.tensor(_LOC + 0.4)), params)
    numdiff.manual_seed(0)
    d = GeneralizedPareto(numdiff.tensor(_LOC), numdiff.tensor(_SCALE), numdiff.tensor([0.0, 0.2, -0.5, -1.0, 0.1]))
    samples = d.sample((200_000,)).numpy()
    np.testing.assert_allclose(samples.mean(0), d.mean.numpy(), rtol=0.02, atol=0.01)


def test_kumaraswamy_mode_is_the_density_maximum_where_torch_gives_nan():
    a, b = np.array([2.0, 3.0, 5.0]), np.array([4.0, 2.0, 1.5])
    ours = Kumaraswamy(numdiff.tensor(a), numdiff.tensor(b)).mode.numpy()
    grid = np.linspace(1e-6, 1 - 1e-6, 200_001)[:, None]
    density = a * b * grid ** (a - 1) * (1 - grid**a) ** (b - 1)
    np.testing.assert_allclose(ours, grid[density.argmax(0), 0], atol=1e-5)
    assert np.isnan(torch.distributions.Kumaraswamy(torch.tensor(a), torch.tensor(b)).mode.numpy()).all()


def test_kumaraswamy_and_logistic_normal_sample_moments():
    numdiff.manual_seed(1)
    k = Kumaraswamy(numdiff.tensor([0.5, 2.0, 6.0]), numdiff.tensor([0.8, 3.0, 1.2]))
    samples = k.sample((200_000,)).numpy()
    np.testing.assert_allclose(samples.mean(0), k.mean.numpy(), rtol=0.01)
    np.testing.assert_allclose(samples.var(0), k.variance.numpy(), rtol=0.03)
    loc, scale = np.array([0.3, -1.0, 0.8]), np.array([0.5, 1.0, 2.0])
    ours = numdiff.distributions.LogisticNormal(numdiff.tensor(loc), numdiff.tensor(scale))
    draws = ours.sample((100_000,))
    assert np.allclose(draws.numpy().sum(-1), 1.0) and tuple(draws.shape) == (100_000, 4)
    # Stick breaking inverted, a draw is Normal(loc, scale) again.
    logs = numdiff.distributions.transforms.StickBreakingTransform().inv(draws).numpy()
    np.testing.assert_allclose(logs.mean(0), loc, atol=0.02)
    np.testing.assert_allclose(logs.std(0), scale, rtol=0.02)


def test_fisher_snedecor_df_gradient_matches_the_derivative_of_its_mean():
    # E[X] = df2 / (df2 - 2): d/d df2 = -2 / (df2 - 2)^2, d/d df1 = 0 (both through implicit gamma gradients).
    df1 = numdiff.tensor([3.0, 8.0], dtype=numdiff.float64, requires_grad=True)
    df2 = numdiff.tensor([9.0, 14.0], dtype=numdiff.float64, requires_grad=True)
    numdiff.manual_seed(2)
    n = 400_000
    FisherSnedecor(df1, df2).rsample((n,)).sum().backward()
    np.testing.assert_allclose(df2.grad.numpy() / n, -2 / (df2.detach().numpy() - 2) ** 2, rtol=0.05)
    np.testing.assert_allclose(df1.grad.numpy() / n, 0.0, atol=0.004)
    with pytest.raises(ValueError, match=r"Expected parameter df2"):
        FisherSnedecor(1.0, numdiff.tensor([0.0]))


def _correlations(factor: np.ndarray) -> np.ndarray:
    return factor @ np.swapaxes(factor, -1, -2)


@pytest.mark.parametrize("concentration", [0.5, 1.0, 4.0])
def test_lkj_cholesky_draws_are_correlation_factors_with_the_lkj_marginals(concentration):
    dim = 4
    numdiff.manual_seed(4)
    d = LKJCholesky(dim, numdiff.tensor(concentration, dtype=numdiff.float64))
    factors = d.sample((40_000,))
    assert bool(numdiff.distributions.constraints.corr_cholesky.check(factors).all())
    corr = _correlations(factors.numpy())
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    # Each off-diagonal correlation is Beta(c, c) on (-1, 1) with c = concentration - 1 + dim / 2: variance 1 / (2 c + 1).
    c = concentration - 1 + dim / 2
    off = corr[:, np.tril_indices(dim, -1)[0], np.tril_indices(dim, -1)[1]]
    np.testing.assert_allclose(off.mean(0), 0.0, atol=0.02)
    np.testing.assert_allclose(off.var(0), 1 / (2 * c + 1), rtol=0.05)
    theirs = torch.distributions.LKJCholesky(dim, torch.tensor(concentration, dtype=torch.float64))
    np.testing.assert_allclose(d.log_prob(factors[:50]).numpy(), theirs.log_prob(torch.tensor(factors[:50].numpy())).numpy(), rtol=1e-12)
    # torch's sampler draws row 2's length from Beta(1.5, c - 0.5), not Beta(1, c - 0.5): the correlation
    # of variables 0 and 2 comes out with variance 0.30 at concentration 0.5, not the LKJ law's 0.25.
    torch.manual_seed(0)
    skewed = _correlations(theirs.sample((40_000,)).numpy())[:, 2, 0].var()
    assert abs(skewed - 1 / (2 * c + 1)) > 0.1 / (2 * c + 1)


def test_lkj_cholesky_refuses_a_bad_dim_and_values_outside_its_support():
    with pytest.raises(ValueError, match=r"LKJCholesky: expected dim to be an integer greater than or equal to 2, got dim=1"):
        LKJCholesky(1)
    with pytest.raises(ValueError, match=r"Expected parameter concentration"):
        LKJCholesky(3, numdiff.tensor([-1.0]))
    with pytest.raises(ValueError, match="to be within the support"):
        LKJCholesky(2).log_prob(numdiff.tensor([[1.0, 0.0], [0.5, 0.5]]))


def _covariance() -> np.ndarray:
    root = np.array([[1.0, 0.0, 0.0], [0.4, 0.8, 0.0], [-0.3, 0.2, 0.6]])
    return root @ root.T


def test_wishart_sample_moments_and_df_gradient_match_the_closed_forms():
    cov = numdiff.tensor(_covariance(), dtype=numdiff.float64)
    df = numdiff.tensor(5.5, dtype=numdiff.float64, requires_grad=True)
    numdiff.manual_seed(6)
    n = 100_000
    draws = Wishart(df, covariance_matrix=cov).rsample((n,))
    d = Wishart(df.detach(), covariance_matrix=cov)
    np.testing.assert_allclose(draws.detach().numpy().mean(0), d.mean.numpy(), rtol=0.02, atol=0.02)
    np.testing.assert_allclose(draws.detach().numpy().var(0), d.variance.numpy(), rtol=0.06, atol=0.02)
    # E[W] = df cov: the implicit gradient of the chi draws in df averages to cov.
    draws.sum().backward()
    np.testing.assert_allclose(df.grad.item() / n, _covariance().sum(), rtol=0.02)


def test_wishart_rsample_is_differentiable_in_the_scale_and_log_prob_in_everything():
    root = numdiff.tensor(np.linalg.cholesky(_covariance()), dtype=numdiff.float64, requires_grad=True)
    df = numdiff.tensor([4.5, 7.0], dtype=numdiff.float64, requires_grad=True)

    def draw(tril):
        numdiff.manual_seed(8)
        return Wishart(df.detach(), scale_tril=tril.tril(-1) + tril.diagonal().diag_embed()).rsample((2,))

    assert gradcheck(draw, (root,))
    value = numdiff.tensor(_covariance() * 3.0 + np.eye(3))
    assert gradcheck(lambda r, v: Wishart(v, scale_tril=r.tril()).log_prob(value), (root, df))
    assert gradcheck(lambda r, v: Wishart(v, scale_tril=r.tril()).entropy(), (root, df))


def test_wishart_refuses_what_torch_refuses():
    cov = numdiff.tensor(_covariance())
    with pytest.raises(ValueError, match=r"Wishart: df=1.5 must be greater than dim - 1 = 2"):
        Wishart(1.5, covariance_matrix=cov)
    with pytest.raises(ValueError, match="Wishart: exactly one of covariance_matrix, precision_matrix or scale_tril"):
        Wishart(4.0, covariance_matrix=cov, scale_tril=cov)
    with pytest.raises(ValueError, match=r"Wishart: the matrix must be a batch of square matrices, got \(3,\)"):
        Wishart(4.0, covariance_matrix=numdiff.ones(3))
    with pytest.raises(ValueError, match=r"Expected parameter covariance_matrix"):
        Wishart(4.0, covariance_matrix=-cov)
    with pytest.warns(UserWarning, match="singular samples are highly likely"):
        Wishart(2.5, covariance_matrix=cov)
    with pytest.raises(ValueError, match="to be within the support"):
        Wishart(4.0, covariance_matrix=cov).log_prob(-cov)
    assert math.isfinite(Wishart(4.0, covariance_matrix=cov).log_prob(cov).item())


def test_inverse_gamma_draws_and_their_implicit_gradients_match_the_mean():
    # E[X] = rate / (a - 1): d/da = -rate / (a - 1)^2, d/d rate = 1 / (a - 1).
    a = numdiff.tensor([3.0, 6.0], dtype=numdiff.float64, requires_grad=True)
    rate = numdiff.tensor([2.0, 0.5], dtype=numdiff.float64, requires_grad=True)
    numdiff.manual_seed(9)
    n = 400_000
    draws = numdiff.distributions.InverseGamma(a, rate).rsample((n,))
    d = numdiff.distributions.InverseGamma(a.detach(), rate.detach())
    np.testing.assert_allclose(draws.detach().numpy().mean(0), d.mean.numpy(), rtol=0.02)
    draws.sum().backward()
    a_, r_ = a.detach().numpy(), rate.detach().numpy()
    np.testing.assert_allclose(a.grad.numpy() / n, -r_ / (a_ - 1) ** 2, rtol=0.05)
    np.testing.assert_allclose(rate.grad.numpy() / n, 1 / (a_ - 1), rtol=0.02)
    assert np.isinf(numdiff.distributions.InverseGamma(0.5, 1.0).mean.item())
    with pytest.raises(ValueError, match=r"Expected parameter rate"):
        numdiff.distributions.InverseGamma(1.0, numdiff.tensor([-1.0]))
