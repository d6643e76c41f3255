"""The square SVD with gesdd's back-transforms side by side (numdiff.kernels.linalg_split_svd) against
gesdd, and the public svd on it (from numdiff.ops._lapack.BLOCKED_MIN_ORDER at more than one thread,
made small here): values, float64 gradcheck, the matrices it leaves to gesdd, bad input."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.linalg
import torch

import numdiff
from numdiff import linalg
from numdiff.autograd import gradcheck
from numdiff.kernels import linalg_split_svd
from numdiff.ops import _lapack

RNG = np.random.default_rng(2031)
TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12}


@pytest.mark.parametrize("n", [1, 2, 3, 17, 64, 65, 130])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_svd_square_is_gesdd(n, dtype, threads):
    a = RNG.standard_normal((n, n)).astype(dtype)
    u, s, vt, info = linalg_split_svd.svd_square(a, threads)
    expected_u, expected_s, expected_vt, expected_info = scipy.linalg.get_lapack_funcs("gesdd", dtype=dtype)(
        a, full_matrices=0)
    assert info == expected_info == 0
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(s, expected_s, rtol=0, atol=tolerance * expected_s[0])
    np.testing.assert_allclose(u, expected_u, rtol=0, atol=10 * tolerance)  # the same signs as gesdd's
    np.testing.assert_allclose(vt, expected_vt, rtol=0, atol=10 * tolerance)


@pytest.mark.parametrize(("a", "error", "match"), [
    (np.ones((3, 2)), ValueError, r"svd_square: expected one square matrix, got shape \(3, 2\)"),
    (np.ones((2, 2), np.int32), TypeError, "svd_square: expected float32 or float64, got int32"),
])
def test_svd_square_rejects_bad_input(a, error, match):
    with pytest.raises(error, match=match):
        linalg_split_svd.svd_square(a)


@pytest.fixture
def split_path(monkeypatch):
    """The public svd on the split kernel from order 8 at two threads; yields how often it ran."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs a Numba pool of two threads")
    monkeypatch.setattr(_lapack, "BLOCKED_MIN_ORDER", 8)
    used = []
    original = linalg_split_svd.svd_square
    monkeypatch.setattr(linalg_split_svd, "svd_square", lambda *args: used.append(True) or original(*args))
    before = numdiff.get_num_threads()
    numdiff.set_num_threads(2)
    yield used
    numdiff.set_num_threads(before)


def test_public_svd_on_the_split_path_matches_torch_and_passes_gradcheck(split_path):
    for shape in [(19, 19), (2, 33, 33)]:  # above the Jacobi kernel's orders; a batch above NumPy's loop's
        a = RNG.standard_normal(shape)
        u, s, vh = linalg.svd(numdiff.tensor(a), full_matrices=False)
        expected = torch.linalg.svdvals(torch.tensor(a)).numpy()
        np.testing.assert_allclose(s.numpy(), expected, rtol=1e-12)
        np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), a, rtol=0, atol=1e-12)
    assert len(split_path) == 3  # each matrix
    n = _lapack._SVD_KERNEL_MAX_ORDER + 1
    a = RNG.standard_normal((n, n))
    weight = numdiff.tensor(RNG.standard_normal((n, n)))

    def loss(m):
        u, s, vh = linalg.svd(m, full_matrices=False)
        return s.sum() + (u * u * weight).sum() + (vh * vh * weight).sum()

    assert gradcheck(loss, (numdiff.tensor(a, requires_grad=True),))
    assert len(split_path) > 3


@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_public_svd_leaves_matrices_gesdd_rescales_to_gesdd(split_path, scale):
    a = RNG.standard_normal((19, 19)) * scale
    s = linalg.svdvals(numdiff.tensor(a))
    np.testing.assert_allclose(s.numpy(), scipy.linalg.svdvals(a), rtol=1e-12)
    assert not split_path


def test_public_svd_of_a_wide_or_nan_matrix_is_gesdd(split_path):
    wide = RNG.standard_normal((19, 22))
    np.testing.assert_allclose(linalg.svdvals(numdiff.tensor(wide)).numpy(), scipy.linalg.svdvals(wide), rtol=1e-12)
    nan = np.full((19, 19), np.nan)
    with pytest.raises(ValueError, match="linalg.svdvals: 'A' holds NaN or inf"):
        linalg.svdvals(numdiff.tensor(nan))
    assert not split_path
