"""numdiff's blocked parallel LU, Cholesky and triangular solves (numdiff.kernels.linalg_blocked) against
LAPACK's, around multiples of the block size, and the public functions that use them from
numdiff.ops._lapack.BLOCKED_MIN_ORDER at more than one thread (made small here: order 19, blocks
of 4):
values, float64 gradcheck, LAPACK's info codes and the LinAlgError naming the op."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.linalg
import torch

import numdiff
from numdiff import linalg
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.kernels import linalg_blocked
from numdiff.ops import _lapack

RNG = np.random.default_rng(2029)
TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12}
# Block 4 runs every step on the calling thread; blocks 32 and 64 at orders 63 to 197 split the updates
# (and at two threads factor the LU's next panel beside them).
SIZES = [(4, n) for n in (3, 4, 5, 17)] + [(64, n) for n in (63, 64, 65, 197)] + [(32, 130)]
THREADS = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})
ORDER = _lapack._LU_KERNEL_MAX_ORDER + 3  # public functions: above the small kernels' orders (19: 4 blocks and 3)


def _general(n, dtype):
    return (RNG.standard_normal((n, n)) + 2 * np.sqrt(n) * np.eye(n) * RNG.choice([-1, 1], n)).astype(dtype)


def _spd(n, dtype):
    x = RNG.standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


def _close(actual, expected, dtype):
    scale = max(np.abs(expected).max(), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE[dtype] * scale)


def _lapack_for(name, dtype):
    return scipy.linalg.get_lapack_funcs(name, dtype=dtype)


@pytest.mark.parametrize(("block", "n"), SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", THREADS)
def test_lu_factor_blocked_is_getrf(block, n, dtype, threads):
    # float64: no diagonal boost, nearly every row gets swapped; float32: a boost keeps the growth (and so
    # the rounding the two summation orders differ by) within 1e-5, with a few swaps left
    boost = 1.0 if dtype == np.float32 else 0.0
    a = (RNG.standard_normal((n, n)) / np.sqrt(n) + boost * np.eye(n)).astype(dtype)
    lu, piv, info = linalg_blocked.lu_factor_blocked(a, block, threads)
    expected_lu, expected_piv, expected_info = _lapack_for("getrf", dtype)(a)
    assert info == expected_info == 0
    np.testing.assert_array_equal(piv, expected_piv)
    _close(lu, expected_lu, dtype)


@pytest.mark.parametrize(("block", "n", "late"), [(4, 17, 14), (64, 197, 194), (64, 197, 100), (32, 197, 33)])
@pytest.mark.parametrize("threads", THREADS)
def test_lu_factor_blocked_reports_a_zero_pivot_in_a_late_block_as_getrf(block, n, late, threads):
    # at two threads, the panels at 64 (block 64) and 32 (block 32) are factored by look-ahead, beside
    # the previous step's update
    a = RNG.standard_normal((n, n))
    a[:, late] = 0.0  # U[late, late] is exactly zero
    lu, piv, info = linalg_blocked.lu_factor_blocked(a, block, threads)
    expected_lu, expected_piv, expected_info = _lapack_for("getrf", np.float64)(a)
    assert info == expected_info == late + 1
    np.testing.assert_array_equal(piv, expected_piv)
    _close(lu, expected_lu, np.float64)


@pytest.mark.parametrize(("block", "n"), SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", THREADS)
def test_cholesky_blocked_is_potrf_and_reads_the_lower_triangle(block, n, dtype, threads):
    spd = _spd(n, dtype)
    messy = spd + np.triu(RNG.standard_normal((n, n)), 1).astype(dtype)  # the upper triangle is not read
    low, info = linalg_blocked.cholesky_blocked(messy, block, threads)
    assert info == 0
    _close(low, scipy.linalg.cholesky(spd, lower=True), dtype)
    assert not np.triu(low, 1).any()


@pytest.mark.parametrize(("block", "n", "late"), [(4, 17, 14), (4, 17, 16), (64, 197, 196), (64, 197, 130)])
@pytest.mark.parametrize("threads", THREADS)
def test_cholesky_blocked_reports_the_failing_minor_of_a_late_block_as_potrf(block, n, late, threads):
    spd = _spd(n, np.float64)
    spd[late, late] = -1.0
    _, info = linalg_blocked.cholesky_blocked(spd, block, threads)
    assert info == _lapack_for("potrf", np.float64)(spd, lower=1)[1] == late + 1


@pytest.mark.parametrize("n", [5, 65, 197])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("upper", "unit"), [(True, False), (False, False), (False, True)])
@pytest.mark.parametrize("threads", THREADS)
def test_solve_triangular_blocked_is_trsm(n, dtype, upper, unit, threads):
    t = (np.triu if upper else np.tril)(_general(n, dtype))
    b = RNG.standard_normal((n, 2 * n + 1)).astype(dtype)
    x = linalg_blocked.solve_triangular_blocked(t, b, upper, unit, threads)
    expected = scipy.linalg.solve_triangular(t.astype(np.float64), b.astype(np.float64), lower=not upper,
                                             unit_diagonal=unit)
    _close(x, expected, dtype)


@pytest.mark.parametrize("n", [5, 197])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("threads", THREADS)
def test_lu_solve_blocked_is_getrs(n, dtype, transposed, threads):
    a = RNG.standard_normal((n, n)).astype(dtype)
    factors = scipy.linalg.lu_factor(a)
    b = RNG.standard_normal((n, n + 3)).astype(dtype)
    x = linalg_blocked.lu_solve_blocked(factors[0], factors[1], b, transposed, threads)
    _close(x, scipy.linalg.lu_solve(factors, b, trans=1 if transposed else 0), dtype)


@pytest.mark.parametrize("function", [linalg_blocked.lu_factor_blocked, linalg_blocked.cholesky_blocked])
def test_blocked_factorizations_reject_bad_input_naming_the_function(function):
    name = function.__name__
    with pytest.raises(ValueError, match=rf"{name}: expected one square matrix, got shape \(3, 4\)"):
        function(np.ones((3, 4)))
    with pytest.raises(TypeError, match=rf"{name}: expected float32 or float64, got int64"):
        function(np.ones((3, 3), dtype=np.int64))
    with pytest.raises(ValueError, match=rf"{name}: block and threads must be at least 1, got block=0"):
        function(np.eye(3), 0)
    with pytest.raises(ValueError, match="solve_triangular_blocked: B"):
        linalg_blocked.solve_triangular_blocked(np.eye(3), np.ones((4, 1)), True)


@pytest.fixture
def blocked_path(monkeypatch):
    """The public functions on the blocked kernels from order 8, with blocks of 4 and two threads;
    yields the names of the blocked kernels each call used."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs a Numba pool of two threads")
    monkeypatch.setattr(_lapack, "BLOCKED_MIN_ORDER", 8)
    monkeypatch.setattr(linalg_blocked, "DEFAULT_BLOCK", 4)
    monkeypatch.setattr(linalg_blocked, "LU_BLOCK", 4)
    used = []
    for name in ("lu_factor_blocked", "cholesky_blocked", "solve_triangular_blocked", "lu_solve_blocked"):
        original = getattr(linalg_blocked, name)
        monkeypatch.setattr(linalg_blocked, name,
                            lambda *args, _f=original, _n=name, **kw: used.append(_n) or _f(*args, **kw))
    before = numdiff.get_num_threads()
    numdiff.set_num_threads(2)
    yield used
    numdiff.set_num_threads(before)


def test_public_cholesky_on_the_blocked_path(blocked_path):
    n = ORDER
    a = _spd(n, np.float64)
    low = linalg.cholesky(numdiff.tensor(a))
    np.testing.assert_allclose(low.numpy(), torch.linalg.cholesky(torch.tensor(a)).numpy(), rtol=0, atol=1e-12)
    x = numdiff.tensor(a, requires_grad=True)
    assert gradcheck(lambda m: linalg.cholesky(m @ m.mT / n + numdiff.eye(n, dtype=numdiff.float64)), (x,))
    assert {"cholesky_blocked", "solve_triangular_blocked"} <= set(blocked_path)


def test_public_solve_and_slogdet_on_the_blocked_path(blocked_path):
    a, b = _general(ORDER, np.float64), RNG.standard_normal((ORDER, 3))
    x = linalg.solve(numdiff.tensor(a), numdiff.tensor(b))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
    sign, logabs = linalg.slogdet(numdiff.tensor(a))
    expected = np.linalg.slogdet(a)
    assert sign.item() == expected[0]
    np.testing.assert_allclose(logabs.item(), expected[1], rtol=1e-12)
    ta = numdiff.tensor(a, requires_grad=True)
    tb = numdiff.tensor(b, requires_grad=True)
    assert gradcheck(linalg.solve, (ta, tb))
    assert gradcheck(lambda m: linalg.slogdet(m)[1], (ta,))
    assert gradgradcheck(lambda m: linalg.slogdet(m)[1], (ta,))
    assert {"lu_factor_blocked", "lu_solve_blocked"} <= set(blocked_path)


def test_public_solve_triangular_on_the_blocked_path(blocked_path):
    t, b = np.triu(_general(ORDER, np.float64)), RNG.standard_normal((ORDER, 4))
    x = linalg.solve_triangular(numdiff.tensor(t), numdiff.tensor(b), upper=True)
    np.testing.assert_allclose(x.numpy(), scipy.linalg.solve_triangular(t, b), rtol=0, atol=1e-12)
    assert gradcheck(lambda m, r: linalg.solve_triangular(m, r, upper=True),
                     (numdiff.tensor(t, requires_grad=True), numdiff.tensor(b, requires_grad=True)))
    assert "solve_triangular_blocked" in blocked_path


def test_public_errors_on_the_blocked_path_name_the_op_and_the_entry(blocked_path):
    spd = np.stack([_spd(ORDER, np.float64)] * 2)
    spd[1, 10, 10] = -1.0  # the third block's minor of order 11
    with pytest.raises(numdiff.linalg.LinAlgError, match=r"linalg.cholesky: \(Batch element 1\).*order 11"):
        linalg.cholesky(numdiff.tensor(spd))
    singular = _general(ORDER, np.float64)
    singular[:, 11] = 0.0
    with pytest.raises(numdiff.linalg.LinAlgError, match=r"linalg.solve"):
        linalg.solve(numdiff.tensor(singular), numdiff.tensor(np.ones((ORDER, 1))))
    sign, logabs = linalg.slogdet(numdiff.tensor(singular))
    assert sign.item() == 0.0 and logabs.item() == -np.inf
    assert "cholesky_blocked" in blocked_path and "lu_factor_blocked" in blocked_path


def test_public_inv_on_the_blocked_path(blocked_path):
    a = _general(ORDER, np.float64)
    np.testing.assert_allclose(linalg.inv(numdiff.tensor(a)).numpy(), np.linalg.inv(a), rtol=0, atol=1e-12)
    assert gradcheck(linalg.inv, (numdiff.tensor(a, requires_grad=True),))
    singular = a.copy()
    singular[:, 13] = 0.0
    with pytest.raises(numdiff.linalg.LinAlgError, match=r"linalg.inv: The diagonal element 14 is zero"):
        linalg.inv(numdiff.tensor(singular))
    assert {"lu_factor_blocked", "lu_solve_blocked"} <= set(blocked_path)
