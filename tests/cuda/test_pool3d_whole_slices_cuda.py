"""Adaptive 3-d pooling over whole depth slices (output (D_out, 1, 1), one 2-d stage) on
device="cuda" (the simulator without a GPU): values, gradients and argmax indices equal the CPU's
and stay on the device."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.cuda.array import CudaArray

F = numdiff.nn.functional


@pytest.mark.parametrize("name", ["adaptive_avg_pool3d", "adaptive_max_pool3d"])
def test_whole_slice_pooling_matches_cpu_on_the_device(name):
    x = np.random.default_rng(3).standard_normal((2, 2, 3, 2, 3))
    results = []
    for where in ("cpu", "cuda"):
        xt = numdiff.tensor(x).to(where).requires_grad_(True)
        out = getattr(F, name)(xt, (2, 1, 1))
        (out * out).sum().backward()
        assert isinstance(out._data, CudaArray) == (where == "cuda")
        results.append([out.detach().cpu().numpy(), xt.grad.cpu().numpy()])
        if name == "adaptive_max_pool3d":
            indices = F.adaptive_max_pool3d(xt, (2, 1, 1), return_indices=True)[1]
            assert isinstance(indices._data, CudaArray) == (where == "cuda")
            results[-1].append(indices.cpu().numpy())
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
