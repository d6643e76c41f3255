"""numdiff.linalg on CUDA (Numba's simulator in CI): the batched Cholesky, triangular-solve and LU
solve kernels against the CPU, forward and backward, and the host path of the other functions."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import linalg
from numdiff.backend import CPU, CUDA
from numdiff.cuda.array import CudaArray

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
