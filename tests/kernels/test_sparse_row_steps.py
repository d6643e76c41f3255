"""numdiff.kernels.sparse_row_steps against the NumPy form of each update (PyTorch's order), in
float32 and float64, and the inputs refused before a kernel runs."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels.sparse_row_steps import adagrad_rows, sparse_adam_rows


def _arrays(dtype, rows=7, width=5, seed=0):
    rng = np.random.default_rng(seed)
    tables = [rng.standard_normal((rows, width)).astype(dtype) for _ in range(2)]
    tables.append(np.abs(rng.standard_normal((rows, width))).astype(dtype))
    picked = np.array([0, 3, 6], dtype=np.int64)
    return tables, picked, rng.standard_normal((3, width)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_adam_rows_matches_the_numpy_form(dtype):
    (param, m, v), rows, g = _arrays(dtype)
    expected = [a.copy() for a in (param, m, v)]
    kind = np.dtype(dtype).type
    du = (g - expected[1][rows]) * kind(0.1)
    dv = (g * g - expected[2][rows]) * kind(0.001)
    numer, denom = du + expected[1][rows], np.sqrt(dv + expected[2][rows]) + kind(1e-8)
    expected[1][rows] += du
    expected[2][rows] += dv
    expected[0][rows] += kind(-0.05) * (numer / denom)
    sparse_adam_rows(param, m, v, rows, g, 0.9, 0.999, 1e-8, 0.05)
    for got, want in zip((param, m, v), expected):
        np.testing.assert_allclose(got, want, rtol=2e-7 if dtype == np.float32 else 1e-15)
    untouched = np.setdiff1d(np.arange(7), rows)
    np.testing.assert_array_equal(param[untouched], _arrays(dtype)[0][0][untouched])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adagrad_rows_matches_the_numpy_form(dtype):
    (param, _, state_sum), rows, g = _arrays(dtype)
    want_param, want_sum = param.copy(), state_sum.copy()
    kind = np.dtype(dtype).type
    want_sum[rows] += g * g
    want_param[rows] += (g / (np.sqrt(want_sum[rows]) + kind(1e-10))) * kind(-0.3)
    adagrad_rows(param, state_sum, rows, g, 1e-10, 0.3)
    np.testing.assert_allclose(state_sum, want_sum, rtol=2e-7 if dtype == np.float32 else 1e-15)
    np.testing.assert_allclose(param, want_param, rtol=2e-7 if dtype == np.float32 else 1e-15)


def test_bad_inputs_are_refused_before_a_kernel_runs():
    (param, m, v), rows, g = _arrays(np.float64)
    with pytest.raises(IndexError, match=r"sparse_adam_rows: rows must lie in \[0, 6\], got values in \[0, 7\]"):
        sparse_adam_rows(param, m, v, np.array([0, 7, 1]), g, 0.9, 0.999, 1e-8, 0.1)
    with pytest.raises(ValueError, match="adagrad_rows: state_sum must be C-contiguous"):
        adagrad_rows(param, v[:, :4], rows, g, 1e-10, 0.1)
    with pytest.raises(ValueError, match="adagrad_rows: tables must be 2-D of one shape"):
        adagrad_rows(param, np.zeros((7, 4)), rows, g, 1e-10, 0.1)
    with pytest.raises(ValueError, match="adagrad_rows: tables must be 2-D of one shape"):
        adagrad_rows(param, v, rows, g[:2], 1e-10, 0.1)
    with pytest.raises(TypeError, match="adagrad_rows: all arrays must share one dtype"):
        adagrad_rows(param, v, rows, g.astype(np.float32), 1e-10, 0.1)
