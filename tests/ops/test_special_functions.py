"""lgamma, digamma, polygamma, erfinv, erfc, logit and numdiff.special against PyTorch and mpmath:
edge values (NaN, +-inf, 0, -0, poles) with their gradients on both backward paths, wide random
samples in float64 and float32, strided and broadcast layouts, and the errors for bad arguments.
(Gradient checks against central differences are the cases in tests/ops/cases_special.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.kernels import _special

torch = pytest.importorskip("torch")
mpmath = pytest.importorskip("mpmath")

NAN, INF = float("nan"), float("inf")
EDGES = [NAN, -INF, INF, 0.0, -0.0, -1.0, -2.0, -7.0, -2.5, -0.5, 1e-300, 0.5, 1.0, 1.4616321449683622, 2.0, 30.0, 1e10]

# name: (numdiff function, torch function, inputs)
FUNCTIONS = {
    "lgamma": (numdiff.lgamma, torch.lgamma, EDGES),
    "digamma": (numdiff.digamma, torch.digamma, EDGES),
    "trigamma": (lambda x: numdiff.polygamma(1, x), lambda x: torch.polygamma(1, x), EDGES),
    "polygamma2": (lambda x: numdiff.polygamma(2, x), lambda x: torch.polygamma(2, x), EDGES),
    "polygamma3": (lambda x: x.polygamma(3), lambda x: x.polygamma(3), EDGES),
    "erfc": (numdiff.erfc, torch.erfc, EDGES),
    "erfinv": (numdiff.erfinv, torch.erfinv, [NAN, -INF, INF, -1.5, -1.0, -0.999999, -0.5, -0.0, 0.0, 1e-300, 0.3,
                                             0.9999999999, 1.0, 2.0]),
    "logit": (numdiff.logit, torch.logit, [NAN, -INF, INF, -0.5, 0.0, 1e-300, 0.25, 0.5, 0.999, 1.0, 1.5]),
}


def _torch_reference(name: str, x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """torch's values, except where torch's own series leaves a rounding artifact instead of the pole or limit:
    psi1 at a negative integer is ~1e32 in torch (sin(pi k) is not 0), +inf here; polygamma(n >= 2) at
    +-inf is NaN/-inf in torch, 0 and NaN here (the limit, and no limit)."""
    values = values.copy()
    if name == "trigamma":
        values[(x < 0) & (x == np.floor(x)) & np.isfinite(x)] = INF
    if name in ("polygamma2", "polygamma3"):
        values[x == INF] = 0.0
        values[x == -INF] = NAN
    return values


def _grads(fn, x: np.ndarray, create_graph: bool):
    leaf = numdiff.tensor(x, requires_grad=True)
    out = fn(leaf)
    (g,) = numdiff.autograd.grad(out, leaf, numdiff.ones_like(out), create_graph=create_graph)
    return out.detach().numpy(), g.detach().numpy()


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_edge_values_and_gradients_match_torch(name, dtype, create_graph):
    ours, theirs, inputs = FUNCTIONS[name]
    x = np.array(inputs, dtype=dtype)
    out, grad = _grads(ours, x, create_graph)
    leaf = torch.tensor(x, requires_grad=True)
    expected = theirs(leaf)
    (expected_grad,) = torch.autograd.grad(expected, leaf, torch.ones_like(expected))
    expected = _torch_reference(name, x, expected.detach().numpy())
    # atol: at digamma's zero (1.4616...) both give a few ulp of its terms, 1e-16 apart.
    rtol, atol = (1e-13, 1e-15) if dtype == np.float64 else (3e-6, 1e-7)
    if name == "trigamma" and dtype == np.float64:
        rtol = 1e-9  # torch's trigamma stops its series early (5e-10); against mpmath see below
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol, equal_nan=True)
    assert out.dtype == dtype
    # The derivative is the next function of the family (digamma's is trigamma, ...): the same
    # artifacts apply one order up, where torch has them.
    expected_grad = expected_grad.numpy()
    if name in ("lgamma", "digamma", "trigamma", "polygamma2", "polygamma3"):
        shifted = {"lgamma": "digamma", "digamma": "trigamma", "trigamma": "polygamma2", "polygamma2": "polygamma3",
                   "polygamma3": "polygamma3"}
        expected_grad = _torch_reference(shifted[name], x, expected_grad)
    if name == "digamma" and dtype == np.float64:
        rtol = 1e-9  # torch's trigamma stops its series early (5e-10); against mpmath see below
    np.testing.assert_allclose(grad, expected_grad, rtol=rtol, atol=atol, equal_nan=True)


def _relative_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got - want) / np.abs(want)


@pytest.mark.parametrize("name", ["digamma", "trigamma", "polygamma3", "erfinv"])
def test_float64_is_exact_to_a_few_ulp_on_wide_random_samples(name):
    rng = np.random.default_rng(7)
    if name == "erfinv":
        x = np.concatenate([rng.uniform(-1, 1, 300), 1 - np.exp(rng.uniform(-36, -1, 100)), np.exp(rng.uniform(-700, 0, 50))])
        want = np.array([float(mpmath.erfinv(mpmath.mpf(v))) for v in x])
    else:
        x = np.concatenate([rng.uniform(-40, 40, 250), np.exp(rng.uniform(-30, 30, 150)), -np.exp(rng.uniform(-30, 5, 50))])
        order = {"digamma": 0, "trigamma": 1, "polygamma3": 3}[name]
        with mpmath.workdps(30):
            want = np.array([float(mpmath.polygamma(order, mpmath.mpf(v))) for v in x])
        # Digamma crosses zero once between each pair of poles: there the absolute error of a few
        # ulp of its terms is a large relative one (torch's too). Those points are left out.
        x, want = x[np.abs(want) > 1e-2], want[np.abs(want) > 1e-2]
    got = FUNCTIONS[name][0](numdiff.tensor(x)).numpy()
    assert _relative_error(got, want).max() < 1e-14


@pytest.mark.parametrize("name", ["lgamma", "digamma", "trigamma", "erfinv", "erfc"])
def test_float32_is_the_float64_result_rounded_within_two_ulp(name):
    rng = np.random.default_rng(3)
    low = -0.999 if name == "erfinv" else -20.0
    high = 0.999 if name == "erfinv" else 20.0
    x = rng.uniform(low, high, 50000).astype(np.float32)  # past the parallel grain of the generated loop
    fn = FUNCTIONS[name][0]
    got = fn(numdiff.tensor(x)).numpy()
    exact = fn(numdiff.tensor(x.astype(np.float64))).numpy()
    assert got.dtype == np.float32
    finite = np.isfinite(exact) & (np.abs(exact) > 1e-3)  # away from the zeros of lgamma and digamma
    ulp = np.spacing(np.abs(exact[finite]).astype(np.float32)).astype(np.float64)
    assert (np.abs(got[finite] - exact[finite]) / ulp).max() <= 2.0


def test_large_arrays_match_torch_on_the_parallel_loops():
    rng = np.random.default_rng(5)
    x = rng.uniform(0.05, 50.0, 70000)
    # (digamma's gradient is checked against mpmath elsewhere: torch's trigamma is good to 5e-10 only)
    for ours, theirs in [(numdiff.lgamma, torch.lgamma), (numdiff.digamma, torch.digamma),
                         (lambda t: numdiff.polygamma(2, t), lambda t: torch.polygamma(2, t))]:
        leaf = numdiff.tensor(x, requires_grad=True)
        ours(leaf).sum().backward()
        reference = torch.tensor(x, requires_grad=True)
        expected = theirs(reference)
        expected.sum().backward()
        np.testing.assert_allclose(ours(numdiff.tensor(x)).numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-13)
        rtol = 1e-9 if ours is numdiff.digamma else 1e-12
        np.testing.assert_allclose(leaf.grad.numpy(), reference.grad.numpy(), rtol=rtol, atol=1e-13)


def test_strided_and_broadcast_operands():
    x = np.random.default_rng(0).uniform(0.1, 5.0, (40, 30))
    got = numdiff.digamma(numdiff.tensor(x).transpose(0, 1)).numpy()
    np.testing.assert_allclose(got, torch.digamma(torch.tensor(x).T).numpy(), rtol=1e-14)
    a, b = np.array([[0.0], [2.0], [0.5]]), np.array([-1.0, 0.25, NAN, 3.0])
    got = numdiff.special.xlog1py(numdiff.tensor(a), numdiff.tensor(b)).numpy()
    np.testing.assert_allclose(got, torch.special.xlog1py(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-15,
                               equal_nan=True)


def test_second_derivatives_follow_the_family():
    x = np.array([0.3, 2.5, -1.5])
    leaf = numdiff.tensor(x, requires_grad=True)
    (g,) = numdiff.autograd.grad(numdiff.lgamma(leaf).sum(), leaf, create_graph=True)
    (h,) = numdiff.autograd.grad(g.sum(), leaf)
    trigamma = [float(mpmath.polygamma(1, mpmath.mpf(v))) for v in x]
    np.testing.assert_allclose(h.numpy(), trigamma, rtol=1e-14)
    leaf = numdiff.tensor(x, requires_grad=True)
    (g,) = numdiff.autograd.grad(numdiff.erfinv(leaf * 0.25).sum(), leaf, create_graph=True)
    (h,) = numdiff.autograd.grad(g.sum(), leaf)
    t = torch.tensor(x, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.erfinv(t * 0.25).sum(), t, create_graph=True)
    (th,) = torch.autograd.grad(tg.sum(), t)
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-12)


SPECIAL = {
    "expit": ((-2.0, 0.0, 3.0),), "logit": ((0.1, 0.5, 0.8),), "erf": ((-1.0, 0.5),), "erfc": ((-1.0, 0.5, 4.0),),
    "erfinv": ((-0.5, 0.2),), "log1p": ((0.5, 2.0),), "expm1": ((-0.5, 1e-8),), "exp2": ((1.5, -2.0),),
    "gammaln": ((0.5, 3.5, -1.5),), "digamma": ((0.5, 3.5),), "psi": ((0.5, 3.5),), "ndtr": ((-3.0, 0.0, 1.0),),
    "ndtri": ((0.1, 0.5, 0.975),), "log_ndtr": ((-3.0, 0.0, 2.0),), "sinc": ((0.0, 0.25, 2.5),),
    "entr": ((0.25, 1.0, 3.0),), "xlogy": ((0.0, 2.0), (3.0, 0.5)), "xlog1py": ((0.0, 2.0), (3.0, -0.5)),
    "round": ((0.5, 1.5, -2.5),),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_namespace_matches_torch_special(name):
    arrays = [np.array(a) for a in SPECIAL[name]]
    ours = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = getattr(numdiff.special, name)(*ours), getattr(torch.special, name)(*theirs)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-13, atol=1e-15)
    if name != "round":
        out.sum().backward()
        expected.sum().backward()
        for a, b in zip(ours, theirs):
            rtol = 1e-9 if name in ("digamma", "psi") else 1e-12  # torch's trigamma: 5e-10
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=1e-15)


def test_special_reductions_and_polygamma_and_multigammaln():
    x = np.array([[0.5, 1.5, 2.0], [3.0, -1.0, 0.25]])
    t, tt = numdiff.tensor(x), torch.tensor(x)
    np.testing.assert_allclose(numdiff.special.logsumexp(t, 1).numpy(), torch.special.logsumexp(tt, 1).numpy())
    np.testing.assert_allclose(numdiff.special.softmax(t, 0).numpy(), torch.special.softmax(tt, 0).numpy())
    np.testing.assert_allclose(numdiff.special.log_softmax(t, 1).numpy(), torch.special.log_softmax(tt, 1).numpy())
    np.testing.assert_allclose(numdiff.special.polygamma(2, t).numpy(), torch.special.polygamma(2, tt).numpy(), rtol=1e-13)
    y = np.array([2.5, 4.0])
    np.testing.assert_allclose(numdiff.special.multigammaln(numdiff.tensor(y), 3).numpy(),
                               torch.special.multigammaln(torch.tensor(y), 3).numpy(), rtol=1e-14)
    np.testing.assert_allclose(numdiff.tensor(y).mvlgamma(2).numpy(), torch.tensor(y).mvlgamma(2).numpy(), rtol=1e-14)


def test_in_place_forms():
    x = numdiff.tensor([0.5, 2.5])
    x.lgamma_()
    np.testing.assert_allclose(x.numpy(), torch.tensor([0.5, 2.5]).lgamma_().numpy())
    y = numdiff.tensor([0.5, -0.25])
    y.erfinv_()
    np.testing.assert_allclose(y.numpy(), torch.tensor([0.5, -0.25]).erfinv_().numpy())


def test_integer_inputs_become_float32_as_in_torch():
    out = numdiff.lgamma(numdiff.tensor([1, 2, 5]))
    assert out.dtype == numdiff.float32
    np.testing.assert_allclose(out.numpy(), torch.lgamma(torch.tensor([1, 2, 5])).numpy())


def test_bad_arguments_name_the_function_and_the_value():
    x = numdiff.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"polygamma: n must be non-negative, got -1"):
        numdiff.polygamma(-1, x)
    with pytest.raises(TypeError, match=r"polygamma: n must be an int, got float 1.5"):
        numdiff.polygamma(1.5, x)
    with pytest.raises(TypeError, match=r"polygamma: n must be an int, got bool"):
        x.polygamma(True)
    with pytest.raises(TypeError, match=r"logit: eps must be a number or None, got str"):
        numdiff.logit(x, "0.1")
    with pytest.raises(ValueError, match=r"mvlgamma: p must be a positive int, got 0"):
        numdiff.mvlgamma(x, 0)
    with pytest.raises(TypeError, match=r"lgamma: expected a Tensor, got list"):
        numdiff.lgamma([1.0])


def test_scalar_code_is_the_same_in_python_and_compiled():
    # The CUDA simulator runs the Python source; the CPU loops run the @njit version of it.
    for x in [-2.5, -1e-9, 0.3, 1.4616321449683622, 7.0, 1e6]:
        assert _special.digamma(x) == _special.digamma_scalar(x)
        assert _special.polygamma(x, 2.0) == _special.polygamma_scalar(x, 2.0)
    for x in [-0.999, -1e-12, 0.5, 0.75, 1 - 1e-15]:
        assert _special.erfinv(x) == _special.erfinv_scalar(x)


def test_log_ndtr_stays_finite_and_accurate_in_the_lower_tail():
    # log(ndtr(x)) once gave -inf (and a NaN gradient) wherever ndtr underflows, x < -38 in float64.
    x = np.array([-1000.0, -40.0, -20.5, -19.5, -12.0, -10.5, -9.5, -3.0, 0.0, 2.0])
    leaf = numdiff.tensor(x, requires_grad=True)
    out = numdiff.special.log_ndtr(leaf)
    out.sum().backward()
    value = [float(mpmath.log(mpmath.ncdf(mpmath.mpf(v)))) for v in x]
    slope = [float(mpmath.npdf(mpmath.mpf(v)) / mpmath.ncdf(mpmath.mpf(v))) for v in x]
    np.testing.assert_allclose(out.detach().numpy(), value, rtol=1e-14)
    np.testing.assert_allclose(leaf.grad.numpy(), slope, rtol=1e-12)
    single = numdiff.tensor(x.astype(np.float32), requires_grad=True)
    out32 = numdiff.special.log_ndtr(single)
    out32.sum().backward()
    assert out32.dtype == numdiff.float32
    np.testing.assert_allclose(out32.detach().numpy(), value, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(single.grad.numpy(), slope, rtol=1e-5)
    numdiff.autograd.gradcheck(numdiff.special.log_ndtr, numdiff.tensor([-25.0, -20.0001, -15.0, -1.0], dtype=numdiff.float64, requires_grad=True))


def test_ndtri_keeps_its_digits_in_the_lower_tail():
    # sqrt(2) erfinv(2p - 1) loses p's digits to the cancellation in 2p - 1: 1e-5 relative error at
    # p = 1e-12, and -inf from p = 1e-17 on (torch: -9.26 at 1e-20).
    p = np.array([0.0, 1e-300, 1e-100, 1e-20, 1e-12, 1e-5, 0.00999, 0.0100001, 0.3, 0.5, 0.9, 1.0, -0.1])
    leaf = numdiff.tensor(p, requires_grad=True)
    out = numdiff.special.ndtri(leaf)
    out.backward(numdiff.ones_like(out))  # (not .sum(): -inf + inf would warn)
    t = torch.tensor(p, requires_grad=True)
    expected = torch.special.ndtri(t)
    expected.backward(torch.ones_like(expected))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(leaf.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    slope = [float(1 / mpmath.npdf(mpmath.mpf(v))) for v in expected.detach().numpy()[1:-2]]
    np.testing.assert_allclose(leaf.grad.numpy()[1:-2], slope, rtol=1e-12)
    single = numdiff.special.ndtri(numdiff.tensor(p[3:-2].astype(np.float32)))  # (1e-100 is 0 in float32)
    assert single.dtype == numdiff.float32
    np.testing.assert_allclose(single.numpy(), expected.detach().numpy()[3:-2], rtol=1e-6)
    tail = numdiff.tensor([1e-4, 0.004, 0.0099], dtype=numdiff.float64, requires_grad=True)  # (p > eps)
    assert numdiff.autograd.gradcheck(numdiff.special.ndtri, tail)
    assert numdiff.autograd.gradgradcheck(numdiff.special.ndtri, tail)
