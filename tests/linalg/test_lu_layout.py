"""One matrix's LU (solve, slogdet, det, inv and their backwards) factors A^T from a plain copy when A is
row-major (numdiff.ops._lapack._lu_factor): results must not depend on A's memory layout, on the
blocked path (order >= BLOCKED_MIN_ORDER at two threads) or SciPy's."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.ops import _lapack

RNG = np.random.default_rng(29)


@pytest.fixture(params=[(1, 40), (1, 257), (2, _lapack.BLOCKED_MIN_ORDER + 3)], ids=["scipy-40", "scipy-257", "blocked"])
def threads_and_order(request):
    before = numdiff.get_num_threads()
    numdiff.set_num_threads(request.param[0])
    yield request.param
    numdiff.set_num_threads(before)


@pytest.mark.parametrize("order", ["C", "F"])
def test_solve_slogdet_inv_agree_with_numpy_for_either_layout(threads_and_order, order):
    _, n = threads_and_order
    a = np.asarray(RNG.standard_normal((n, n)) / np.sqrt(n) + 2 * np.eye(n), order=order)
    a[[0, 1]] = a[[1, 0]]  # a swap, so the determinant's sign is negative
    b = RNG.standard_normal((n, 3))
    x, factors = _lapack.solve(a, b)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_lapack.solve_factored(factors, b, transposed=True), np.linalg.solve(a.T, b),
                               rtol=1e-10, atol=1e-10)
    sign, logabs, _ = _lapack.slogdet(a)
    expected_sign, expected_logabs = np.linalg.slogdet(a)
    assert sign == expected_sign == -1.0
    np.testing.assert_allclose(logabs, expected_logabs, rtol=1e-12)
    np.testing.assert_allclose(_lapack.inv(a), np.linalg.inv(a), rtol=1e-10, atol=1e-10)


def test_public_gradients_agree_for_either_layout(threads_and_order):
    _, n = threads_and_order
    base = RNG.standard_normal((n, n)) / np.sqrt(n) + 2 * np.eye(n)
    rhs = RNG.standard_normal((n, 2))
    grads = []
    for order in ("C", "F"):
        a = numdiff.tensor(np.asarray(base, order=order), requires_grad=True)
        loss = numdiff.linalg.solve(a, numdiff.tensor(rhs)).sum() + numdiff.linalg.slogdet(a)[1]
        loss = loss + numdiff.linalg.inv(a).sum()
        loss.backward()
        grads.append(a.grad.numpy())
    inverse = np.linalg.inv(base)
    g_x = np.linalg.solve(base.T, np.ones((n, 2)))  # gB of the solve term; gA = -gB X^T
    expected = -g_x @ np.linalg.solve(base, rhs).T + inverse.T - inverse.T @ np.ones((n, n)) @ inverse.T
    for grad in grads:
        np.testing.assert_allclose(grad, expected, rtol=1e-9, atol=1e-9)


def test_singular_row_major_matrix_still_raises(threads_and_order):
    _, n = threads_and_order
    a = RNG.standard_normal((n, n))
    a[:, 3] = 0.0  # exactly singular for A's LU and A^T's: a zero column stays zero through elimination
    with pytest.raises(np.linalg.LinAlgError, match="Singular"):
        _lapack.solve(np.ascontiguousarray(a), RNG.standard_normal((n, 1)))
