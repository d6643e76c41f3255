"""softmax and log_softmax on device="cuda" (numdiff.cuda.kernels.softmax): the CPU's outputs and
input gradients along rows and along a middle axis (float64, 1e-12), NaN lines where the CPU has
them, and the launchers refusing bad arrays before launching. Tiny shapes for the simulator."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

if not numdiff.cuda.is_available():
    pytest.skip("CUDA is not available; run `python3 -m pytest tests/cuda` to use the simulator", allow_module_level=True)

from numdiff.cuda.array import CudaArray  # noqa: E402 - only where CUDA (or its simulator) is present
from numdiff.cuda.kernels import softmax as cuda_softmax  # noqa: E402


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [-1, 1])
def test_softmax_on_cuda_matches_the_cpu(name, dim):
    rng = np.random.default_rng(2)
    values = rng.standard_normal((2, 3, 4)) * 4
    values[1, 0, :] = -np.inf  # a line of only -inf when dim is -1, a single -inf in a column otherwise
    seed = rng.standard_normal(values.shape)
    x_cpu = numdiff.tensor(values, requires_grad=True)
    x_gpu = numdiff.tensor(values, device="cuda", requires_grad=True)
    out_cpu, out_gpu = getattr(numdiff, name)(x_cpu, dim), getattr(numdiff, name)(x_gpu, dim)
    out_cpu.backward(numdiff.tensor(seed))
    out_gpu.backward(numdiff.tensor(seed, device="cuda"))
    close = dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(out_gpu.detach().cpu().numpy(), out_cpu.detach().numpy(), **close)
    np.testing.assert_allclose(x_gpu.grad.cpu().numpy(), x_cpu.grad.numpy(), **close)


def _on_cuda(shape: tuple[int, ...]) -> CudaArray:
    return CudaArray.from_numpy(np.zeros(shape), numdiff.device("cuda"))


def test_launcher_refuses_a_mismatched_output_before_launching():
    with pytest.raises(ValueError, match=r"softmax_forward: out must have shape \(1, 2, 3\), got \(1, 3, 2\)"):
        cuda_softmax.softmax_forward(_on_cuda((1, 2, 3)), _on_cuda((1, 3, 2)), False)


def test_launcher_refuses_a_host_array():
    out = _on_cuda((1, 2, 1))
    with pytest.raises(TypeError, match="softmax_backward: grad must be a CUDA array, got ndarray"):
        cuda_softmax.softmax_backward(np.zeros((1, 2, 1)), out, out, True)
