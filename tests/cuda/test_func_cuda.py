"""numdiff.func on CUDA tensors (the simulator here): vmap(grad) gives the CPU's per-example gradients."""

from __future__ import annotations

import numpy as np

import numdiff
from numdiff import func


def test_vmap_of_grad_on_cuda_matches_the_cpu():
    x = numdiff.randn(3, 4, dtype=numdiff.float64)
    per_row = func.vmap(func.grad(lambda r: (r.sin() * r).sum()))
    on_gpu = per_row(x.cuda())
    assert on_gpu.device.type == "cuda"
    np.testing.assert_allclose(on_gpu.cpu().numpy(), per_row(x).numpy(), rtol=1e-12)
