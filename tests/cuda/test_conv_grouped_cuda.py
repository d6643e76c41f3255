"""The CUDA twins of the grouped-convolution stencil (numdiff.cuda.kernels.conv_grouped, which
numdiff.cuda.kernels.conv routes depthwise and few-channel groups to) against the CPU kernels,
on tiny shapes for the simulator: depthwise with multiplier 2, stride, dilation, asymmetric
padding, and 3 channels a group. float64 to 1e-9, float32 to 1e-4."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff._device import device
from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels import conv as cuda_conv
from numdiff.kernels import conv as cpu_conv

CUDA = device("cuda")

# (N, C, H, W, Co, K, stride, padding (t, b, l, r), dilation, groups)
CASES = [
    pytest.param((2, 3, 5, 6, 6, 3, (2, 1), (1, 0, 2, 1), (1, 2), 3), np.float64, 1e-9, id="depthwise-x2"),
    pytest.param((1, 6, 4, 5, 4, 2, (1, 1), (1, 1, 0, 1), (1, 1), 2), np.float64, 1e-9, id="3-a-group"),
    pytest.param((2, 2, 4, 4, 2, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2), np.float32, 1e-4, id="depthwise-float32"),
]


@pytest.mark.parametrize("case, dtype, tol", CASES)
def test_grouped_cuda_kernels_match_cpu(case, dtype, tol):
    n, c, h, w, co, k, stride, padding, dilation, groups = case
    rng = np.random.default_rng(n + c + k)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wt = rng.standard_normal((co, c // groups, k, k)).astype(dtype)
    bias = rng.standard_normal(co).astype(dtype)
    oh = (h + padding[0] + padding[1] - dilation[0] * (k - 1) - 1) // stride[0] + 1
    ow = (w + padding[2] + padding[3] - dilation[1] * (k - 1) - 1) // stride[1] + 1
    go = rng.standard_normal((n, co, oh, ow)).astype(dtype)
    geometry = (stride, padding, dilation, groups)

    def up(a):
        return CudaArray.from_numpy(a, CUDA)

    want = cpu_conv.conv2d_forward(x, wt, bias, np.empty_like(go), *geometry)
    got = cuda_conv.conv2d_forward(up(x), up(wt), up(bias), CudaArray.empty(go.shape, dtype, CUDA), *geometry)
    np.testing.assert_allclose(got.to_host(), want, rtol=tol, atol=tol)

    want = cpu_conv.conv2d_backward_input(go, wt, np.empty_like(x), *geometry)
    got = cuda_conv.conv2d_backward_input(up(go), up(wt), CudaArray.empty(x.shape, dtype, CUDA), *geometry)
    np.testing.assert_allclose(got.to_host(), want, rtol=tol, atol=tol)

    want = cpu_conv.conv2d_backward_weight(x, go, np.empty_like(wt), *geometry)
    got = cuda_conv.conv2d_backward_weight(up(x), up(go), CudaArray.empty(wt.shape, dtype, CUDA), *geometry)
    np.testing.assert_allclose(got.to_host(), want, rtol=tol, atol=tol)
