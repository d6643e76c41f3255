"""The 1-d and 3-d layers of the volumetric and 1-d convolutional models (bench_models' cnn3d and
conv1d_text): each runs the passes it needs, and no more, with PyTorch's results."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.profiler import profile

nf = numdiff.nn.functional


def _op_counts(fn) -> dict:
    with profile() as prof:
        fn()
    return {e.key: e.count for e in prof.key_averages()}


@pytest.mark.parametrize("shape, size", [((4, 6, 20), 1), ((3, 5, 17), 4), ((5, 9), 3)])
def test_adaptive_max_pool1d_without_indices_pools_once(shape, size):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    xt = numdiff.tensor(x, requires_grad=True)
    counts = _op_counts(lambda: nf.adaptive_max_pool1d(xt, size).sum().backward())
    assert counts.get("adaptive_max_pool2d") == 1
    assert "adaptive_max_pool2d_indices" not in counts  # the indices' second pass over the input
    ref = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.adaptive_max_pool1d(ref, size)
    expected.sum().backward()
    np.testing.assert_array_equal(nf.adaptive_max_pool1d(xt, size).detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(xt.grad.numpy(), ref.grad.numpy())
    module = numdiff.nn.AdaptiveMaxPool1d(size)
    assert "adaptive_max_pool2d_indices" not in _op_counts(lambda: module(xt))
