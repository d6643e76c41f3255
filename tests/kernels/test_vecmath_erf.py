"""numdiff.kernels._vecmath's erf: dense grids against the C library and the exact value, every float32
near the switch between its two formulas, C's special values, and the generated kernels (the erf rule,
GELU and its derivative) calling it."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
import scipy.special

import numdiff
from numdiff.kernels import _elementwise_source, _vecmath, elementwise


@numba.njit(error_model="numpy", fastmath={"contract"})
def _erf_loop(out, x):
    # As the generated kernels call it (vectorised, contracted). Not cached: see test_vecmath._apply.
    for i in range(x.size):
        out[i] = _vecmath.erf(x[i])


def _erf(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    _erf_loop(out, x)
    return out


def _ulps(got: np.ndarray, exact: np.ndarray, dtype) -> np.ndarray:
    spacing = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    error = np.abs(got.astype(np.float64) - exact) / spacing
    return np.where(got.astype(np.float64) == exact, 0.0, error)


def _float32_between(lo: float, hi: float) -> np.ndarray:
    """Every float32 in [lo, hi] (0 < lo < hi), from their bit patterns."""
    first, last = np.array([lo, hi], np.float32).view(np.int32)
    return np.arange(first, last + 1, dtype=np.int32).view(np.float32)


def test_float64_within_two_ulps_of_the_c_library_on_a_dense_grid():
    # Both formulas, the switch at 1, the tail's two intervals (switch at 2) and the end at 6.
    x = np.concatenate([np.linspace(-6.5, 6.5, 400001), np.linspace(0.99, 1.01, 20001),
                        np.linspace(1.99, 2.01, 20001), np.linspace(5.8, 6.1, 20001)])
    exact = np.array([math.erf(v) for v in x])
    assert _ulps(_erf(x), exact, np.float64).max() <= 2.0


def test_float64_tiny_and_subnormal_arguments_keep_their_digits():
    x = np.concatenate([np.geomspace(1e-300, 1e-3, 3000), [5e-324, 1e-310, 2.2250738585072014e-308]])
    x = np.concatenate([x, -x])
    exact = np.array([math.erf(v) for v in x])
    assert _ulps(_erf(x), exact, np.float64).max() <= 2.0


@pytest.mark.parametrize(("lo", "hi"), [(0.85, 1.2), (1.2, 4.0), (1e-6, 0.85)])
def test_float32_within_one_ulp_of_the_exact_value_for_every_float32(lo, hi):
    x = _float32_between(lo, hi)
    if x.size > 3_000_000:  # (1e-6, 0.85): every 7th, still all exponents and mantissa patterns
        x = x[::7]
    x = np.concatenate([x, -x])
    exact = scipy.special.erf(x.astype(np.float64))  # float64: far more precise than float32
    got = _erf(x)
    assert got.dtype == np.float32
    assert _ulps(got, exact, np.float32).max() <= 1.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_special_values_are_those_of_c(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 6.0, -6.0, 3.95, -3.95], dtype)
    got = _erf(x)
    assert got[0] == 0.0 and not np.signbit(got[0])
    assert got[1] == 0.0 and np.signbit(got[1])
    np.testing.assert_array_equal(got[[2, 3, 5, 6]], [1.0, -1.0, 1.0, -1.0])
    assert np.isnan(got[4])
    expected = np.array([math.erf(float(v)) for v in x[7:]]).astype(dtype)
    np.testing.assert_array_equal(got[7:], expected)


def test_generated_kernels_call_the_vectorised_erf_in_their_operands_precision():
    for rule in ("erf", "gelu"):
        forward = _elementwise_source.loop_source(["r_0"], [elementwise.RULES[rule].forward], ("x",), "A", (), "flat", False)
        assert "_vecmath.erf_like(" in forward and "math.erf(" not in forward.replace("_vecmath.erf_like(", "")


@numba.njit(error_model="numpy", fastmath={"contract"})
def _erf_like_loop(out, x):
    for i in range(x.size):
        out[i] = _vecmath.erf_like(x[i] * 0.7071067811865476, x[i])  # as gelu's kernel calls it


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_erf_like_is_erf_of_the_argument_rounded_to_the_operands_precision(dtype):
    x = np.linspace(-8, 8, 10001).astype(dtype)
    out = np.empty(x.size, np.float64)
    _erf_like_loop(out, x)
    argument = (x.astype(np.float64) * 0.7071067811865476).astype(dtype)
    np.testing.assert_array_equal(out, _erf(argument).astype(np.float64))
    assert _vecmath.erf_like(0.5, 0.5) == _erf(np.array([0.5]))[0]  # from Python: float64


@pytest.mark.parametrize("dtype", [numdiff.float32, numdiff.float64])
def test_gelu_and_erf_match_scipy_forward_and_backward(dtype):
    data = np.concatenate([np.linspace(-7, 7, 3001), [0.0, -0.0, 1e-8, -1e-8]])
    x = numdiff.tensor(data, dtype=dtype, requires_grad=True)
    x64 = x.detach().numpy().astype(np.float64)
    gelu = numdiff.nn.functional.gelu(x)
    gelu.backward(numdiff.ones_like(gelu))
    rtol = 1e-14 if dtype == numdiff.float64 else 2e-6
    # 1 + erf(x) for x < 0 cancels (as in PyTorch's formula): an absolute error of |x| ulp(1) / 2.
    atol = 8 * np.finfo(np.float64 if dtype == numdiff.float64 else np.float32).eps
    expected = 0.5 * x64 * (1.0 + scipy.special.erf(x64 / math.sqrt(2.0)))
    np.testing.assert_allclose(gelu.detach().numpy(), expected, rtol=rtol, atol=atol)
    derivative = 0.5 * (1.0 + scipy.special.erf(x64 / math.sqrt(2.0))) + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(x.grad.numpy(), derivative, rtol=rtol, atol=atol)
    np.testing.assert_allclose(numdiff.erf(x.detach()).numpy(), scipy.special.erf(x64), rtol=rtol, atol=1e-30)


def test_gelu_double_backward_passes_gradcheck():
    x = numdiff.tensor(np.linspace(-4, 4, 17), dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(numdiff.nn.functional.gelu, (x,))
    assert numdiff.autograd.gradgradcheck(numdiff.nn.functional.gelu, (x,))



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rule", ["erf", "gelu"])
def test_erf_kernels_run_512_bits_wide_with_the_narrow_kernels_bits(rule, dtype):
    # A flat kernel calling erf is marked for 512-bit vectors (numdiff.kernels._elementwise_source);
    # each lane computes what it did at 256 bits, so the results are the same bits.
    wide = _elementwise_source.loop_source(["r_0"], [elementwise.RULES[rule].forward], ("x",), "A", (), "flat", False)
    assert "    wide_kernel()\n" in wide
    x = (np.random.default_rng(3).standard_normal(4099) * 4).astype(dtype)
    results = []
    for source in (wide, wide.replace("    wide_kernel()\n", "")):
        namespace = {}
        # Compiled here without the disk cache, which needs a file.
        exec(compile(source.replace("cache=True", "cache=False"), f"<generated {rule}>", "exec"), namespace)
        results.append(np.empty_like(x))
        namespace["kernel"](results[-1], x)
    assert results[0].tobytes() == results[1].tobytes()
