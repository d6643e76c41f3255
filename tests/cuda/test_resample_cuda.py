"""CUDA resampling kernels (numdiff.cuda.kernels.resample) against the CPU ones
(numdiff.kernels.resample), and interpolate on CUDA tensors against the same call on the host.

Tiny shapes (the simulator runs every thread in Python) reaching the edge cases: one and four
taps, repeated and clamped source rows, R == 1 (the last axis) and R > 1. float64 agrees to 1e-9,
float32 to 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff._device import device
from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels import resample as cuda_resample
from numdiff.kernels import resample as cpu_resample

F = numdiff.nn.functional
CUDA = device("cuda")
RNG = np.random.default_rng(11)
DTYPES = [pytest.param(np.float64, 1e-9, id="float64"), pytest.param(np.float32, 1e-5, id="float32")]
TABLES = [
    pytest.param(np.array([[2], [0], [0]]), id="one-tap"),
    pytest.param(np.array([[0, 0, 1, 2], [0, 1, 2, 3], [2, 3, 3, 3]]), id="four-taps-clamped"),
]


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("index", TABLES)
@pytest.mark.parametrize("width", [1, 3])
def test_blend_kernels_match_the_cpu_kernels(dtype, tol, index, width):
    weight = RNG.standard_normal(index.shape).astype(dtype)
    x = RNG.standard_normal((2, 4, width)).astype(dtype)
    g = RNG.standard_normal((2, index.shape[0], width)).astype(dtype)
    want = cpu_resample.axis_blend_forward(x, index, weight, np.empty(g.shape, dtype))
    got = cuda_resample.axis_blend_forward(
        CudaArray.from_numpy(x, CUDA), index, weight, CudaArray.empty(g.shape, dtype, CUDA)
    )
    np.testing.assert_allclose(got.to_host(), want, rtol=tol, atol=tol)
    want = cpu_resample.axis_blend_adjoint(g, index, weight, np.empty(x.shape, dtype))
    got = cuda_resample.axis_blend_adjoint(
        CudaArray.from_numpy(g, CUDA), index, weight, CudaArray.empty(x.shape, dtype, CUDA)
    )
    np.testing.assert_allclose(got.to_host(), want, rtol=tol, atol=tol)


def test_blend_kernels_refuse_a_row_outside_the_source():
    x, out = CudaArray.from_numpy(np.zeros((1, 2, 1)), CUDA), CudaArray.empty((1, 1, 1), np.float64, CUDA)
    with pytest.raises(ValueError, match=r"axis_blend_forward: index must lie in \[0, 2\), got values 0\.\.2"):
        cuda_resample.axis_blend_forward(x, np.array([[0, 2]]), np.ones((1, 2)), out)


@pytest.mark.parametrize(("mode", "shape", "option"), [
    ("bilinear", (1, 2, 3, 4), dict(size=(5, 3), align_corners=False)),
    ("bicubic", (1, 1, 3, 3), dict(scale_factor=2, align_corners=True)),
    ("nearest", (1, 2, 3, 4), dict(scale_factor=1.5)),
    ("area", (1, 1, 3, 4, 2), dict(size=(2, 2, 1))),
])  # fmt: skip
def test_interpolate_on_cuda_matches_the_host(mode, shape, option):
    x = RNG.standard_normal(shape)
    host = numdiff.tensor(x, requires_grad=True)
    dev = numdiff.tensor(x, device="cuda", requires_grad=True)
    y_host, y_dev = F.interpolate(host, mode=mode, **option), F.interpolate(dev, mode=mode, **option)
    np.testing.assert_allclose(y_dev.detach().cpu().numpy(), y_host.detach().numpy(), rtol=1e-9, atol=1e-9)
    g = RNG.standard_normal(tuple(y_host.shape))
    y_host.backward(numdiff.tensor(g))
    y_dev.backward(numdiff.tensor(g, device="cuda"))
    np.testing.assert_allclose(dev.grad.cpu().numpy(), host.grad.numpy(), rtol=1e-9, atol=1e-9)
