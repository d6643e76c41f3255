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


GLOBAL_POOLS = [((8, 32, 4, 4, 4), 1), ((2, 3, 5, 6, 7), (2, 1, 1)), ((3, 4, 6, 5), (None, 1, 1)), ((2, 5, 3, 1, 4), (3, 1, 1))]


@pytest.mark.parametrize("shape, size", GLOBAL_POOLS)
@pytest.mark.parametrize("name", ["adaptive_avg_pool3d", "adaptive_max_pool3d"])
def test_adaptive_pool3d_over_whole_slices_is_one_stage_with_torchs_values(name, shape, size):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    xt = numdiff.tensor(x, requires_grad=True)
    counts = _op_counts(lambda: getattr(nf, name)(xt, size).sum().backward())
    assert counts.get(name.replace("3d", "2d")) == 1  # no (H, W) stage before the depth stage
    ref = torch.tensor(x, requires_grad=True)
    expected = getattr(torch.nn.functional, name)(ref, size)
    (expected * torch.arange(expected.numel()).reshape(expected.shape)).sum().backward()
    out = getattr(nf, name)(xt, size)
    xt.grad = None
    (out * numdiff.arange(out.numel()).reshape(tuple(out.shape))).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(xt.grad.numpy(), ref.grad.numpy(), rtol=1e-6, atol=1e-7)
    if name == "adaptive_max_pool3d":
        indices = nf.adaptive_max_pool3d(xt, size, return_indices=True)[1]
        assert indices.tolist() == torch.nn.functional.adaptive_max_pool3d(ref, size, return_indices=True)[1].tolist()


@pytest.mark.parametrize("name", ["adaptive_avg_pool3d", "adaptive_max_pool3d"])
def test_adaptive_pool3d_over_whole_slices_gradchecks_in_float64(name):
    x = numdiff.tensor(np.random.default_rng(2).permutation(60).reshape(1, 2, 3, 2, 5) / 7.0, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: getattr(nf, name)(t, (2, 1, 1)), (x,))
    assert numdiff.autograd.gradgradcheck(lambda t: getattr(nf, name)(t, (2, 1, 1)), (x,))


def test_adaptive_pool3d_whole_slices_still_refuses_a_bad_size():
    with pytest.raises(ValueError, match="adaptive_avg_pool3d"):
        nf.adaptive_avg_pool3d(numdiff.ones(1, 2, 3, 4, 5), (0, 1, 1))
    with pytest.raises(ValueError, match="adaptive_max_pool3d"):
        nf.adaptive_max_pool3d(numdiff.ones(2, 3, 4), 1)


def _awkward_planes(shape: tuple) -> np.ndarray:
    """Values with ties, NaNs (one and several in a plane), infinities and an all -inf plane."""
    x = np.random.default_rng(4).integers(-3, 4, shape).astype(np.float32)
    flat = x.reshape(-1, x.shape[-1] if len(shape) == 3 else x.shape[-2] * x.shape[-1])
    flat[1, 2] = np.nan
    flat[2, 1], flat[2, 3] = np.nan, np.nan
    flat[3, 0] = np.inf
    flat[4, :] = -np.inf
    return x


@pytest.mark.parametrize("shape", [(3, 4, 9), (2, 5, 4), (2, 3, 4, 5), (3, 2, 1, 6)])
def test_global_adaptive_max_pooling_keeps_torchs_argmax_rule(shape):
    x = _awkward_planes(shape)
    name = "adaptive_max_pool1d" if len(shape) == 3 else "adaptive_max_pool2d"
    values, indices = getattr(nf, name)(numdiff.tensor(x), 1, return_indices=True)
    their_values, their_indices = getattr(torch.nn.functional, name)(torch.tensor(x), 1, return_indices=True)
    np.testing.assert_array_equal(values.numpy(), their_values.numpy())  # NaN where torch has NaN
    assert indices.tolist() == their_indices.tolist()
