"""One triangular solve goes straight to LAPACK's trtrs: the same call SciPy's solve_triangular
makes, so the numbers must be SciPy's bit for bit, and a zero pivot must still raise."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from numdiff.ops.linalg_solve import triangular_solve_array

RNG = np.random.default_rng(20)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("n, k", [(1, 1), (20, 1), (7, 30), (80, 5)])
def test_one_triangular_solve_is_scipys_bit_for_bit(dtype, upper, unit, n, k):
    a = (RNG.standard_normal((n, n)) + 4 * np.eye(n)).astype(dtype)
    a = np.triu(a) if upper else np.tril(a)
    b = RNG.standard_normal((n, k)).astype(dtype)
    ours = triangular_solve_array(a, b, upper, unit)
    theirs = scipy.linalg.solve_triangular(a, b, lower=not upper, unit_diagonal=unit, check_finite=False)
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def test_one_triangular_solve_with_a_zero_pivot_raises():
    a = np.tril(np.ones((3, 3)))
    a[1, 1] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="diagonal 1"):
        triangular_solve_array(a, np.ones((3, 1)), False, False)
