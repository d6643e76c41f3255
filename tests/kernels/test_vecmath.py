"""numdiff.kernels._vecmath: accuracy against NumPy's (C library) functions, C99 special values,
and the generated kernels' fallback to the C library for sin/cos of large arguments."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

import numdiff
from numdiff.kernels import _vecmath
from numdiff.kernels._vecmath32 import exp32, exp32_normal
from numdiff.kernels._vecmath64 import exp64, exp64_normal

NAMES = _vecmath.FUNCTIONS


@numba.njit(error_model="numpy", fastmath={"contract"})
def _apply(code, out, x):
    # One loop per function, as the generated kernels call them (vectorised, contracted). Not
    # cached: Numba's cache would not notice a change to _vecmath, which this inlines.
    for i in range(x.size):
        v = x[i]
        if code == 0:
            out[i] = _vecmath.exp(v)
        elif code == 1:
            out[i] = _vecmath.expm1(v)
        elif code == 2:
            out[i] = _vecmath.log(v)
        elif code == 3:
            out[i] = _vecmath.log1p(v)
        elif code == 4:
            out[i] = _vecmath.sin(v)
        elif code == 5:
            out[i] = _vecmath.cos(v)
        elif code == 6:
            out[i] = _vecmath.tanh(v)
        else:
            out[i] = _vecmath.erf(v)


def _reference(name: str):
    """The C library's function on float64 arrays (math.erf for erf, which NumPy lacks)."""
    return np.vectorize(math.erf, otypes=[np.float64]) if name == "erf" else getattr(np, name)


def _run(name: str, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    _apply(NAMES.index(name), out, x)
    return out


def _samples(name: str, dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    big = 700.0 if dtype == np.float64 else 87.0
    ranges = {
        "exp": [rng.uniform(-big - 40, big, 20000), rng.standard_normal(20000)],
        "expm1": [rng.uniform(-40, big, 20000), rng.standard_normal(20000) * 0.3, rng.uniform(-1e-6, 1e-6, 2000)],
        "log": [np.exp(rng.uniform(-big, big, 20000)), rng.uniform(0.5, 2.0, 20000)],
        "log1p": [rng.uniform(-1, 10, 20000), rng.standard_normal(20000) * 1e-4, np.exp(rng.uniform(-30, big, 2000))],
        "sin": [rng.uniform(-5e4, 5e4, 20000), rng.uniform(-7, 7, 20000), rng.uniform(-1e-6, 1e-6, 2000)],
        "cos": [rng.uniform(-5e4, 5e4, 20000), rng.uniform(-7, 7, 20000)],
        "tanh": [rng.uniform(-20, 20, 20000), rng.standard_normal(20000) * 0.05, rng.uniform(-1e-6, 1e-6, 2000)],
        "erf": [rng.uniform(-7, 7, 20000), rng.standard_normal(20000), rng.uniform(0.9, 2.1, 20000),
                rng.uniform(-1e-6, 1e-6, 2000), rng.uniform(-1e-300, 1e-300, 200)],
    }
    return np.concatenate(ranges[name]).astype(dtype)


def _ulps(got: np.ndarray, exact: np.ndarray, dtype) -> np.ndarray:
    """|got - exact| in units of the last place of `dtype` at the exact value (NaN/inf matched)."""
    spacing = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    with np.errstate(all="ignore"):
        error = np.abs(got.astype(np.float64) - exact) / spacing
    same = (got.astype(np.float64) == exact) | (np.isnan(got) & np.isnan(exact))
    return np.where(same, 0.0, error)


@pytest.mark.parametrize("name", NAMES)
def test_float64_within_two_ulps_of_numpy(name):
    x = _samples(name, np.float64)
    exact = _reference(name)(x)  # the C library's, within an ulp of exact
    assert _ulps(_run(name, x), exact, np.float64).max() <= 2.0


@pytest.mark.parametrize("name", NAMES)
def test_float32_within_one_ulp_of_the_exact_result(name):
    x = _samples(name, np.float32)
    exact = _reference(name)(x.astype(np.float64))  # far more precise than float32
    got = _run(name, x)
    assert got.dtype == np.float32
    assert _ulps(got, exact, np.float32).max() <= 1.0


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -5e-324, 2e-310, 709.78, 709.79, -745.1,
           -745.2, 1e308, -1e308, np.pi / 2, np.pi, 1e-20, -1e-20]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", NAMES)
def test_special_values_follow_the_c_library(name, dtype):
    with np.errstate(all="ignore"):
        x = np.array(SPECIAL, dtype)
        if name in _vecmath.GUARDED:
            x = x[~(np.abs(x) >= _vecmath.SIN_COS_LIMIT) | ~np.isfinite(x)]
        exact = _reference(name)(x.astype(np.float64)).astype(dtype)
    got = _run(name, x)
    for value, ours, theirs in zip(x, got, exact):
        if np.isnan(theirs):
            assert np.isnan(ours), (name, value, ours)
        elif theirs == 0 or np.isinf(theirs):
            assert ours == theirs and np.signbit(ours) == np.signbit(theirs), (name, value, ours, theirs)
        else:
            assert _ulps(np.array([ours]), np.array([float(theirs)]), dtype)[0] <= 2.0, (name, value, ours, theirs)


def test_outside_sin_cos_flags_only_large_finite_arguments():
    limit = _vecmath.SIN_COS_LIMIT
    for value, expected in [(0.0, False), (limit * 0.99, False), (-limit, True), (1e300, True),
                            (np.inf, False), (np.nan, False)]:
        assert _vecmath.outside_sin_cos(value) is expected or bool(_vecmath.outside_sin_cos(value)) == expected


@numdiff.elementwise
def _wave(x):
    return math.sin(x) * 2.0 + math.cos(3.0 * x)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernels_recompute_with_the_c_library_when_an_argument_is_beyond_the_range(threads, dtype):
    # One large argument among many (above the parallel grain): the whole loop is recomputed
    # with math.sin/cos, so every element, large or not, is the C library's.
    x = np.random.default_rng(3).uniform(-4, 4, 40000).astype(dtype)
    x[12345] = 3e6
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = _wave(numdiff.tensor(x)).numpy()
    finally:
        numba.set_num_threads(previous)
    x64 = x.astype(np.float64)
    expected = (np.sin(x64) * 2.0 + np.cos(3.0 * x64)).astype(dtype)
    tolerance = 1e-15 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
    assert got[12345] == pytest.approx(math.sin(float(x[12345])) * 2.0 + math.cos(3.0 * float(x[12345])), abs=1e-6)


def test_eager_rule_kernels_beyond_the_range_match_numpy():
    x = numdiff.tensor(np.array([0.5, 1e7, -3e9, 2.0]), requires_grad=True)
    x.sin().sum().backward()  # backward: g * cos(x), one generated loop
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-15)


def test_compiled_fused_sin_beyond_the_range_matches_eager():
    def f(x):
        return ((x * 3.0).sin() * x.cos()).sum()

    compiled = numdiff.compile(f)
    data = np.array([0.25, 7e5, -1e8, 3.0, 1e-3])
    x = numdiff.tensor(data, requires_grad=True)
    compiled(x).backward()
    y = numdiff.tensor(data, requires_grad=True)
    f(y).backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-13)


def test_elementwise_division_by_zero_gives_inf_as_pytorch():
    @numdiff.elementwise
    def reciprocal(x):
        return 1.0 / x

    out = reciprocal(numdiff.tensor([0.0, -0.0, 2.0])).numpy()
    assert out[0] == np.inf and out[1] == -np.inf and out[2] == 0.5


@pytest.mark.parametrize("threads", [1, 2])
def test_strided_rule_kernels_beyond_the_range_match_numpy(threads):
    # A transposed operand takes the N-d loop (prange over rows, chunked, when parallel).
    data = np.random.default_rng(5).uniform(-3, 3, (300, 200))
    data[17, 3] = -8e7
    x = numdiff.tensor(data).T
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = (x * 2.0).sin().numpy()  # a contiguous product: the flat loop
        y = numdiff.tensor(data, requires_grad=True)
        y.T.sin().backward(numdiff.ones(200, 300))  # backward reads the transposed input: N-d loop
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_allclose(got, np.sin(2.0 * data.T), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(y.grad.numpy(), np.cos(data), rtol=1e-15, atol=1e-15)


_FIRST = """
import math, numpy as np, numdiff
@numdiff.elementwise
def softclip(x, lo, hi):
    return lo + (hi - lo) * (math.tanh(x) + 1) / 2 if x > 0 else x * x
x = np.random.default_rng(0).standard_normal((3, 4))
{warm}
out = softclip(numdiff.tensor(x), -1.0, numdiff.tensor([0.5, 1.0, 1.5, 2.0])).numpy()
expected = np.where(x > 0, -1.0 + (np.array([0.5, 1.0, 1.5, 2.0]) + 1.0) * (np.tanh(x) + 1) / 2, x * x)
np.testing.assert_allclose(out, expected, rtol=1e-13)
"""

_WARM = """
import numba
from numdiff.kernels import _vecmath
@numba.njit(error_model="numpy", fastmath={"contract"})
def other(code, out, v):
    for i in range(v.size):
        if code == 0:
            out[i] = _vecmath.exp(v[i])
        elif code == 1:
            out[i] = _vecmath.expm1(v[i])
        elif code == 2:
            out[i] = _vecmath.log(v[i])
        elif code == 3:
            out[i] = _vecmath.log1p(v[i])
        elif code == 4:
            out[i] = _vecmath.sin(v[i])
        elif code == 5:
            out[i] = _vecmath.cos(v[i])
        else:
            out[i] = _vecmath.tanh(v[i])
other(0, np.empty(4), np.ones(4))
"""


def test_a_kernel_loaded_from_the_disk_cache_calls_the_functions_it_was_compiled_with(tmp_path):
    # A second process compiles other _vecmath functions first, then loads the @elementwise kernel
    # from the cache the first process wrote: before each implementation had its own qualified
    # name, the loaded kernel could call another function compiled under the same symbol.
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])  # this checkout's numdiff, not another install
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    for k, warm in enumerate(("", _WARM)):
        script = tmp_path / f"process_{k}.py"  # @elementwise reads the function's source from a file
        script.write_text(_FIRST.format(warm=warm))
        result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_float32_sin_and_cos_are_correctly_rounded_but_for_rare_halfway_cases(name):
    # Computed in float64 and rounded once: an exhaustive run over every float32 below
    # SIN_COS_LIMIT found 0.5010 ulp at worst. Here: the samples, plus the arguments closest to
    # multiples of pi/2, where the reduction cancels most digits.
    near = np.nextafter((np.arange(1, 30000, 7) * (np.pi / 2)).astype(np.float32), np.float32(np.inf))
    x = np.concatenate([_samples(name, np.float32), near, -near])
    exact = getattr(np, name)(x.astype(np.float64))
    assert _ulps(_run(name, x), exact, np.float32).max() <= 0.503


def test_the_generated_kernels_digest_covers_every_vecmath_file():
    # Generated kernels carry a digest of _vecmath's sources in their text (so in their cache key):
    # a file left out would let a stale cached kernel survive a change to it.
    from pathlib import Path

    here = Path(_vecmath.__file__).parent
    assert sorted(_vecmath.SOURCES) == sorted(p.name for p in here.glob("_vecmath*.py"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 31, 1024, 65537])
def test_lane_sum_adds_in_float64(dtype, size):
    values = np.random.default_rng(size).standard_normal(size).astype(dtype) * 1e3
    exact = math.fsum(values.astype(np.float64).tolist())
    total = _vecmath.lane_sum(values)
    assert type(total) is float
    # float64 accumulation: within a few float64 ulps of the magnitude of the summands' sum.
    assert abs(total - exact) <= 4 * size * np.finfo(np.float64).eps * max(1.0, np.abs(values).sum(dtype=np.float64))
    if size:
        assert _vecmath.lane_sum(values[::-1].copy()) == pytest.approx(exact, rel=1e-12, abs=1e-9)


def test_lane_sum_keeps_nan_and_inf():
    assert math.isnan(_vecmath.lane_sum(np.array([1.0, np.nan] + [0.0] * 20)))
    assert math.isnan(_vecmath.lane_sum(np.array([np.inf, -np.inf] + [1.0] * 9)))
    assert _vecmath.lane_sum(np.array([np.inf] + [1.0] * 30, np.float32)) == math.inf
    # float32 summands past float32's range still add up in float64.
    assert _vecmath.lane_sum(np.full(40, 3e38, np.float32)) == pytest.approx(40 * float(np.float32(3e38)))


@numba.njit(error_model="numpy", fastmath={"contract"})
def _apply_wide(cosine, out, x):
    for i in range(x.size):
        out[i] = _vecmath.cos_wide(x[i]) if cosine else _vecmath.sin_wide(x[i])


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_wide_sin_and_cos_are_the_float32_results_before_their_rounding(name):
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-5e4, 5e4, 20000), rng.uniform(-7, 7, 20000), [0.0, -0.0, np.inf, np.nan]])
    x32 = x.astype(np.float32)
    wide = np.empty(x32.size)
    _apply_wide(name == "cos", wide, x32)
    # Rounded, they are the float32 functions exactly; unrounded, within the polynomials' 2 ** -33.
    np.testing.assert_array_equal(wide.astype(np.float32), _run(name, x32))
    exact = getattr(np, name)(x32.astype(np.float64))
    finite = np.isfinite(exact) & (exact != 0)
    assert (np.abs(wide[finite] - exact[finite]) <= 2.0**-33 * np.abs(exact[finite]) + 2.0**-60).all()
    assert np.signbit(wide[x32.size - 3]) == (name == "sin")  # sin(-0.0) is -0.0
    assert np.isnan(wide[-2:]).all()
    # A float64 argument takes the float64 function.
    wide64 = np.empty(x.size)
    _apply_wide(name == "cos", wide64, x)
    np.testing.assert_array_equal(wide64, _run(name, x))


def test_a_widened_float32_sin_or_cos_becomes_the_wide_function_and_stays_guarded():
    from numdiff.kernels._codegen import vector_math_source

    source = vector_math_source(
        "@njit\ndef k(a, b):\n    for i in range(a.size):\n        b[i] = np.float64(math.cos(a[i])) * math.exp(a[i])\n"
    )
    fast, exact = source.split("if outside_sin_cos:")
    assert "_vecmath.cos_wide(a[i])" in fast and "_vecmath.outside_sin_cos(a[i])" in fast
    assert "_vecmath.exp(a[i])" in fast
    assert "np.float64(math.cos(a[i]))" in exact  # the C library's, for arguments past the range


def test_power_gives_pows_value_for_the_special_exponents_and_every_kind_of_base():
    from numba import njit

    from numdiff.kernels import _vecmath

    @njit(error_model="numpy")  # as the generated kernels are: 1 / 0 is inf, not an exception
    def powers(x, e):
        out = np.empty(x.size)
        for i in range(x.size):
            out[i] = _vecmath.power(x[i], e)
        return out

    @njit(error_model="numpy")
    def c_pow(x, e):  # the C library's pow, which the kernels called before
        out = np.empty(x.size)
        for i in range(x.size):
            out[i] = np.float64(x[i]) ** e
        return out

    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e154, 1e308, -3.5]
    for dtype in (np.float64, np.float32):
        bases = np.concatenate([np.array(special), rng.standard_normal(200) * 10]).astype(dtype)
        for e in (0.0, 1.0, 2.0, 3.0, -1.0, 0.5, 2.5, -2.0, 7.0):
            expected = c_pow(bases, e)
            got = powers(bases, e)
            np.testing.assert_array_max_ulp(got, expected, maxulp=1)
            # signs of zeros and infinities, and NaN where pow gives NaN
            assert np.array_equal(np.signbit(got[expected == 0]), np.signbit(expected[expected == 0]))
            assert np.array_equal(np.isnan(got), np.isnan(expected))


@numba.njit(error_model="numpy", fastmath={"contract"})
def _exp_pairs32(x, normal, full):
    for i in range(x.size):
        normal[i] = exp32_normal(x[i])
        full[i] = exp32(x[i])


@numba.njit(error_model="numpy", fastmath={"contract"})
def _exp_pairs64(x, normal, full):
    for i in range(x.size):
        normal[i] = exp64_normal(x[i])
        full[i] = exp64(x[i])


@pytest.mark.parametrize("dtype, low, high", [(np.float32, -87.0, 88.0), (np.float64, -708.0, 709.0)])
def test_exp_normal_is_exp_bit_for_bit_where_the_result_is_normal(dtype, low, high):
    """erf's Gaussian calls the unclamped, one-scale exp: on its whole domain it must be exp."""
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(low, high, 50000), rng.uniform(-16, 0, 50000), [low, high, 0.0, -0.0]]).astype(dtype)
    normal, full = np.empty_like(x), np.empty_like(x)
    (_exp_pairs32 if dtype == np.float32 else _exp_pairs64)(x, normal, full)
    assert np.all(np.isfinite(normal)) and np.all(normal >= np.finfo(dtype).tiny)
    np.testing.assert_array_equal(normal.view(np.uint32 if dtype == np.float32 else np.uint64),
                                  full.view(np.uint32 if dtype == np.float32 else np.uint64))
