"""Gamma, Chi2, StudentT, Beta and Dirichlet: the implicit derivative of a gamma draw in its shape
against mpmath, the mean gradient of rsample against the derivative of the closed-form mean (a
wrong derivative moves it by many standard errors), sample moments, and refused parameters."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.distributions import Beta, Chi2, Dirichlet, Gamma, StudentT
from numdiff.kernels.gamma_grad import standard_gamma_shape_grad

torch = pytest.importorskip("torch")
DRAWS = 20000


def _f64(values, requires_grad: bool = False) -> numdiff.Tensor:
    return numdiff.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def test_shape_derivative_of_a_gamma_draw_matches_mpmath() -> None:
    mpmath = pytest.importorskip("mpmath")
    special = pytest.importorskip("scipy.special")
    mpmath.mp.dps = 30
    alphas, draws, expected = [], [], []
    for alpha in (1e-3, 0.05, 0.5, 1.0, 3.7, 40.0, 1e3, 1e4):
        for quantile in (1e-6, 1e-3, 0.2, 0.5, 0.8, 0.999):
            x = float(special.gammaincinv(alpha, quantile))
            if x == 0.0:
                continue
            # dx/dalpha = -(dP/dalpha) / p(x) at the fixed quantile P(alpha, x).
            d_cdf = mpmath.diff(lambda a, x=x: mpmath.gammainc(a, 0, x, regularized=True), alpha)
            density = mpmath.exp((alpha - 1) * mpmath.log(x) - x - mpmath.loggamma(alpha))
            alphas.append(alpha)
            draws.append(x)
            expected.append(float(-d_cdf / density))
    out = np.empty(len(draws))
    standard_gamma_shape_grad(np.array(draws), np.array(alphas), out)
    np.testing.assert_allclose(out, expected, rtol=1e-9)


def test_a_draw_that_underflowed_has_zero_shape_derivative() -> None:
    special = pytest.importorskip("scipy.special")
    out = np.empty(2)
    standard_gamma_shape_grad(np.array([0.0, 1e-300]), np.array([1e-3, 1e-3]), out)
    assert out[0] == 0.0
    # Near 0 the series is its first term, -(x / alpha) (log x - digamma(alpha + 1)).
    np.testing.assert_allclose(
        out[1], -(1e-300 / 1e-3) * (np.log(1e-300) - special.digamma(1.001)), rtol=1e-12
    )


@pytest.mark.parametrize("alpha", [0.2, 1.0, 2.5, 30.0])
def test_gamma_rsample_mean_gradient_is_the_derivative_of_the_mean(alpha: float) -> None:
    # E[x] = alpha / rate, so the per-draw slopes average to 1 / rate and -alpha / rate^2.
    concentration = _f64(np.full(DRAWS, alpha), requires_grad=True)
    rate = _f64(np.full(DRAWS, 1.7), requires_grad=True)
    numdiff.manual_seed(21)
    d_alpha, d_rate = numdiff.autograd.grad(Gamma(concentration, rate).rsample().sum(), [concentration, rate])
    for slopes, expected in ((d_alpha.numpy(), 1 / 1.7), (d_rate.numpy(), -alpha / 1.7**2)):
        assert np.isfinite(slopes).all()
        assert abs(slopes.mean() - expected) < 6 * slopes.std() / np.sqrt(DRAWS), (slopes.mean(), expected)


def test_beta_rsample_mean_gradient_is_the_derivative_of_the_mean() -> None:
    a = _f64([0.7, 3.0], requires_grad=True)
    b = _f64([2.0, 1.5], requires_grad=True)
    numdiff.manual_seed(3)
    da, db = numdiff.autograd.grad(Beta(a, b).rsample((4 * DRAWS,)).sum(), [a, b])
    av, bv = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(da.numpy() / (4 * DRAWS), bv / (av + bv) ** 2, rtol=0.03)
    np.testing.assert_allclose(db.numpy() / (4 * DRAWS), -av / (av + bv) ** 2, rtol=0.03)


def test_student_t_rsample_gradient_in_loc_and_scale_is_exact() -> None:
    df, loc, scale = _f64([4.0], True), _f64([0.5], True), _f64([2.0], True)
    numdiff.manual_seed(8)
    draws = StudentT(df, loc, scale).rsample((50,))
    d_loc, d_scale = numdiff.autograd.grad(draws.sum(), [loc, scale])
    assert d_loc.item() == 50.0
    np.testing.assert_allclose(d_scale.item(), ((draws.detach() - 0.5) / 2.0).sum().item(), rtol=1e-12)


def test_dirichlet_rsample_lies_on_the_simplex_and_has_gradients() -> None:
    concentration = _f64([[0.3, 1.0, 4.0], [2.0, 2.0, 2.0]], requires_grad=True)
    numdiff.manual_seed(5)
    draws = Dirichlet(concentration).rsample((7,))
    np.testing.assert_allclose(draws.detach().sum(-1).numpy(), 1.0, rtol=1e-12)
    (grad,) = numdiff.autograd.grad((draws[..., 0] * 3).sum(), [concentration])
    assert np.isfinite(grad.numpy()).all() and grad[0, 0].item() > 0


SAMPLED = [
    ("gamma", lambda: Gamma(_f64([0.3, 2.0, 50.0]), _f64([1.0, 0.5, 3.0]))),
    ("chi2", lambda: Chi2(_f64([1.0, 5.0]))),
    ("studentt", lambda: StudentT(_f64([5.0, 9.0]), _f64([1.0, -1.0]), _f64([2.0, 0.5]))),
    ("beta", lambda: Beta(_f64([0.5, 2.0, 5.0]), _f64([0.5, 3.0, 1.0]))),
    ("dirichlet", lambda: Dirichlet(_f64([[0.3, 1.0, 4.0]]))),
]


@pytest.mark.parametrize(("name", "make"), SAMPLED)
@pytest.mark.parametrize("method", ["sample", "rsample"])
def test_draws_have_the_distributions_mean_and_variance(name: str, make, method: str) -> None:
    d = make()
    numdiff.manual_seed(1234)
    draws = getattr(d, method)((DRAWS,)).detach().numpy()
    mean, variance = d.mean.numpy(), d.variance.numpy()
    sample_mean, sample_variance = draws.mean(0), draws.var(0, ddof=1)
    fourth = ((draws - sample_mean) ** 4).mean(0)
    assert np.all(np.abs(sample_mean - mean) < 6 * np.sqrt(variance / DRAWS)), (sample_mean, mean)
    assert np.all(np.abs(sample_variance - variance) < 6 * np.sqrt((fourth - sample_variance**2) / DRAWS))
    assert np.all(d.support.check(numdiff.tensor(draws)).numpy())


def test_float32_parameters_give_float32_draws_and_densities() -> None:
    d = Gamma(numdiff.ones(3), 2.0)
    assert d.rsample((2,)).dtype == numdiff.float32
    assert d.log_prob(numdiff.ones(3)).dtype == numdiff.float32
    assert Beta(numdiff.ones(2), numdiff.ones(2)).sample().dtype == numdiff.float32


BAD = [
    ("gamma-negative-concentration", lambda lib: lib.distributions.Gamma(lib.tensor([1.0, -1.0]), 1.0)),
    ("gamma-zero-rate", lambda lib: lib.distributions.Gamma(1.0, lib.tensor([0.0]))),
    ("gamma-negative-value", lambda lib: lib.distributions.Gamma(2.0, 1.0).log_prob(lib.tensor([-0.5]))),
    ("chi2-zero-df", lambda lib: lib.distributions.Chi2(lib.tensor([0.0, 1.0]))),
    ("studentt-zero-scale", lambda lib: lib.distributions.StudentT(2.0, 0.0, lib.tensor([0.0]))),
    (
        "beta-negative-concentration",
        lambda lib: lib.distributions.Beta(lib.tensor([1.0]), lib.tensor([-1.0])),
    ),
    ("beta-value-above-one", lambda lib: lib.distributions.Beta(2.0, 2.0).log_prob(lib.tensor(1.5))),
    ("dirichlet-scalar", lambda lib: lib.distributions.Dirichlet(lib.tensor(1.0))),
    ("dirichlet-zero-entry", lambda lib: lib.distributions.Dirichlet(lib.tensor([1.0, 0.0]))),
    (
        "dirichlet-value-off-simplex",
        lambda lib: lib.distributions.Dirichlet(lib.ones(3)).log_prob(lib.tensor([0.5, 0.5, 0.5])),
    ),
]


@pytest.mark.parametrize("make", [m for _, m in BAD], ids=[n for n, _ in BAD])
def test_bad_input_raises_value_error_like_torch(make) -> None:
    with pytest.raises(ValueError) as theirs:
        make(torch)
    with pytest.raises(ValueError) as ours:
        make(numdiff)
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0].replace("torch.", "numdiff.")


def test_standard_gamma_refuses_integer_concentration() -> None:
    with pytest.raises(TypeError, match="standard_gamma: concentration must be a floating point tensor"):
        numdiff.distributions.gamma.standard_gamma(numdiff.tensor([1, 2]))


def test_student_t_names_itself_and_df_when_df_is_not_positive() -> None:
    # PyTorch's message names the Chi2 it builds inside; numdiff's names the StudentT made.
    with pytest.raises(
        ValueError, match=r"Expected parameter df .* of distribution StudentT\(df: .*GreaterThan"
    ):
        StudentT(numdiff.tensor([-2.0]))
