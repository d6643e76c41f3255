"""numdiff.kernels.matmul.run_pair_checked: two independent products in one parallel region."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels._blas import prepare_blas
from numdiff.kernels.matmul import run_pair_checked


@pytest.mark.parametrize("parts", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pair_matches_numpy_for_every_transpose_flag_and_thread_split(parts, dtype):
    prepare_blas()
    rng = np.random.default_rng(parts)
    for trans in [(False, False, True, False), (False, True, False, False), (True, False, False, True)]:
        ta1, tb1, ta2, tb2 = trans
        # Logical shapes: op(a1) (7, 5) @ op(b1) (5, 9); op(a2) (12, 3) @ op(b2) (3, 4).
        a1 = rng.standard_normal((5, 7) if ta1 else (7, 5)).astype(dtype)
        b1 = rng.standard_normal((9, 5) if tb1 else (5, 9)).astype(dtype)
        a2 = rng.standard_normal((3, 12) if ta2 else (12, 3)).astype(dtype)
        b2 = rng.standard_normal((4, 3) if tb2 else (3, 4)).astype(dtype)
        out1, out2 = np.full((7, 9), np.nan, dtype), np.full((12, 4), np.nan, dtype)
        run_pair_checked(ta1, tb1, a1, b1, out1, ta2, tb2, a2, b2, out2, parts)
        tol = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(out1, (a1.T if ta1 else a1) @ (b1.T if tb1 else b1), rtol=tol, atol=tol)
        np.testing.assert_allclose(out2, (a2.T if ta2 else a2) @ (b2.T if tb2 else b2), rtol=tol, atol=tol)
