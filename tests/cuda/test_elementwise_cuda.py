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


@numdiff.elementwise
def smoothstep(x, lo, hi):
    if x <= lo:
        return 0.0
    if x >= hi:
        return 1.0
    t = (x - lo) / (hi - lo)
    return t * t * (3.0 - 2.0 * t)


@numdiff.elementwise
def special(x, y):
    total = 0.0
    for k in range(3):
        total += math.log(abs(x) + k) * min(y, 1.0)
    if x > 0.5:
        total -= math.digamma(x) + math.erfinv(y / (1.0 + abs(y))) + x ** y
    elif x < -0.5:
        total = total * math.atan2(x, y) + math.hypot(x, y) + x % 0.75
    return total


def _cpu_and_gpu(op, *columns):
    results = []
    for device in ("cpu", "cuda"):
        inputs = [numdiff.tensor(c, dtype=numdiff.float64, device=device, requires_grad=True) for c in columns]
        out = op(*inputs)
        out.sum().backward()
        results.append([out.cpu().detach().numpy(), *(t.grad.cpu().numpy() for t in inputs)])
    return results


def test_statements_and_math_functions_on_cuda_match_the_cpu():
    # Points on both sides of every branch. (No division by 0 here: the simulator runs the kernel as
    # Python, which raises where a GPU gives inf; its math calls go to numdiff.cuda's IEEE versions.)
    x = np.array([-2.0, -1.0, -0.6, -0.2, 0.1, 0.3, 0.7, 1.5, 3.0])
    y = np.array([0.5, -1.5, 2.0, 0.25, 1.0, -0.75, 1.5, 0.5, -2.0])
    cpu, gpu = _cpu_and_gpu(special, x, y)
    for a, b in zip(gpu, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    cpu, gpu = _cpu_and_gpu(smoothstep, np.linspace(-1.5, 1.5, 13), np.full(13, -1.0), np.full(13, 1.0))
    for a, b in zip(gpu, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
