"""numdiff.kernels._blas.gemm on one-row and one-column products, which it runs as one BLAS gemv:
every transpose combination (and a @ b.T with a few rows, one gemv per row), strided views (a column block, a row of a larger array), alpha and
beta (beta 0 never reads c), float32 and float64, against NumPy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from numdiff.kernels._blas import gemm, gemm_batch, prepare_blas
from numdiff.kernels._gemm_body import GEMV_ROWS_MAX

prepare_blas()


def _operands(rng, m, n, k, trans_a, trans_b, dtype):
    """op(a) (m, k) and op(b) (k, n) stored transposed when asked, each a view into a wider array
    (row strides larger than the row) so the leading dimensions are not the shapes."""
    a_stored = (k, m) if trans_a else (m, k)
    b_stored = (n, k) if trans_b else (k, n)
    a = rng.standard_normal((a_stored[0], a_stored[1] + 3)).astype(dtype)[:, 1 : 1 + a_stored[1]]
    b = rng.standard_normal((b_stored[0], b_stored[1] + 2)).astype(dtype)[:, : b_stored[1]]
    return a, b, (a.T if trans_a else a), (b.T if trans_b else b)


@pytest.mark.parametrize("m, n, k", [(1, 7, 5), (6, 1, 4), (1, 1, 9), (1, 130, 185), (64, 1, 33)])
@pytest.mark.parametrize("trans_a, trans_b", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_row_or_column_products_match_numpy(m, n, k, trans_a, trans_b, dtype):
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a, b, op_a, op_b = _operands(rng, m, n, k, trans_a, trans_b, dtype)
    expected = op_a.astype(np.float64) @ op_b.astype(np.float64)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    out = np.full((m, n), np.nan, dtype)  # beta 0: the NaN must not be read
    gemm(trans_a, trans_b, 1.0, a, b, 0.0, out)
    np.testing.assert_allclose(out, expected, **tol)
    start = rng.standard_normal((m, n)).astype(dtype)
    wide = np.zeros((m, n + 4), dtype)  # c a view with a row stride wider than its row
    view = wide[:, 2 : 2 + n]
    view[...] = start
    gemm(trans_a, trans_b, 0.5, a, b, 2.0, view)
    np.testing.assert_allclose(view, 0.5 * expected + 2.0 * start, **tol)
    assert not wide[:, :2].any() and not wide[:, 2 + n :].any()


@pytest.mark.parametrize("m", [2, GEMV_ROWS_MAX])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_few_row_products_with_b_transposed_run_a_gemv_per_row_and_match_numpy(m, trans_a, dtype):
    rng = np.random.default_rng(m)
    a, b, op_a, op_b = _operands(rng, m, 130, 185, trans_a, True, dtype)
    expected = op_a.astype(np.float64) @ op_b.astype(np.float64)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    wide = np.full((m, 134), np.nan, dtype)
    view = wide[:, 2:132]
    gemm(trans_a, True, 1.0, a, b, 0.0, view)  # beta 0: the NaN must not be read
    np.testing.assert_allclose(view, expected, **tol)
    gemm(trans_a, True, -0.5, a, b, 3.0, view)
    np.testing.assert_allclose(view, 2.5 * expected, **tol)
    assert np.isnan(wide[:, :2]).all() and np.isnan(wide[:, 132:]).all()


def test_batched_one_row_products_match_numpy():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 1, 6)), rng.standard_normal((3, 4, 6))
    out = np.empty((3, 1, 4))
    gemm_batch(False, True, a, b, out)
    np.testing.assert_allclose(out, a @ b.transpose(0, 2, 1), rtol=1e-12)
