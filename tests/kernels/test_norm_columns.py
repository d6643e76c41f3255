"""BatchNorm's column kernels (numdiff.kernels.norm_columns), which group_norm_forward/moments/backward
take for the view (1, N, C, 1, 1) of (N, C) input: the same numbers as the general kernels, and as
PyTorch's batch_norm, in the serial and the parallel build, at column counts that split into blocks
unevenly and row counts from 2 up."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.autograd import gradcheck
from numdiff.kernels import norm
from numdiff.kernels._parallel import always_parallel, always_serial


def _general(x, w, b, eps, grad):
    """The general kernels' forward, moments and backward on the same view."""
    columns = x.shape[2]
    out, mean, rstd = np.empty_like(x), np.empty((1, columns), x.dtype), np.empty((1, columns), x.dtype)
    norm._FORWARD.serial(x, w, b, eps, out, mean, rstd)
    moments = np.empty((2, 1, columns), x.dtype)
    norm._MOMENTS.serial(x, moments)
    dx, parts = np.empty_like(x), np.empty((2, 1, columns, 1), x.dtype)
    norm._BACKWARD.serial(grad, x, w, mean, rstd, dx, parts[0], parts[1])
    return out, mean, rstd, moments, dx, parts[0][0], parts[1][0]


@pytest.mark.parametrize("rows, columns", [(2, 1), (7, 17), (64, 100), (300, 257)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("build", [always_serial, always_parallel])
def test_column_kernels_match_the_general_kernels(rows, columns, dtype, build):
    rng = np.random.default_rng(rows + columns)
    view = (1, rows, columns, 1, 1)
    x = (rng.standard_normal(view) * 3 + 5).astype(dtype)
    w, b = (rng.standard_normal((columns, 1)).astype(dtype) for _ in range(2))
    grad = rng.standard_normal(view).astype(dtype)
    assert norm._is_columns(x, w, b)
    out, mean, rstd = np.empty_like(x), np.empty((1, columns), dtype), np.empty((1, columns), dtype)
    moments = np.full((2, 1, columns), np.nan, dtype)
    dx, dw, db = np.empty_like(x), np.empty((columns, 1), dtype), np.empty((columns, 1), dtype)
    with build():
        norm.group_norm_forward(x, w, b, 1e-5, out, mean, rstd)
        norm.group_norm_moments(x, moments)
        norm.group_norm_backward(grad, x, w, mean, rstd, dx, dw, db)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for got, want in zip((out, mean, rstd, moments, dx, dw, db), _general(x, w, b, 1e-5, grad)):
        np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("shape, dtype", [((256, 64), "float32"), ((33, 40), "float64"), ((2, 5), "float64")])
def test_batch_norm_1d_on_rows_matches_torch_with_its_running_statistics(shape, dtype):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * 2 - 1).astype(dtype)
    seed = rng.standard_normal(shape).astype(dtype)
    layers = [lib.nn.BatchNorm1d(shape[1]) for lib in (numdiff, torch)]
    layers = [layers[0].to(getattr(numdiff, dtype)), layers[1].to(getattr(torch, dtype))]
    inputs = [numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)]
    outs = [layer(t) for layer, t in zip(layers, inputs)]
    (outs[0] * numdiff.tensor(seed)).sum().backward()
    (outs[1] * torch.tensor(seed)).sum().backward()
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(outs[0].detach().numpy(), outs[1].detach().numpy(), **tol)
    np.testing.assert_allclose(inputs[0].grad.numpy(), inputs[1].grad.numpy(), **tol)
    for name in ("weight", "bias"):
        np.testing.assert_allclose(getattr(layers[0], name).grad.numpy(), getattr(layers[1], name).grad.numpy(), **tol)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(layers[0], name).numpy(), getattr(layers[1], name).numpy(), **tol)


def test_batch_norm_on_rows_passes_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(3)
    x, w, b = (numdiff.tensor(rng.standard_normal(s), requires_grad=True) for s in ((6, 4), (4,), (4,)))

    def f(x, w, b):
        return numdiff.nn.functional.batch_norm(x, None, None, w, b, training=True)

    assert gradcheck(f, (x, w, b))
    assert numdiff.autograd.gradgradcheck(f, (x, w, b))


def test_batch_norm_on_one_row_is_refused_before_any_kernel():
    with pytest.raises(ValueError, match="batch_norm: expected more than 1 value per channel"):
        numdiff.nn.functional.batch_norm(numdiff.ones(1, 4), None, None, training=True)
