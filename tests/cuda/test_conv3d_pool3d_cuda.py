"""The 3-d convolutions and pooling on device="cuda" (the simulator without a GPU): float32 and
float64 forward, gradients and double backward equal the CPU's, the results stay on the device,
and max_pool3d's argmax indices come back on the device, equal to the CPU's. Tiny shapes: the
simulator runs every thread in Python. (float64 first derivatives of every case in
tests/ops/cases_conv3d.py are replayed by test_op_cases_cuda.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.cuda.array import CudaArray

F = numdiff.nn.functional
TOL = {np.float64: 1e-9, np.float32: 1e-4}


def _conv_chain(x, w):
    y = F.conv3d(x, w, padding=(1, 0, 1), stride=(2, 1, 1), groups=2)
    y = F.conv_transpose3d(y, w, stride=(2, 1, 1), padding=(1, 0, 1), output_padding=(1, 0, 0), groups=2)
    return F.max_pool3d(y, 2, ceil_mode=True).sum() + F.avg_pool3d(y, (2, 1, 2), padding=(1, 0, 1)).pow(2).sum() \
        + F.adaptive_avg_pool3d(y, (1, 2, 1)).sum() + F.adaptive_max_pool3d(y, 1).sum()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv_and_pool_chain_with_double_backward_matches_cpu(dtype):
    rng = np.random.default_rng(0)
    arrays = (rng.standard_normal((1, 2, 3, 2, 3)).astype(dtype), rng.standard_normal((2, 1, 2, 2, 2)).astype(dtype))
    results = []
    for where in ("cpu", "cuda"):
        x, w = (numdiff.tensor(a).to(where).requires_grad_(True) for a in arrays)
        loss = _conv_chain(x, w)
        gx, gw = numdiff.autograd.grad(loss, (x, w), create_graph=True)
        assert isinstance(gx._data, CudaArray) == (where == "cuda")
        ((gx**2).sum() + (gw**2).sum()).backward()
        results.append([t.detach().cpu().numpy() for t in (loss, gx, gw, x.grad, w.grad)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])


def test_max_pool3d_indices_stay_on_the_device_and_match_cpu():
    x = np.round(np.random.default_rng(1).standard_normal((1, 2, 3, 4, 3)), 1)
    cpu = F.max_pool3d(numdiff.tensor(x), 2, padding=1, return_indices=True)
    gpu = F.max_pool3d(numdiff.tensor(x).to("cuda"), 2, padding=1, return_indices=True)
    assert isinstance(gpu[1]._data, CudaArray)
    np.testing.assert_array_equal(gpu[0].cpu().numpy(), cpu[0].numpy())
    np.testing.assert_array_equal(gpu[1].cpu().numpy(), cpu[1].numpy())
    _, adaptive = F.adaptive_max_pool3d(numdiff.tensor(x).to("cuda"), (2, 1, 2), return_indices=True)
    np.testing.assert_array_equal(
        adaptive.cpu().numpy(), F.adaptive_max_pool3d(numdiff.tensor(x), (2, 1, 2), return_indices=True)[1].numpy()
    )


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_5d_grid_sample_and_affine_grid_match_cpu(mode):
    rng = np.random.default_rng(2)
    arrays = (rng.standard_normal((1, 2, 2, 3, 2)), rng.standard_normal((1, 3, 4)) * 0.7)
    results = []
    for where in ("cpu", "cuda"):
        x, theta = (numdiff.tensor(a).to(where).requires_grad_(True) for a in arrays)
        grid = F.affine_grid(theta, (1, 2, 2, 2, 1), align_corners=False)
        out = F.grid_sample(x, grid, mode=mode, padding_mode="reflection", align_corners=False)
        (out**2).sum().backward()
        # nearest reads no coordinate through the graph: theta gets no gradient, on either device
        results.append([None if t is None else t.detach().cpu().numpy() for t in (out, x.grad, theta.grad)])
    for got, want in zip(results[1], results[0]):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
