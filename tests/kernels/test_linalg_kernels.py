"""The batched linear-algebra launchers on the CPU (numdiff.kernels.triangular): values against NumPy,
info for the matrices that fail, and bad arguments refused before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels.triangular import cholesky_batched, lu_solve_batched, triangular_solve

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve_matches_numpy(dtype, upper, unit):
    a = (np.tril(RNG.standard_normal((4, 5, 5))) + 3 * np.eye(5)).astype(dtype)
    a = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if upper else a
    b = RNG.standard_normal((4, 5, 2)).astype(dtype)
    out = np.empty_like(b)
    triangular_solve(a, b, out, upper, unit)
    used = np.triu(a) if upper else np.tril(a)
    if unit:
        used = used - np.diagonal(used, axis1=-2, axis2=-1)[..., None] * np.eye(5) + np.eye(5)
    np.testing.assert_allclose(out, np.linalg.solve(used, b), rtol=1e-4 if dtype == np.float32 else 1e-12)


def test_cholesky_batched_reports_the_failing_minor():
    x = RNG.standard_normal((3, 4, 4))
    a = x @ np.swapaxes(x, -1, -2) + 4 * np.eye(4)
    a[1, 2, 2] = -50.0
    out, info = np.empty_like(a), np.zeros(3, np.int32)
    cholesky_batched(a, out, info)
    assert info.tolist() == [0, 3, 0]
    np.testing.assert_allclose(out[[0, 2]], np.linalg.cholesky(a[[0, 2]]), rtol=1e-12)
    assert np.isnan(out[1]).all()


def test_lu_solve_batched_reports_the_zero_pivot():
    a = RNG.standard_normal((2, 3, 3))
    a[1] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
    b = RNG.standard_normal((2, 3, 1))
    out, info = np.empty_like(b), np.zeros(2, np.int32)
    lu_solve_batched(a, b, out, info)
    assert info[0] == 0 and info[1] > 0
    np.testing.assert_allclose(out[0], np.linalg.solve(a[0], b[0]), rtol=1e-12)


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="triangular_solve: expected"):
        triangular_solve(np.ones((2, 3, 4)), np.ones((2, 3, 1)), np.ones((2, 3, 1)), False, False)
    with pytest.raises(TypeError, match="cholesky_batched: expected one float dtype"):
        cholesky_batched(np.ones((1, 2, 2)), np.ones((1, 2, 2), np.float32), np.zeros(1, np.int32))
