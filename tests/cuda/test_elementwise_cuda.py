"""@numdiff.elementwise on CUDA tensors (the simulator here): forward and gradients equal the CPU's."""

from __future__ import annotations

import math

import numpy as np

import numdiff


@numdiff.elementwise
def softclip(x, lo, hi):
    return lo + (hi - lo) * (math.tanh(x) + 1) / 2 if x > 0 else x * x


def test_forward_and_backward_on_cuda_match_the_cpu():
    data = np.random.default_rng(0).standard_normal((2, 3))
    hi_data = np.array([1.5, 2.0, 2.5])
    x_cpu = numdiff.tensor(data, requires_grad=True)
    hi_cpu = numdiff.tensor(hi_data, requires_grad=True)
    x_gpu = numdiff.tensor(data, device="cuda", requires_grad=True)
    hi_gpu = numdiff.tensor(hi_data, device="cuda", requires_grad=True)
    out_cpu = softclip(x_cpu, -1.0, hi_cpu)
    out_gpu = softclip(x_gpu, -1.0, hi_gpu)
    assert out_gpu.device.type == "cuda"
    np.testing.assert_allclose(out_gpu.cpu().detach().numpy(), out_cpu.detach().numpy(), rtol=1e-12)
    out_cpu.sum().backward()
    out_gpu.sum().backward()
    np.testing.assert_allclose(x_gpu.grad.cpu().numpy(), x_cpu.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hi_gpu.grad.cpu().numpy(), hi_cpu.grad.numpy(), rtol=1e-12)
