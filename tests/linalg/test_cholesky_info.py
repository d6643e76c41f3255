"""The order of the failing leading minor that cholesky's error and cholesky_ex's info report comes from one
LAPACK factorization per failing matrix (potrf's info). It used to be found by factoring every leading
minor in turn, O(n^4): 40 s for a matrix of order 300 failing at its 296th minor."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff import linalg
from numdiff.kernels import triangular

N, LATE = 60, 57


def _not_positive_definite(dtype=np.float64, batch=()):
    x = np.random.default_rng(7).standard_normal(batch + (N, N))
    a = x @ np.swapaxes(x, -1, -2) / N + np.eye(N)
    a[..., LATE - 1, LATE - 1] = -1.0
    return a.astype(dtype)


@pytest.fixture
def cholesky_calls(monkeypatch):
    """How many times np.linalg.cholesky runs."""
    calls = []
    original = np.linalg.cholesky
    monkeypatch.setattr(np.linalg, "cholesky", lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_ex_reports_potrfs_order_with_no_factorization_per_minor(cholesky_calls, dtype):
    a = _not_positive_definite(dtype, (2,))
    a[0] = np.eye(N)
    result = linalg.cholesky_ex(numdiff.tensor(a))
    expected = torch.linalg.cholesky_ex(torch.tensor(a)).info.numpy()
    np.testing.assert_array_equal(result.info.numpy(), expected)
    assert result.info.numpy().tolist() == [0, LATE]
    assert len(cholesky_calls) <= 2


def test_cholesky_error_names_the_late_minor_with_no_factorization_per_minor(cholesky_calls):
    with pytest.raises(linalg.LinAlgError, match=rf"\(Batch element 1\).*leading minor of order {LATE} "):
        linalg.cholesky(numdiff.tensor(np.stack([np.eye(N), _not_positive_definite()])))
    assert len(cholesky_calls) <= 3


def test_cpu_cholesky_launcher_reports_the_late_minor(cholesky_calls):
    a = _not_positive_definite(batch=(1,))
    out, info = np.empty_like(a), np.zeros(1, np.int32)
    triangular.cholesky_batched(a, out, info)
    assert info.tolist() == [LATE]
    assert np.isnan(out).all()
    assert len(cholesky_calls) <= 2
