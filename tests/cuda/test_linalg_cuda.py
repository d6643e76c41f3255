"""numdiff.linalg on CUDA (Numba's simulator in CI): the batched Cholesky, triangular-solve and LU
solve kernels against the CPU, forward and backward, and the host path of the other functions."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import linalg
from numdiff.backend import CPU, CUDA
from numdiff.cuda.array import CudaArray
from numdiff.ops import _lapack

pytestmark = pytest.mark.skipif(not numdiff.cuda.is_available(), reason="no CUDA device or simulator")

RNG = np.random.default_rng(3)


def _spd(batch, n):
    x = RNG.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _both(array):
    cpu = numdiff.tensor(array, requires_grad=True)
    gpu = numdiff.tensor(array, device="cuda", requires_grad=True)
    return cpu, gpu


def test_cholesky_kernel_matches_the_cpu_forward_and_backward():
    cpu, gpu = _both(_spd((2,), 3))
    weights = numdiff.tensor(RNG.standard_normal((2, 3, 3)))
    (linalg.cholesky(cpu) * weights).sum().backward()
    out = linalg.cholesky(gpu)
    assert out.device.type == "cuda"
    (out * weights.cuda()).sum().backward()
    np.testing.assert_allclose(out.detach().cpu().numpy(), linalg.cholesky(cpu).detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(gpu.grad.cpu().numpy(), cpu.grad.numpy(), atol=1e-10)


def test_cholesky_backward_kernel_matches_its_cpu_twin():
    low = np.linalg.cholesky(_spd((3,), 4))
    grad = RNG.standard_normal((3, 4, 4))
    expected = CPU.cholesky_backward_batched(low, grad, np.empty_like(low))
    out = CudaArray.from_numpy(np.zeros_like(low), numdiff.device("cuda"))
    on_gpu = [CudaArray.from_numpy(x, numdiff.device("cuda")) for x in (low, grad)]
    CUDA.cholesky_backward_batched(*on_gpu, out)
    np.testing.assert_allclose(out.to_host(), expected, atol=1e-12)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_triangular_solve_kernel_matches_the_cpu(upper, left):
    a = np.tril(RNG.standard_normal((2, 3, 3))) + 3 * np.eye(3)
    a = np.swapaxes(a, -1, -2) if upper else a
    b = RNG.standard_normal((2, 3, 2) if left else (2, 2, 3))
    (a_cpu, a_gpu), (b_cpu, b_gpu) = _both(a), _both(b)
    expected = linalg.solve_triangular(a_cpu, b_cpu, upper=upper, left=left)
    got = linalg.solve_triangular(a_gpu, b_gpu, upper=upper, left=left)
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), atol=1e-12)
    expected.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(a_gpu.grad.cpu().numpy(), a_cpu.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(b_gpu.grad.cpu().numpy(), b_cpu.grad.numpy(), atol=1e-10)


def test_solve_kernel_pivots_and_broadcasts_like_the_cpu():
    a = RNG.standard_normal((2, 3, 3))
    a[0, 0, 0] = 0.0  # needs a row swap
    b = RNG.standard_normal((3, 1))  # broadcast over the batch
    (a_cpu, a_gpu), (b_cpu, b_gpu) = _both(a), _both(b)
    expected, got = linalg.solve(a_cpu, b_cpu), linalg.solve(a_gpu, b_gpu)
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), atol=1e-10)
    expected.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(a_gpu.grad.cpu().numpy(), a_cpu.grad.numpy(), atol=1e-9)


def test_failures_on_the_gpu_name_the_batch_entry():
    with pytest.raises(linalg.LinAlgError, match=r"Batch element 1\).*not positive-definite"):
        linalg.cholesky(numdiff.tensor(np.stack([np.eye(2), -np.eye(2)]), device="cuda"))
    with pytest.raises(linalg.LinAlgError, match=r"Batch element 0\).*singular"):
        linalg.solve(numdiff.zeros(2, 2, 2, device="cuda"), numdiff.ones(2, 2, 1, device="cuda"))


def test_host_computed_functions_return_to_the_gpu():
    a = numdiff.tensor(_spd((2,), 3), device="cuda")
    values, vectors = linalg.eigh(a)
    assert values.device.type == "cuda" and vectors.device.type == "cuda"
    np.testing.assert_allclose(linalg.det(a).cpu().numpy(), np.linalg.det(a.cpu().numpy()), rtol=1e-10)


def _on_gpu(*arrays):
    return [CudaArray.from_numpy(x, numdiff.device("cuda")) for x in arrays]


@pytest.mark.parametrize("transposed", [False, True])
def test_lu_kernels_match_their_cpu_twins(transposed):
    a = RNG.standard_normal((3, 4, 4))
    a[1, 0, 0] = 0.0  # a row swap
    a[2, :, 2] = 0.0  # an exactly zero pivot: info 3, elimination goes on
    lu, piv = a.copy(), np.empty((3, 4), np.int32)
    info = CPU.lu_factor_batched(lu, piv)
    lu_gpu, piv_gpu, x_gpu = _on_gpu(a, np.zeros((3, 4), np.int32), RNG.standard_normal((2, 4, 2)))
    info_gpu = CUDA.lu_factor_batched(lu_gpu, piv_gpu)
    np.testing.assert_array_equal(info_gpu.to_host(), info)
    assert info.tolist() == [0, 0, 3]
    np.testing.assert_array_equal(piv_gpu.to_host(), piv)
    np.testing.assert_allclose(lu_gpu.to_host(), lu, atol=1e-12)
    rhs = x_gpu.to_host()
    expected = rhs.copy()
    CPU.lu_substitute_batched(lu[:2], piv[:2], expected, transposed)
    lu_two = _on_gpu(lu[:2].copy())[0]
    piv_two = _on_gpu(piv[:2].copy())[0]
    CUDA.lu_substitute_batched(lu_two, piv_two, x_gpu, transposed)
    np.testing.assert_allclose(x_gpu.to_host(), expected, atol=1e-12)
    solved = np.linalg.solve(np.swapaxes(a[:2], -1, -2) if transposed else a[:2], rhs)
    np.testing.assert_allclose(x_gpu.to_host(), solved, atol=1e-10)


def test_slogdet_kernel_matches_its_cpu_twin_and_marks_singular_matrices():
    a = RNG.standard_normal((3, 4, 4))
    a[2, :, 1] = 0.0
    sign, logabs = np.empty(3), np.empty(3)
    info = CPU.slogdet_batched(a.copy(), np.empty((3, 4), np.int32), sign, logabs)
    lu_gpu, piv_gpu, sign_gpu, logabs_gpu = _on_gpu(a, np.zeros((3, 4), np.int32), np.zeros(3), np.zeros(3))
    info_gpu = CUDA.slogdet_batched(lu_gpu, piv_gpu, sign_gpu, logabs_gpu)
    np.testing.assert_array_equal(info_gpu.to_host(), info)
    np.testing.assert_array_equal(sign_gpu.to_host(), sign)
    np.testing.assert_allclose(logabs_gpu.to_host(), logabs, atol=1e-12)
    expected_sign, expected_logabs = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, expected_sign)
    np.testing.assert_allclose(logabs, expected_logabs, atol=1e-12)


def test_lu_kernels_reject_bad_pivots_naming_the_launcher():
    lu, piv = _on_gpu(np.eye(3)[None], np.zeros((1, 3), np.float64))
    with pytest.raises(ValueError, match=r"lu_factor_batched: piv must be contiguous int32 of shape \(1, 3\)"):
        CUDA.lu_factor_batched(lu, piv)
    with pytest.raises(ValueError, match=r"slogdet_batched: expected a \(batch, n, n\) stack"):
        CUDA.slogdet_batched(*_on_gpu(np.ones((1, 2, 3)), np.zeros((1, 2), np.int32), np.zeros(1), np.zeros(1)))


def test_det_and_slogdet_run_on_the_gpu_forward_and_backward(monkeypatch):
    a = RNG.standard_normal((3, 4, 4))
    a[0] *= -1.0  # a negative determinant
    host_slogdet = _lapack.slogdet
    for function in (linalg.det, lambda m: linalg.slogdet(m)[1], lambda m: linalg.slogdet(m)[0] * 2.0):
        cpu, gpu = _both(a)
        expected = function(cpu)
        monkeypatch.setattr(_lapack, "slogdet", lambda *args: pytest.fail("a CUDA tensor's LU ran on the host"))
        got = function(gpu)
        monkeypatch.setattr(_lapack, "slogdet", host_slogdet)
        assert got.device.type == "cuda"
        np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-10)
        if got.requires_grad:
            got.sum().backward()
            expected.sum().backward()
            np.testing.assert_allclose(gpu.grad.cpu().numpy(), cpu.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_det_double_backward_on_the_gpu_records_the_solve():
    a = RNG.standard_normal((2, 3, 3))
    cpu, gpu = _both(a)
    (g_cpu,) = numdiff.autograd.grad(linalg.det(cpu).sum(), cpu, create_graph=True)
    (g_gpu,) = numdiff.autograd.grad(linalg.det(gpu).sum(), gpu, create_graph=True)
    np.testing.assert_allclose(g_gpu.detach().cpu().numpy(), g_cpu.detach().numpy(), rtol=1e-9)
    (gg_cpu,) = numdiff.autograd.grad((g_cpu * g_cpu).sum(), cpu)
    (gg_gpu,) = numdiff.autograd.grad((g_gpu * g_gpu).sum(), gpu)
    np.testing.assert_allclose(gg_gpu.cpu().numpy(), gg_cpu.numpy(), rtol=1e-8)


def test_det_of_a_singular_gpu_matrix_takes_the_cofactor_gradient():
    a = RNG.standard_normal((3, 3))
    a[:, 2] = 0.0  # an exactly zero pivot: det 0, the gradient through the cofactors
    cpu, gpu = _both(a)
    linalg.det(cpu).backward()
    out = linalg.det(gpu)
    out.backward()
    assert out.device.type == "cuda" and out.item() == 0.0
    np.testing.assert_allclose(gpu.grad.cpu().numpy(), cpu.grad.numpy(), atol=1e-10)


def test_inv_runs_on_the_gpu_forward_and_backward_and_names_a_singular_entry(monkeypatch):
    a = RNG.standard_normal((2, 4, 4)) + 2 * np.eye(4)
    a[1, 0, 0] = 0.0
    cpu, gpu = _both(a)
    weight = RNG.standard_normal((2, 4, 4))
    expected = linalg.inv(cpu)
    monkeypatch.setattr(_lapack, "inv", lambda *args: pytest.fail("a CUDA tensor's inverse ran on the host"))
    got = linalg.inv(gpu)
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), atol=1e-12)
    (got * numdiff.tensor(weight, device="cuda")).sum().backward()
    (expected * numdiff.tensor(weight)).sum().backward()
    np.testing.assert_allclose(gpu.grad.cpu().numpy(), cpu.grad.numpy(), atol=1e-10)
    singular = np.stack([np.eye(3), np.zeros((3, 3))])
    with pytest.raises(linalg.LinAlgError, match=r"linalg.inv: \(Batch element 1\).*singular"):
        linalg.inv(numdiff.tensor(singular, device="cuda"))
