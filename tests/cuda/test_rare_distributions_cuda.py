"""The rarer distributions, the matrix transforms and the SciPy-backed special functions on CUDA (the
simulator without a GPU): results stay on the device and equal the CPU's for the same values."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

D = numdiff.distributions


def _on(device, value):
    return numdiff.tensor(np.asarray(value, dtype=np.float64), device=device)


@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_draws_and_scores_on_the_device_as_on_the_cpu(given):
    matrices = np.stack([np.eye(3) * 2, np.eye(3) + 0.1])
    matrices = np.linalg.cholesky(matrices) if given == "scale_tril" else matrices
    device = D.Wishart(_on("cuda", [4.0, 5.0]), **{given: _on("cuda", matrices)})
    host = D.Wishart(_on("cpu", [4.0, 5.0]), **{given: _on("cpu", matrices)})
    draws = device.rsample((2,))
    assert draws.device.type == "cuda"
    ours = device.log_prob(draws).cpu().numpy()
    np.testing.assert_allclose(ours, host.log_prob(_on("cpu", draws.cpu().numpy())).numpy(), rtol=1e-12)
    np.testing.assert_allclose(device.precision_matrix.cpu().numpy(), host.precision_matrix.numpy(), rtol=1e-12)
    assert tuple(device.log_prob(draws[0, 0]).shape) == (2,)  # one matrix scored against the batch


def test_corr_cholesky_and_lkj_run_on_the_device():
    x = numdiff.tensor(np.random.default_rng(0).normal(size=(2, 6)), device="cuda", requires_grad=True)
    transform = D.transforms.CorrCholeskyTransform()
    y = transform(x)
    log_det = transform.log_abs_det_jacobian(x, y)
    log_det.sum().backward()
    host = transform(_on("cpu", x.detach().cpu().numpy()))
    np.testing.assert_allclose(y.detach().cpu().numpy(), host.numpy(), rtol=1e-12)
    assert x.grad.device.type == "cuda"
    lkj = D.LKJCholesky(3, _on("cuda", 1.5))
    draws = lkj.sample((4,))
    assert draws.device.type == "cuda" and bool(D.constraints.corr_cholesky.check(draws).all())


def test_gammainc_and_gamma_cdf_come_back_on_the_device_with_their_gradient():
    a, x = _on("cuda", [2.0, 3.0]), numdiff.tensor([1.0, 0.5], dtype=numdiff.float64, device="cuda", requires_grad=True)
    out = numdiff.special.gammainc(a, x)
    (grad,) = numdiff.autograd.grad(out.sum(), [x])
    assert out.device.type == grad.device.type == "cuda"
    expected = numdiff.special.gammainc(_on("cpu", [2.0, 3.0]), _on("cpu", [1.0, 0.5]))
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected.numpy(), rtol=1e-15)
    cdf = D.Gamma(_on("cuda", [2.0]), _on("cuda", [1.5])).cdf(_on("cuda", [0.7]))
    assert cdf.device.type == "cuda"
