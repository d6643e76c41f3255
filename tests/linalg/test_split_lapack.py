"""The square SVD and the symmetric eigendecomposition with LAPACK's back-transforms on numdiff's threads
(numdiff.kernels.linalg_split_svd, linalg_split_eigh) against gesdd and syevd, and the public svd and eigh
on them (from numdiff.ops._lapack.BLOCKED_MIN_ORDER at more than one thread, made small here): values,
float64 gradcheck, the matrices they leave to LAPACK's drivers, bad input."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.linalg
import torch

import numdiff
from numdiff import linalg
from numdiff.autograd import gradcheck
from numdiff.kernels import linalg_split_eigh, linalg_split_svd
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


@pytest.mark.parametrize("n", [1, 2, 3, 17, 26, 64, 130])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("upper", [False, True])
def test_eigh_split_is_syevd_and_reads_one_triangle(n, dtype, threads, upper):
    x = RNG.standard_normal((n, n))
    a = (x + x.T).astype(dtype)
    messy = a + (np.tril if upper else np.triu)(RNG.standard_normal((n, n)), -1 if upper else 1).astype(dtype)
    w, v, info = linalg_split_eigh.eigh_split(messy, upper, threads)
    expected_w, expected_v, expected_info = scipy.linalg.get_lapack_funcs("syevd", dtype=dtype)(
        a, lower=0 if upper else 1)
    assert info == expected_info == 0
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(w, expected_w, rtol=0, atol=tolerance * np.abs(expected_w).max())
    np.testing.assert_allclose(v, expected_v, rtol=0, atol=10 * tolerance)  # the same signs as syevd's


@pytest.mark.parametrize(("a", "error", "match"), [
    (np.ones((3, 2)), ValueError, r"eigh_split: expected one square matrix, got shape \(3, 2\)"),
    (np.ones((2, 2), np.int32), TypeError, "eigh_split: expected float32 or float64, got int32"),
])
def test_eigh_split_rejects_bad_input(a, error, match):
    with pytest.raises(error, match=match):
        linalg_split_eigh.eigh_split(a)


@pytest.fixture
def split_eigh_path(monkeypatch):
    """The public eigh on the split kernel from order 8 at two threads; yields how often it ran."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs a Numba pool of two threads")
    monkeypatch.setattr(_lapack, "BLOCKED_MIN_ORDER", 8)
    used = []
    original = linalg_split_eigh.eigh_split
    monkeypatch.setattr(linalg_split_eigh, "eigh_split", lambda *args: used.append(True) or original(*args))
    before = numdiff.get_num_threads()
    numdiff.set_num_threads(2)
    yield used
    numdiff.set_num_threads(before)


def test_public_eigh_on_the_split_path_matches_torch_and_passes_gradcheck(split_eigh_path):
    for shape, uplo in [((12, 12), "L"), ((2, 33, 33), "U")]:  # above the Jacobi kernel's orders; a batch
        x = RNG.standard_normal(shape)
        a = x + np.swapaxes(x, -1, -2)
        w, v = linalg.eigh(numdiff.tensor(a), UPLO=uplo)
        np.testing.assert_allclose(w.numpy(), torch.linalg.eigvalsh(torch.tensor(a)).numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose((v.numpy() * w.numpy()[..., None, :]) @ np.swapaxes(v.numpy(), -1, -2), a,
                                   rtol=0, atol=1e-12)
    assert len(split_eigh_path) == 3  # each matrix
    weight = numdiff.tensor(RNG.standard_normal((12, 12)))

    def loss(m):
        w, v = linalg.eigh(m + m.mT)
        return w.sum() + (v * v * weight).sum()

    assert gradcheck(loss, (numdiff.tensor(RNG.standard_normal((12, 12)), requires_grad=True),))
    assert len(split_eigh_path) > 3


@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_public_eigh_leaves_matrices_syevd_rescales_to_syevd(split_eigh_path, scale):
    x = RNG.standard_normal((12, 12))
    a = (x + x.T) * scale
    w = linalg.eigvalsh(numdiff.tensor(a))
    np.testing.assert_allclose(w.numpy(), scipy.linalg.eigvalsh(a), rtol=1e-12)
    assert not split_eigh_path
