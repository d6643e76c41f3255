"""numdiff's batched small-matrix kernels (numdiff.kernels.linalg_small) against LAPACK, and the public
functions on both sides of the order where numdiff.ops._lapack switches from them to LAPACK:
values against torch, float64 gradcheck and gradgradcheck, singular input and its errors."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import scipy.linalg
import torch

import numdiff
from numdiff import linalg
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.kernels import linalg_small
from numdiff.ops import _lapack

RNG = np.random.default_rng(29)


@pytest.fixture(autouse=True)
def _generator_of_the_test(request):
    """Each test draws from a generator seeded by its own name, so its matrices (and their conditioning)
    do not depend on which tests ran before it."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.name.encode()))
LU_MAX = _lapack._LU_KERNEL_MAX_ORDER
EIGH_MAX = _lapack._EIGH_KERNEL_MAX_ORDER
SVD_MAX = _lapack._SVD_KERNEL_MAX_ORDER


def _general(batch, n, dtype=np.float64):
    return (RNG.standard_normal(batch + (n, n)) + 3 * np.eye(n)).astype(dtype)


def _symmetric(batch, n, dtype=np.float64):
    x = RNG.standard_normal(batch + (n, n))
    return ((x + np.swapaxes(x, -1, -2)) / 2).astype(dtype)


@pytest.mark.parametrize("n", [1, 2, 5, 8, LU_MAX])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lu_factor_batched_is_lapacks_getrf(n, dtype):
    a = _general((6,), n, dtype)
    lu, piv = a.copy(), np.empty((6, n), np.int32)
    info = linalg_small.lu_factor_batched(lu, piv)
    assert not info.any()
    for p in range(6):
        expected_lu, expected_piv = scipy.linalg.lu_factor(a[p].astype(np.float64))
        np.testing.assert_array_equal(piv[p], expected_piv)
        np.testing.assert_allclose(lu[p], expected_lu, rtol=0, atol=1e-5 if dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("n", [1, 2, 7, LU_MAX])
@pytest.mark.parametrize(("dtype", "tol"), [(np.float32, 1e-5), (np.float64, 1e-13)])
def test_cholesky_batched_agrees_with_lapack_and_reports_potrfs_info(n, dtype, tol):
    spd = _symmetric((5,), n) @ _symmetric((5,), n) + n * np.eye(n)
    spd[2, -1, -1] = -1.0  # entry 2: the minor of order n is not positive definite
    spd[4, 0, 0] = 0.0  # entry 4: nor the first
    spd = spd.astype(dtype)
    out = np.empty_like(spd)
    info = linalg_small.cholesky_batched(spd, out)
    expected_info = [scipy.linalg.lapack.dpotrf(m.astype(np.float64), lower=1)[1] for m in spd]
    np.testing.assert_array_equal(info, expected_info)
    good = info == 0
    np.testing.assert_allclose(out[good], np.linalg.cholesky(spd[good].astype(np.float64)), rtol=0,
                               atol=tol * np.abs(spd).max())


@pytest.mark.parametrize("n", [1, 3, 8, LU_MAX])
def test_cholesky_backward_batched_is_the_two_solve_formula(n):
    x = RNG.standard_normal((4, n, n))
    low = np.linalg.cholesky(x @ np.swapaxes(x, -1, -2) + n * np.eye(n))
    grad = RNG.standard_normal((4, n, n))
    phi = np.tril(np.swapaxes(low, -1, -2) @ np.tril(grad))
    phi[..., range(n), range(n)] *= 0.5
    inverse = np.linalg.inv(low)
    s = np.swapaxes(inverse, -1, -2) @ phi @ inverse
    out = linalg_small.cholesky_backward_batched(low, grad, np.empty_like(low))
    np.testing.assert_allclose(out, (s + np.swapaxes(s, -1, -2)) / 2, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("n", [1, 3, 8, LU_MAX])
def test_lu_substitution_solves_a_and_its_transpose(n, transposed):
    a, b = _general((5,), n), RNG.standard_normal((5, n, 3))
    lu, piv = a.copy(), np.empty((5, n), np.int32)
    linalg_small.lu_factor_batched(lu, piv)
    x = linalg_small.lu_substitute_batched(lu, piv, b.copy(), transposed)
    expected = np.linalg.solve(np.swapaxes(a, -1, -2) if transposed else a, b)
    np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-12)


def test_a_zero_pivot_gives_lapacks_info_and_a_zero_determinant():
    a = _general((4,), 5)
    a[1, :, 2] = 0.0  # a zero column: U[2, 2] is exactly zero whatever the order of the elimination
    a[3, 3] = 0.0  # a zero row: the last pivot is zero
    lu, piv = a.copy(), np.empty((4, 5), np.int32)
    info = linalg_small.lu_factor_batched(lu.copy(), piv)
    expected = [scipy.linalg.lapack.dgetrf(m)[2] for m in a]
    np.testing.assert_array_equal(info, expected)
    sign, logabs = np.empty(4), np.empty(4)
    linalg_small.slogdet_batched(lu, piv, sign, logabs)
    expected_sign, expected_logabs = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, expected_sign)
    np.testing.assert_allclose(logabs, expected_logabs, rtol=1e-12)
    assert np.isneginf(logabs[[1, 3]]).all()


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 6, EIGH_MAX, 17])
@pytest.mark.parametrize(("dtype", "tol"), [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_jacobi_eigh_agrees_with_lapack_and_reads_one_triangle(n, upper, dtype, tol):
    count = linalg_small.CHUNK + 3  # a full chunk and a partial one
    a = _symmetric((count,), n, dtype)
    garbage = np.triu(RNG.standard_normal(a.shape), 1).astype(dtype)
    stored = a + (np.swapaxes(garbage, -1, -2) if upper else garbage)  # the unread triangle is noise
    w, v = np.empty((count, n), dtype), np.empty_like(a)
    linalg_small.eigh_jacobi_batched(stored, upper, w, v)
    expected = np.linalg.eigvalsh(a.astype(np.float64))
    scale = np.abs(expected).max(-1, keepdims=True)
    np.testing.assert_array_less(np.abs(w - expected) / scale, tol)
    assert (np.diff(w, axis=-1) >= 0).all()
    np.testing.assert_allclose(v @ np.swapaxes(v, -1, -2), np.broadcast_to(np.eye(n), a.shape), atol=tol * 10)
    rebuilt = (v * w[..., None, :]) @ np.swapaxes(v, -1, -2)
    np.testing.assert_allclose(rebuilt, a, atol=tol * 10 * scale.max())


def test_jacobi_eigh_of_degenerate_and_singular_matrices_gives_orthonormal_vectors():
    q = np.linalg.qr(RNG.standard_normal((6, 6)))[0]
    cases = np.stack([np.eye(6), np.zeros((6, 6)), (q * [0, 0, 1, 1, 1, 5.0]) @ q.T, np.diag([3.0, -1, 3, 0, 2, -1])])
    w, v = np.empty((4, 6)), np.empty_like(cases)
    linalg_small.eigh_jacobi_batched(cases, False, w, v)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(cases), atol=1e-14)
    np.testing.assert_allclose(v @ np.swapaxes(v, -1, -2), np.broadcast_to(np.eye(6), cases.shape), atol=1e-14)
    np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), cases, atol=1e-13)


@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (6, 6), (9, 4), (SVD_MAX, SVD_MAX)])
@pytest.mark.parametrize(("dtype", "tol"), [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_jacobi_svd_agrees_with_lapack(shape, dtype, tol):
    a = (RNG.standard_normal((linalg_small.CHUNK + 2,) + shape) + 2 * np.eye(*shape)).astype(dtype)
    m, n = shape
    u, s, vh = np.empty_like(a), np.empty(a.shape[:1] + (n,), dtype), np.empty(a.shape[:1] + (n, n), dtype)
    redo = linalg_small.svd_jacobi_batched(a, u, s, vh)
    assert not redo.any()
    expected_u, expected_s, expected_vh = np.linalg.svd(a.astype(np.float64), full_matrices=False)
    np.testing.assert_array_less(np.abs(s - expected_s) / expected_s[:, :1], tol)
    signs = np.sign(np.sum(u * expected_u, axis=-2))  # each singular vector pair is defined up to sign
    np.testing.assert_allclose(u * signs[:, None, :], expected_u, atol=tol * 100)
    np.testing.assert_allclose(vh * signs[:, :, None], expected_vh, atol=tol * 100)


def test_jacobi_svd_hands_rank_deficient_matrices_back_and_public_svd_gets_them_from_lapack():
    a = RNG.standard_normal((3, 6, 4))
    a[1, :, 3] = a[1, :, 0] - a[1, :, 2]  # rank 3
    u, s, vh = np.empty_like(a), np.empty((3, 4)), np.empty((3, 4, 4))
    np.testing.assert_array_equal(linalg_small.svd_jacobi_batched(a, u, s, vh), [False, True, False])
    u, s, vh = linalg.svd(numdiff.tensor(a), full_matrices=False)
    np.testing.assert_allclose(u.numpy().T[..., 1] @ u.numpy()[1], np.eye(4), atol=1e-12)
    np.testing.assert_allclose((u * s.unsqueeze(-2) @ vh).numpy(), a, atol=1e-12)


def test_the_kernels_refuse_arrays_they_cannot_index():
    with pytest.raises(ValueError, match="lu_factor_batched: piv must be int32"):
        linalg_small.lu_factor_batched(np.zeros((2, 3, 3)), np.zeros((2, 3), np.int64))
    with pytest.raises(ValueError, match="eigh_jacobi_batched: expected a C-contiguous float"):
        linalg_small.eigh_jacobi_batched(np.zeros((2, 3, 4)), False, np.zeros((2, 3)), np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="lu_substitute_batched: x must be"):
        linalg_small.lu_substitute_batched(np.zeros((2, 3, 3)), np.zeros((2, 3), np.int32), np.zeros((2, 4, 1)), False)


# The public functions on each side of the switch: n at the kernels' largest order and one above.
SIDES = {"cholesky": [LU_MAX, LU_MAX + 1], "solve": [LU_MAX, LU_MAX + 1], "slogdet": [LU_MAX, LU_MAX + 1], "eigh": [EIGH_MAX, EIGH_MAX + 1],
         "svd": [SVD_MAX, SVD_MAX + 1]}
CASES = [(name, n) for name, orders in SIDES.items() for n in [3] + orders]


def _call(lib, name, a, b):
    la = lib.linalg
    if name == "cholesky":
        return (la.cholesky(a),)
    if name == "solve":
        return (la.solve(a, b),)
    if name == "slogdet":
        return tuple(la.slogdet(a)) + (la.det(a),)
    if name == "svd":
        u, s, vh = la.svd(a[..., :, : a.shape[-1] - 1], full_matrices=False)  # tall
        return u.abs(), s, vh.abs(), la.svd(a[..., :2, :], full_matrices=False)[1]  # and wide
    w, v = la.eigh(a)
    return w, v.abs()  # eigenvectors are defined up to sign


@pytest.mark.parametrize(("name", "n"), CASES)
@pytest.mark.parametrize(("dtype", "tol"), [("float32", 1e-4), ("float64", 1e-10)])
def test_values_match_torch_on_both_sides_of_the_kernel_order(name, n, dtype, tol):
    a = _symmetric((2, 3), n) + n * np.eye(n) if name == "eigh" else _general((2, 3), n)
    if name == "cholesky":
        a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    b = RNG.standard_normal((2, 3, n, 2))
    ours = _call(numdiff, name, *(numdiff.tensor(x).to(getattr(numdiff, dtype)) for x in (a, b)))
    theirs = _call(torch, name, *(torch.tensor(x).to(getattr(torch, dtype)) for x in (a, b)))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy().astype(np.float64), t.numpy().astype(np.float64), rtol=tol, atol=tol)


def _loss(name, a, b, weight):
    if name == "cholesky":  # a a^T + I: positive definite with its smallest eigenvalue at least 1
        return (linalg.cholesky(a @ a.mT + numdiff.eye(a.shape[-1], dtype=a.dtype)) * weight).sum((-2, -1))
    if name == "solve":
        return linalg.solve(a, b)
    if name == "slogdet":
        return linalg.slogdet(a)[1] + linalg.det(a / 3)  # a = noise + 3 I: a determinant of order 1
    if name == "svd":
        u, s, vh = linalg.svd(a, full_matrices=False)
        return s.sum(-1) + (u * u * weight).sum((-2, -1)) + (vh * vh * weight).sum((-2, -1))
    w, v = linalg.eigh((a + a.mT) / 2)  # eigh reads one triangle: differentiate a symmetric function
    return w.sum(-1) + (v * v * weight).sum((-2, -1))


@pytest.mark.parametrize(("name", "n"), CASES)
def test_gradients_pass_gradcheck_and_gradgradcheck_on_both_sides(name, n):
    a = _symmetric((2,), n) + np.diag(np.arange(n) * 3.0) if name == "eigh" else _general((2,), n)
    b = RNG.standard_normal((2, n, 1))
    weight = numdiff.tensor(RNG.standard_normal((n, n)))
    inputs = (numdiff.tensor(a, requires_grad=True), numdiff.tensor(b, requires_grad=name == "solve"))
    assert gradcheck(lambda x, y: _loss(name, x, y, weight), inputs, eps=1e-6, atol=1e-6, rtol=1e-5)
    if n <= 8:  # the second order is the same formulas once more; small orders keep it quick
        assert gradgradcheck(lambda x, y: _loss(name, x, y, weight), inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("n", [4, LU_MAX + 2])
def test_a_singular_batch_entry_is_named_and_reported_in_info(n):
    a = _general((3,), n)
    a[1, :, 1] = 0.0  # a zero column: an exactly zero pivot
    b = RNG.standard_normal((3, n, 1))
    with pytest.raises(linalg.LinAlgError, match=r"linalg.solve: \(Batch element 1\): The solver failed"):
        linalg.solve(numdiff.tensor(a), numdiff.tensor(b))
    x, info = linalg.solve_ex(numdiff.tensor(a), numdiff.tensor(b))
    expected_info = [scipy.linalg.lapack.dgetrf(m)[2] for m in a]
    np.testing.assert_array_equal(info.numpy(), expected_info)
    assert np.isnan(x.numpy()[1]).all() and np.isfinite(x.numpy()[[0, 2]]).all()
    sign, logabs = linalg.slogdet(numdiff.tensor(a))
    assert sign.numpy()[1] == 0 and np.isneginf(logabs.numpy()[1])
    np.testing.assert_allclose(logabs.numpy()[[0, 2]], np.linalg.slogdet(a[[0, 2]])[1], rtol=1e-12)
