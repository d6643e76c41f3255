"""The blocked Cholesky backward (numdiff.kernels.linalg_blocked_grads) against the composed formula
and torch, around multiples of its block size (made small here), at one and two threads; the public
cholesky's gradient on that path (float64 gradcheck); its bad input."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.linalg
import torch

import numdiff
from numdiff import linalg
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.kernels import linalg_blocked_grads
from numdiff.ops import _lapack, _linalg_grads

RNG = np.random.default_rng(2030)
TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12}
THREADS = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})


def _low(n, dtype):
    x = RNG.standard_normal((n, n))
    return np.linalg.cholesky(x @ x.T / n + np.eye(n)).astype(dtype)


def _composed(low, grad):
    """gA = sym(L^-T Phi L^-1), Phi = tril(L^T gL) with its diagonal halved, in float64."""
    low, grad = low.astype(np.float64), grad.astype(np.float64)
    phi = np.tril(low.T @ np.tril(grad))
    phi[np.diag_indices_from(phi)] *= 0.5
    left = scipy.linalg.solve_triangular(low.T, phi, lower=False)
    g_a = scipy.linalg.solve_triangular(low.T, left.T, lower=False).T
    return 0.5 * (g_a + g_a.T)


@pytest.mark.parametrize(("chunk", "n"), [(4, 1), (4, 3), (4, 4), (4, 5), (4, 17), (32, 31), (32, 64), (32, 97)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", THREADS)
def test_cholesky_backward_blocked_is_the_composed_formula(chunk, n, dtype, threads):
    low = _low(n, dtype)
    grad = RNG.standard_normal((n, n)).astype(dtype)  # its upper triangle is not read
    g_a = linalg_blocked_grads.cholesky_backward_blocked(low, grad, threads, chunk)
    expected = _composed(low, grad)
    assert g_a.dtype == dtype and g_a.flags.c_contiguous
    np.testing.assert_allclose(g_a, expected, rtol=0, atol=TOLERANCE[dtype] * max(np.abs(expected).max(), 1.0))


def test_cholesky_backward_blocked_does_not_change_its_inputs():
    low, grad = _low(9, np.float64), RNG.standard_normal((9, 9))
    low_before, grad_before = low.copy(), grad.copy()
    linalg_blocked_grads.cholesky_backward_blocked(low, grad, THREADS[-1], 4)
    np.testing.assert_array_equal(low, low_before)
    np.testing.assert_array_equal(grad, grad_before)


@pytest.mark.parametrize(("low", "grad", "error", "match"), [
    (np.eye(3), np.eye(4), ValueError, r"cholesky_backward_blocked: expected square L .* \(3, 3\) and \(4, 4\)"),
    (np.ones((2, 3)), np.ones((2, 3)), ValueError, r"cholesky_backward_blocked: .* \(2, 3\)"),
    (np.eye(3, dtype=np.int64), np.eye(3, dtype=np.int64), TypeError, "float32 or float64 .* int64"),
    (np.eye(3), np.eye(3, dtype=np.float32), TypeError, "float64 and float32"),
])
def test_cholesky_backward_blocked_rejects_bad_input(low, grad, error, match):
    with pytest.raises(error, match=match):
        linalg_blocked_grads.cholesky_backward_blocked(low, grad)


def test_cholesky_backward_blocked_rejects_a_zero_chunk():
    with pytest.raises(ValueError, match="threads and chunk must be at least 1, got threads=1, chunk=0"):
        linalg_blocked_grads.cholesky_backward_blocked(np.eye(2), np.eye(2), 1, 0)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("batch", [(), (2,)])
def test_public_cholesky_gradient_on_the_blocked_path_matches_torch(threads, batch):
    n = _lapack.CHOLESKY_GRAD_BLOCKED_MIN_ORDER + 5
    x = RNG.standard_normal(batch + (n, n))
    a = x @ np.swapaxes(x, -1, -2) / n + np.eye(n)
    weight = RNG.standard_normal(batch + (n, n))
    before = numdiff.get_num_threads()
    numdiff.set_num_threads(threads)
    try:
        ours = numdiff.tensor(a, requires_grad=True)
        (linalg.cholesky(ours) * numdiff.tensor(weight)).sum().backward()
    finally:
        numdiff.set_num_threads(before)
    theirs = torch.tensor(a, requires_grad=True)
    (torch.linalg.cholesky(theirs) * torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_public_cholesky_gradcheck_on_the_blocked_path(monkeypatch):
    monkeypatch.setattr(_lapack, "CHOLESKY_GRAD_BLOCKED_MIN_ORDER", 5)
    monkeypatch.setattr(linalg_blocked_grads, "DEFAULT_CHUNK", 2)
    used = []
    original = linalg_blocked_grads.cholesky_backward_blocked
    monkeypatch.setattr(linalg_blocked_grads, "cholesky_backward_blocked",
                        lambda *args, **kw: used.append(True) or original(*args, **kw))
    n = 7
    eye = numdiff.eye(n, dtype=numdiff.float64)
    x = numdiff.tensor(RNG.standard_normal((n, n)), requires_grad=True)
    assert gradcheck(lambda m: linalg.cholesky(m @ m.mT / n + eye), (x,))
    assert used
    assert gradgradcheck(lambda m: linalg.cholesky(m @ m.mT / n + eye), (x,))  # create_graph: the composed ops


@pytest.mark.parametrize(("chunk", "n", "k"), [(4, 1, 1), (4, 5, 3), (4, 17, 17), (32, 33, 8), (32, 97, 97)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", THREADS)
def test_symmetric_product_is_the_full_product_made_exactly_symmetric(chunk, n, k, dtype, threads):
    b = RNG.standard_normal((n, k)).astype(dtype)
    a = (b * RNG.standard_normal(k)).astype(dtype)  # a b^T = B diag(d) B^T, symmetric
    out = linalg_blocked_grads.symmetric_product(a, b, threads, chunk)
    expected = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_array_equal(out, out.T)
    np.testing.assert_allclose(out, expected, rtol=0, atol=TOLERANCE[dtype] * max(np.abs(expected).max(), 1.0))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize(("a_order", "b_order"), [("F", "F"), ("F", "C"), ("C", "F")])
def test_symmetric_product_takes_fortran_ordered_operands_as_they_are(a_order, b_order, threads):
    """eigh's V comes Fortran-ordered from LAPACK; the product reads it through a transposed GEMM."""
    n, k = 75, 75
    b = RNG.standard_normal((n, k))
    a = b * RNG.standard_normal(k)
    out = linalg_blocked_grads.symmetric_product(np.asarray(a, order=a_order), np.asarray(b, order=b_order),
                                                 threads, 16)
    np.testing.assert_array_equal(out, out.T)
    np.testing.assert_allclose(out, a @ b.T, rtol=0, atol=1e-12 * np.abs(a @ b.T).max())


@pytest.mark.parametrize(("a", "b", "error", "match"), [
    (np.ones((3, 2)), np.ones((2, 3)), ValueError, r"symmetric_product: expected a and b of one shape .* \(3, 2\)"),
    (np.ones((3, 2), np.float32), np.ones((3, 2)), TypeError, "symmetric_product: .* float32 and float64"),
])
def test_symmetric_product_rejects_bad_input(a, b, error, match):
    with pytest.raises(error, match=match):
        linalg_blocked_grads.symmetric_product(a, b)


@pytest.mark.parametrize("threads", THREADS)
def test_public_eigh_gradient_on_the_blocked_path_matches_torch(threads):
    n = _linalg_grads._NUMPY_MAX_ORDER + 7
    x = RNG.standard_normal((2, n, n))
    a = x + np.swapaxes(x, -1, -2)
    weight = RNG.standard_normal((2, n, n))
    before = numdiff.get_num_threads()
    numdiff.set_num_threads(threads)
    try:
        ours = numdiff.tensor(a, requires_grad=True)
        w, v = linalg.eigh(ours)
        (w.sum() + (v * v * numdiff.tensor(weight)).sum()).backward()  # v * v: free of the vectors' signs
    finally:
        numdiff.set_num_threads(before)
    theirs = torch.tensor(a, requires_grad=True)
    w, v = torch.linalg.eigh(theirs)
    (w.sum() + (v * v * torch.tensor(weight)).sum()).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_public_eigh_gradcheck_on_the_blocked_path(monkeypatch):
    monkeypatch.setattr(_linalg_grads, "_NUMPY_MAX_ORDER", 4)
    monkeypatch.setattr(linalg_blocked_grads, "PRODUCT_CHUNK", 2)
    used = []
    original = linalg_blocked_grads.symmetric_product
    monkeypatch.setattr(linalg_blocked_grads, "symmetric_product",
                        lambda *args, **kw: used.append(True) or original(*args, **kw))
    x = numdiff.tensor(RNG.standard_normal((7, 7)), requires_grad=True)
    weight = numdiff.tensor(RNG.standard_normal((7, 7)))

    def loss(m):
        w, v = linalg.eigh(m + m.mT)
        return w.sum() + (v * v * weight).sum()

    assert gradcheck(loss, (x,))
    assert len(used) >= 2  # the values' and the vectors' backward
