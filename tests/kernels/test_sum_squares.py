"""numdiff.kernels.sum_squares against NumPy, and clip_grad_norm_ (which uses it for 2-norms of
host float gradients) against PyTorch in float32, eagerly and under numdiff.compile."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
from numdiff.kernels.sum_squares import sum_of_squares


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (37, 5), (3, 4, 130)])
def test_sum_of_squares_matches_a_float64_numpy_sum(dtype, shape):
    x = np.random.default_rng(10).standard_normal(shape).astype(dtype)
    expected = np.sum(x.astype(np.float64) ** 2)
    assert sum_of_squares(x) == pytest.approx(expected, rel=1e-13, abs=0.0)
    assert sum_of_squares(x.T) == pytest.approx(expected, rel=1e-13, abs=0.0)  # a strided view


def test_sum_of_squares_keeps_inf_and_nan():
    assert sum_of_squares(np.array([1.0, np.inf], np.float32)) == np.inf
    assert np.isnan(sum_of_squares(np.array([np.nan, 2.0])))


def test_sum_of_squares_refuses_other_dtypes():
    with pytest.raises(TypeError, match=r"sum_of_squares: x must be a float32 or float64 numpy.ndarray, got int64"):
        sum_of_squares(np.arange(3))
    with pytest.raises(TypeError, match=r"got float16"):
        sum_of_squares(np.ones(3, np.float16))


def _twins(torch, scale):
    rng = np.random.default_rng(11)
    arrays = [(rng.standard_normal(s) * scale).astype(np.float32) for s in ((500, 16), (4, 16), (4,))]
    ours = [numdiff.nn.Parameter(numdiff.zeros(*a.shape)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.zeros(a.shape)) for a in arrays]
    for p, q, a in zip(ours, theirs, arrays):
        p.grad, q.grad = numdiff.tensor(a), torch.tensor(a)
    return ours, theirs


@pytest.mark.parametrize("scale", [1e-3, 10.0], ids=["below-max", "above-max"])
def test_float32_clip_grad_norm_matches_torch(scale):
    torch = pytest.importorskip("torch")
    ours, theirs = _twins(torch, scale)
    total = numdiff.nn.utils.clip_grad_norm_(ours, max_norm=1.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm=1.0)
    assert total.dtype is numdiff.float32
    assert total.item() == pytest.approx(expected.item(), rel=1e-6)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_a_compiled_step_clips_each_call_by_that_call_s_norm():
    rng = np.random.default_rng(12)
    w = numdiff.nn.Parameter(numdiff.zeros(6, 3))
    optimizer = numdiff.optim.SGD([w], lr=1.0)

    def step(x):
        optimizer.zero_grad()
        (w * x).sum().backward()
        return numdiff.nn.utils.clip_grad_norm_([w], max_norm=1.0)

    compiled = numdiff.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # compile runs a step that reads .grad after backward() eagerly
        for scale in (0.01, 5.0, 20.0):
            x = rng.standard_normal((6, 3)).astype(np.float32) * scale
            total = compiled(numdiff.tensor(x))
            assert total.item() == pytest.approx(float(np.sqrt(np.sum(x.astype(np.float64) ** 2))), rel=1e-6)
            np.testing.assert_allclose(w.grad.numpy(), x * min(1.0, 1.0 / (total.item() + 1e-6)), rtol=1e-6)
