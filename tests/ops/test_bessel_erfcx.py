"""i0, i0e, i1, i1e and erfcx against SciPy, mpmath and PyTorch: float64 accuracy in ulps over wide
samples, edge values (NaN, +-inf, +-0, overflow) with their gradients on both backward paths, float32,
and bad arguments. (Gradient checks against central differences are the cases in tests/ops/cases_special.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.kernels import _special

torch = pytest.importorskip("torch")
special = pytest.importorskip("scipy.special")
mpmath = pytest.importorskip("mpmath")

NAN, INF = float("nan"), float("inf")
EDGES = [NAN, -INF, INF, 0.0, -0.0, 1e-300, -1e-300, 1e-8, -0.5, 0.5, -7.99, 8.0, 8.01, -30.0, 100.0, 700.0,
         -713.9, 714.0, -26.5, -26.7, 25.99, 26.0, 26.01, 1e5, 1e200]
ULPS = 1e-15  # about four units in the last place of a float64 in [1, 2)
BESSEL_ULPS = 2e-15  # about nine
NAMES = ["i0", "i0e", "i1", "i1e", "erfcx"]


def _ours(name: str):
    return numdiff.i0 if name == "i0" else getattr(numdiff.special, name)


def _wide_samples() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([rng.uniform(-30.0, 30.0, 4000), rng.uniform(-8.5, 8.5, 4000),
                           np.exp(rng.uniform(-40.0, 6.5, 2000)) * rng.choice([-1.0, 1.0], 2000)])


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_bessel_float64_within_a_few_ulp_of_scipy(name):
    x = _wide_samples()
    ours = _ours(name)(numdiff.tensor(x)).numpy()
    expected = getattr(special, name)(x)
    # The same Chebyshev series as SciPy's, whose own error reaches ~7 ulp near |x| = 8 (exp(|x|) times a
    # sum of rounded terms); the generated loop's exp rounds apart from the C library's, so the two
    # differ by up to ~9 ulp there. Against 30 digits, a sample stays within the series' error.
    np.testing.assert_allclose(ours, expected, rtol=2.5 * BESSEL_ULPS, atol=0.0)
    order = int(name[1])
    with mpmath.workdps(30):
        exact = np.array([float(mpmath.besseli(order, v) * (mpmath.exp(-abs(v)) if name.endswith("e") else 1))
                          for v in x[::10]])
    np.testing.assert_allclose(ours[::10], exact, rtol=BESSEL_ULPS, atol=0.0)


def test_erfcx_float64_within_a_few_ulp_of_mpmath():
    # SciPy's (and PyTorch's) erfcx rounds x * x before exp for negative x, up to 260 ulp off below -20;
    # mpmath at 30 digits is the reference there, SciPy's above -1 (where it is exact to rounding).
    x = _wide_samples()
    ours = numdiff.special.erfcx(numdiff.tensor(x)).numpy()
    above = x > -1.0
    np.testing.assert_allclose(ours[above], special.erfcx(x[above]), rtol=ULPS, atol=0.0)
    below = x[~above][::20]
    with mpmath.workdps(30):
        exact = np.array([float(mpmath.exp(mpmath.mpf(v) ** 2) * mpmath.erfc(mpmath.mpf(v))) for v in below])
    np.testing.assert_allclose(ours[~above][::20], exact, rtol=ULPS, atol=0.0)


def _grads(fn, x: np.ndarray, create_graph: bool):
    leaf = numdiff.tensor(x, requires_grad=True)
    out = fn(leaf)
    (g,) = numdiff.autograd.grad(out, leaf, numdiff.ones_like(out), create_graph=create_graph)
    return out.detach().numpy(), g.detach().numpy()


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", NAMES)
def test_edge_values_and_gradients_match_torch(name, dtype, create_graph):
    with np.errstate(over="ignore"):  # 1e200 is inf in float32
        x = np.array(EDGES, dtype=dtype)
    with np.errstate(all="ignore"):
        out, grad = _grads(_ours(name), x, create_graph)
    leaf = torch.tensor(x, requires_grad=True)
    expected = getattr(torch.special, name)(leaf)
    (expected_grad,) = torch.autograd.grad(expected, leaf, torch.ones_like(expected))
    assert out.dtype == dtype
    # rtol: float64 torch rounds x * x in erfcx for negative x (see above); float32 rounds one ulp apart.
    rtol = 2e-13 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(out, expected.detach().numpy(), rtol=rtol, atol=0.0)
    # A derivative that is a difference cancels for large |x| (i0e's i1e - out, erfcx's 2 x out - 2 / sqrt(pi)):
    # each side's rounding of the terms, a few ulp of the larger, is the absolute error the gradients may
    # differ by.
    with np.errstate(all="ignore"):
        terms = np.abs(np.nan_to_num(out * (2.0 * x if name == "erfcx" else 1.0), posinf=0.0, neginf=0.0))
    slack = 8.0 * np.finfo(dtype).eps * (terms + (1.13 if name == "erfcx" else 0.0))
    expected_grad = expected_grad.numpy()
    finite = np.isfinite(expected_grad)
    np.testing.assert_array_equal(np.isnan(grad), np.isnan(expected_grad))
    np.testing.assert_array_equal(grad[~finite & ~np.isnan(grad)], expected_grad[~finite & ~np.isnan(grad)])
    assert np.all(np.abs(grad - expected_grad)[finite] <= (rtol * 10 * np.abs(expected_grad) + slack)[finite])


def test_zero_keeps_its_limits():
    x = numdiff.tensor([0.0, -0.0], dtype=numdiff.float64, requires_grad=True)
    (g1,) = numdiff.autograd.grad(numdiff.special.i1(x).sum(), x)
    (g1e,) = numdiff.autograd.grad(numdiff.special.i1e(x).sum(), x)
    (g0e,) = numdiff.autograd.grad(numdiff.special.i0e(x).sum(), x)
    assert g1.tolist() == [0.5, 0.5] and g1e.tolist() == [0.5, 0.5] and g0e.tolist() == [0.0, 0.0]
    # At -0.0 both give +0.0, as SciPy and PyTorch do (the odd extension would give -0.0; a downstream
    # sqrt or 1/x would then turn +inf into -inf against torch).
    assert np.signbit(numdiff.special.i1(x).detach().numpy()).tolist() == [False, False]
    assert np.signbit(numdiff.special.i1e(x).detach().numpy()).tolist() == [False, False]
    assert numdiff.special.erfcx(x).tolist() == [1.0, 1.0]


def test_integer_input_gives_the_default_float_and_strided_input_reads_its_layout():
    assert numdiff.i0(numdiff.tensor([0, 1, 2])).dtype == numdiff.float32
    base = np.linspace(-9.0, 9.0, 24).reshape(4, 6)
    view = numdiff.tensor(base).t()[::2]
    np.testing.assert_allclose(numdiff.special.i1e(view).numpy(), special.i1e(base.T[::2]), rtol=ULPS)
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64)
    x.i0_()
    np.testing.assert_allclose(x.numpy(), special.i0([1.0, 2.0]), rtol=ULPS)


@pytest.mark.parametrize("name", NAMES)
def test_bad_arguments_name_the_function_and_the_value(name):
    with pytest.raises(TypeError, match=rf"{name}: expected a Tensor, got list"):
        _ours(name)([1.0])
    with pytest.raises(TypeError, match=rf"{name}: expected a Tensor, got str"):
        _ours(name)("1.0")


def test_scalar_code_is_the_same_in_python_and_compiled():
    # The CUDA simulator runs the Python source; the CPU loops run the @njit version of it.
    for x in [-30.0, -8.0, -1e-9, 0.0, 0.3, 7.99, 8.0, 26.0, 60.0, 1e6]:
        for name in NAMES:
            assert getattr(_special, name)(x) == getattr(_special, f"{name}_scalar")(x), (name, x)
