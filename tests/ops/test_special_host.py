"""special.gammainc / gammaincc, airy_ai and spherical_bessel_j0 (SciPy on host values) against
torch.special and mpmath over wide ranges and edges, their gradients, and log_ndtr in both tails."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
import torch

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck

_A = np.concatenate([np.geomspace(1e-3, 1e4, 25), [0.0, 0.5, 1.0, math.inf, math.nan, -1.0]])
_X = np.concatenate([np.geomspace(1e-4, 2e4, 30), [0.0, 1.0, math.inf, math.nan, -1.0]])
_GRID = tuple(np.array(v) for v in zip(*itertools.product(_A, _X)))


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_regularized_gamma_matches_torch_on_a_wide_grid_and_every_edge(name):
    a, x = _GRID
    expected = getattr(torch.special, name)(torch.tensor(a), torch.tensor(x)).numpy()
    got = getattr(numdiff.special, name)(numdiff.tensor(a), numdiff.tensor(x)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))  # NaN argument cases in torch's order
    # torch's igamma is up to ~1e-9 off near a = x (mpmath agrees with SciPy, checked below).
    np.testing.assert_allclose(got, expected, rtol=2e-9, atol=1e-300)
    single = getattr(numdiff.special, name)(numdiff.tensor(a, dtype=numdiff.float32), numdiff.tensor(x, dtype=numdiff.float32))
    assert single.dtype == numdiff.float32
    np.testing.assert_allclose(single.numpy(), expected.astype(np.float32), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize(("a", "x"), [(20.309176209047347, 19.163447162495434), (0.01, 1e-3), (500.0, 620.0), (3.0, 1e-5)])
def test_regularized_gamma_matches_mpmath_to_rounding(a, x):
    mpmath.mp.dps = 40
    lower = mpmath.gammainc(a, 0, x, regularized=True)
    a_t, x_t = numdiff.tensor([a], dtype=numdiff.float64), numdiff.tensor([x], dtype=numdiff.float64)
    assert numdiff.special.gammainc(a_t, x_t).item() == pytest.approx(float(lower), rel=1e-13, abs=0)
    assert numdiff.special.gammaincc(a_t, x_t).item() == pytest.approx(float(1 - lower), rel=1e-13, abs=0)


def test_regularized_gamma_gradient_in_x_passes_gradcheck_and_matches_torch():
    a = numdiff.tensor([[0.5], [2.0], [30.0]], dtype=numdiff.float64)
    x = numdiff.tensor([0.3, 1.5, 25.0, 40.0], dtype=numdiff.float64, requires_grad=True)
    for name in ("gammainc", "gammaincc"):
        function = getattr(numdiff.special, name)
        assert gradcheck(lambda v, f=function: f(a, v), (x,))
        assert gradgradcheck(lambda v, f=function: f(a, v), (x,))
        (ours,) = numdiff.autograd.grad(function(a, x).sum(), [x])
        x_t = torch.tensor(x.detach().numpy(), requires_grad=True)
        getattr(torch.special, name)(torch.tensor(a.numpy()), x_t).sum().backward()
        np.testing.assert_allclose(ours.numpy(), x_t.grad.numpy(), rtol=1e-12)


def test_regularized_gamma_refuses_the_first_arguments_gradient_and_bad_input():
    a = numdiff.tensor([2.0], dtype=numdiff.float64, requires_grad=True)
    x = numdiff.tensor([1.0], dtype=numdiff.float64, requires_grad=True)
    out = numdiff.special.gammainc(a, x)
    with pytest.raises(NotImplementedError, match=r"special.gammainc: the derivative in its first argument"):
        out.backward()
    with pytest.raises(TypeError, match=r"special.gammaincc: input must be a float32 or float64 tensor, got dtype"):
        numdiff.special.gammaincc(numdiff.tensor([2]), numdiff.tensor([1.0]))
    with pytest.raises(TypeError, match=r"special.gammainc: input and other must be Tensors, got float and Tensor"):
        numdiff.special.gammainc(2.0, numdiff.tensor([1.0]))


def test_gamma_cdf_is_gammainc_of_rate_times_value_as_torch():
    conc, rate, value = [0.5, 2.0, 7.0], [1.0, 3.0, 0.25], [[0.2, 1.0, 30.0], [3.0, 0.01, 2.0]]
    ours = numdiff.distributions.Gamma(numdiff.tensor(conc), numdiff.tensor(rate, requires_grad=True))
    theirs = torch.distributions.Gamma(torch.tensor(conc), torch.tensor(rate))
    np.testing.assert_allclose(ours.cdf(numdiff.tensor(value)).detach().numpy(), theirs.cdf(torch.tensor(value)).numpy(), rtol=1e-6)
    rate = numdiff.tensor(rate, dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda r: numdiff.distributions.Gamma(numdiff.tensor(conc, dtype=numdiff.float64), r).cdf(
        numdiff.tensor(value, dtype=numdiff.float64)), (rate,))  # fmt: skip
    with pytest.raises(ValueError, match="to be within the support"):
        ours.cdf(numdiff.tensor([-1.0, 1.0, 1.0]))


_LINE = np.concatenate([-np.geomspace(1e-3, 1e4, 200), np.geomspace(1e-3, 1e4, 200), [0.0, -0.0, math.inf, -math.inf, math.nan]])


@pytest.mark.parametrize(("name", "exact"), [("airy_ai", mpmath.airyai), ("spherical_bessel_j0", lambda v: mpmath.sinc(v))])
def test_airy_and_spherical_bessel_match_mpmath_and_torch_and_record_no_gradient(name, exact):
    x = numdiff.tensor(_LINE, dtype=numdiff.float64, requires_grad=True)
    got = getattr(numdiff.special, name)(x)
    assert not got.requires_grad  # torch records none either
    expected = getattr(torch.special, name)(torch.tensor(_LINE)).numpy()
    np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(expected))
    # torch's Ai is up to 1.7e-5 relative off near its zeros (x ~ -2.2): mpmath pins numdiff's values.
    np.testing.assert_allclose(got.numpy(), expected, rtol=2e-5, atol=1e-7)
    mpmath.mp.dps = 30
    for value in (-9000.5, -2.2, -1.0, 0.0, 1e-3, 3.0, 90.0, 1e4):
        assert getattr(numdiff.special, name)(numdiff.tensor([value], dtype=numdiff.float64)).item() == pytest.approx(
            float(exact(value)), rel=1e-9, abs=1e-300)  # fmt: skip
    single = getattr(numdiff.special, name)(numdiff.tensor([-2.2, 3.0]))
    assert single.dtype == numdiff.float32
    with pytest.raises(TypeError, match=rf"special.{name}: expects a float32, float64 or integer input, got dtype"):
        getattr(numdiff.special, name)(numdiff.ones(2, dtype=numdiff.float16))


@pytest.mark.parametrize(("dtype", "rtol"), [("float64", 2e-15), ("float32", 1e-6)])
def test_log_ndtr_matches_torch_in_both_far_tails(dtype, rtol):
    x = np.concatenate([-np.geomspace(1e-3, 1e150, 800), np.geomspace(1e-3, 40.0, 300), [0.0]])
    x = x[np.abs(x) < 1.3 * np.sqrt(np.finfo(dtype).max)]  # -x^2 / 2 finite
    got = numdiff.special.log_ndtr(numdiff.tensor(x.astype(dtype))).numpy()
    expected = torch.special.log_ndtr(torch.tensor(x.astype(dtype))).numpy()
    assert np.isfinite(got).all()
    # float32 from |x| = 1.8e19 on, where x * x alone overflows; the upper tail's -ndtr(-x), not 0.
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=0)


def test_log_ndtr_gradients_pass_gradcheck_in_each_branch():
    x = numdiff.tensor([-1e4, -25.0, -19.99, -3.0, 0.0, 0.5, 9.0, 30.0], dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(numdiff.special.log_ndtr, (x,))
