"""One LAPACK factorization per linalg call, and backwards without create_graph that skip the graph.

eigh, svd, qr and slogdet return several outputs, each its own op over the same factorization;
they used to run LAPACK once per output (three SVDs per svd). solve and slogdet keep the LU of a
single matrix for their backward. Without create_graph the backwards run NumPy formulas
(numdiff.ops._linalg_grads); they must give what the recorded backward gives.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import numdiff
from numdiff import linalg
from numdiff.kernels import linalg_small

RNG = np.random.default_rng(11)


def _counting(monkeypatch, calls, module, name):
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


@pytest.mark.parametrize("n", [6, 20])  # small orders run numdiff's batched kernels, larger ones LAPACK
@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("name", ["svd", "eigh", "qr", "slogdet"])
def test_a_decomposition_runs_lapack_once(monkeypatch, name, batch, n):
    a = RNG.standard_normal(batch + (n, n))
    a = a + np.swapaxes(a, -1, -2) + 2 * n * np.eye(n)
    scipy_name, *numpy_names = {"svd": ("svd", "svd"), "eigh": ("eigh", "eigh"), "qr": ("qr", "qr"),
                                "slogdet": ("lu_factor", "slogdet", "det")}[name]
    calls = []
    _counting(monkeypatch, calls, scipy.linalg, scipy_name)
    for numpy_name in numpy_names:  # slogdet took its sign from a separate np.linalg.det
        _counting(monkeypatch, calls, np.linalg, numpy_name)
    for kernel in ("eigh_jacobi_batched", "lu_factor_batched", "slogdet_batched", "svd_jacobi_batched"):
        _counting(monkeypatch, calls, linalg_small, kernel)
    getattr(linalg, name)(numdiff.tensor(a, requires_grad=True))
    assert len(calls) == 1, calls


@pytest.mark.parametrize("shape", [(7,), (4, 7), (30,)])  # (batch..., n): the kernel's LU, and LAPACK's
def test_solve_backward_reuses_the_forward_lu(monkeypatch, shape):
    batch, n = shape[:-1], shape[-1]
    a = numdiff.tensor(RNG.standard_normal(batch + (n, n)) + n * np.eye(n), requires_grad=True)
    b = numdiff.tensor(RNG.standard_normal(batch + (n, 2)), requires_grad=True)
    calls = []
    for module, name in ((scipy.linalg, "lu_factor"), (scipy.linalg, "solve"), (np.linalg, "solve"),
                         (linalg_small, "lu_factor_batched")):
        _counting(monkeypatch, calls, module, name)
    linalg.solve(a, b).sum().backward()
    assert calls == ["lu_factor_batched" if n <= 16 else "lu_factor"]
    expected = np.linalg.solve(np.swapaxes(a.detach().numpy(), -1, -2), np.ones(batch + (n, 2)))
    np.testing.assert_allclose(b.grad.numpy(), expected, rtol=1e-12)


def _losses():
    weight = RNG.standard_normal((40, 40))

    def eigh(a):
        w, v = linalg.eigh(a + a.mT)
        n = a.shape[-1]
        return (w * w).sum() + (v * v * a.new_tensor(weight[:n, :n])).sum()

    def svd(a):
        u, s, vh = linalg.svd(a, full_matrices=False)
        k = s.shape[-1]
        return (s * s).sum() + (u * u * a.new_tensor(weight[: u.shape[-2], :k])).sum() + (vh.sin()).sum()

    def shifted(a):
        return a + 6 * numdiff.eye(a.shape[-1], dtype=a.dtype)

    return {
        "cholesky": lambda a: (linalg.cholesky(shifted(a @ a.mT)) ** 2).sum(),
        "solve": lambda a: linalg.solve(shifted(a), a.sin()).pow(2).sum(),
        "slogdet": lambda a: linalg.slogdet(shifted(a)).logabsdet.sum(),
        "det": lambda a: linalg.det(shifted(a)).sum(),
        "eigh": eigh,
        "svd": svd,
    }


@pytest.mark.parametrize("shape", [(6, 6), (4, 6, 6), (2, 6, 4), (5, 4, 6), (40, 40), (2, 40, 33)])
@pytest.mark.parametrize("name", ["cholesky", "solve", "slogdet", "det", "eigh", "svd"])
def test_the_direct_backward_equals_the_recorded_one(name, shape):
    if name != "svd" and shape[-1] != shape[-2]:
        pytest.skip("square matrices only")
    loss = _losses()[name]
    a = numdiff.tensor(RNG.standard_normal(shape), requires_grad=True)
    (direct,) = numdiff.autograd.grad(loss(a), [a])  # grad mode off in backward: NumPy formulas
    (recorded,) = numdiff.autograd.grad(loss(a), [a], create_graph=True)  # numdiff ops, recorded
    assert recorded.grad_fn is not None
    np.testing.assert_allclose(direct.numpy(), recorded.detach().numpy(), rtol=1e-10, atol=1e-10)
