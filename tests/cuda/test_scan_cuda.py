"""The scan lane kernels on CUDA (cumsum both ways, cumprod and its backward) against the host
kernels, and the ops through them."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff._device import device
from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels.scan import cumprod_backward_lanes, cumprod_lanes, cumsum_lanes
from numdiff.kernels import scan as host_scan

CUDA = device("cuda")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape", [(3, 5, 1), (2, 4, 7), (1, 6, 300)])
def test_cumsum_lanes_matches_the_host_kernel(shape, reverse, dtype) -> None:
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    expected = host_scan.cumsum_lanes(x, np.empty_like(x), reverse)
    out = CudaArray.from_numpy(np.empty_like(x), CUDA)
    cumsum_lanes(CudaArray.from_numpy(x, CUDA), out, reverse)
    np.testing.assert_allclose(out.to_host(), expected, rtol=1e-6)


def test_cumsum_lanes_rejects_a_host_out() -> None:
    x = CudaArray.from_numpy(np.ones((1, 2, 1)), CUDA)
    with pytest.raises(TypeError, match=r"cumsum_lanes: out must be a CUDA array"):
        cumsum_lanes(x, np.ones((1, 2, 1)), False)


def test_cumsum_on_cuda_forward_and_backward() -> None:
    data = np.random.default_rng(6).standard_normal((3, 4, 5))
    x = numdiff.tensor(data, device="cuda", requires_grad=True)
    y = x.cumsum(1)
    np.testing.assert_allclose(y.detach().cpu().numpy(), np.cumsum(data, 1))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.flip(np.cumsum(np.ones_like(data), 1), 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5, 1), (2, 4, 7)])
def test_cumprod_lanes_and_backward_match_the_host_kernels(shape, dtype) -> None:
    rng = np.random.default_rng(8)
    x = rng.uniform(0.5, 1.5, shape).astype(dtype)
    x.reshape(-1)[::4] = 0.0
    g = rng.standard_normal(shape).astype(dtype)
    out = CudaArray.from_numpy(np.empty_like(x), CUDA)
    cumprod_lanes(CudaArray.from_numpy(x, CUDA), out)
    np.testing.assert_allclose(out.to_host(), host_scan.cumprod_lanes(x, np.empty_like(x)), rtol=1e-6)
    dx = CudaArray.from_numpy(np.empty_like(x), CUDA)
    cumprod_backward_lanes(CudaArray.from_numpy(x, CUDA), CudaArray.from_numpy(g, CUDA), dx)
    expected = host_scan.cumprod_backward_lanes(x, g, np.empty_like(x))
    np.testing.assert_allclose(dx.to_host(), expected, rtol=1e-5, atol=1e-6)


def test_cumprod_on_cuda_forward_and_backward() -> None:
    data = np.random.default_rng(9).uniform(0.5, 1.5, (3, 4, 2))
    x = numdiff.tensor(data, device="cuda", requires_grad=True)
    y = x.cumprod(1)
    np.testing.assert_allclose(y.detach().cpu().numpy(), np.cumprod(data, 1))
    y.sum().backward()
    host = numdiff.tensor(data, requires_grad=True)
    host.cumprod(1).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), host.grad.numpy())
