"""LayerNorm's row kernels (numdiff.kernels.norm_rows), which group_norm_forward/backward take for the
view (R, 1, 1, D, 1): the same numbers as the general kernels, and as PyTorch's layer_norm, at row
counts that split into several parallel blocks (and one that does not divide evenly)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.autograd import gradcheck
from numdiff.kernels import norm, norm_rows


def _general_forward(x, w, b, eps):
    out, mean, rstd = np.empty_like(x), np.empty((x.shape[0], 1), x.dtype), np.empty((x.shape[0], 1), x.dtype)
    norm._FORWARD.parallel(x, w, b, eps, out, mean, rstd)
    return out, mean, rstd


@pytest.mark.parametrize("rows, width", [(1, 5), (63, 7), (130, 40), (257, 128)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_kernels_match_the_general_kernels(rows, width, dtype):
    rng = np.random.default_rng(rows * width)
    view = (rows, 1, 1, width, 1)
    x = (rng.standard_normal(view) * 3 + 5).astype(dtype)
    w, b = (rng.standard_normal((1, width)).astype(dtype) for _ in range(2))
    grad = rng.standard_normal(view).astype(dtype)
    out, mean, rstd = np.empty_like(x), np.empty((rows, 1), dtype), np.empty((rows, 1), dtype)
    norm.group_norm_forward(x, w, b, 1e-5, out, mean, rstd)
    expected = _general_forward(x, w, b, 1e-5)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for got, want in zip((out, mean, rstd), expected):
        np.testing.assert_allclose(got, want, **tol)
    dx, dw, db = np.empty_like(x), np.empty((1, width), dtype), np.empty((1, width), dtype)
    norm.group_norm_backward(grad, x, w, mean, rstd, dx, dw, db)
    ref_dx, parts = np.empty_like(x), np.empty((2, rows, 1, width), dtype)
    norm._BACKWARD.parallel(grad, x, w, mean, rstd, ref_dx, parts[0], parts[1])
    np.testing.assert_allclose(dx, ref_dx, **tol)
    np.testing.assert_allclose(dw[0], parts[0].sum(axis=0)[0], **tol)
    np.testing.assert_allclose(db[0], parts[1].sum(axis=0)[0], **tol)


@pytest.mark.parametrize("shape, dtype", [((4, 33, 96), "float32"), ((3, 50, 24), "float64")])
def test_layer_norm_over_many_rows_matches_torch(shape, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 2 - 1).astype(dtype)
    w, b = (rng.standard_normal(shape[-1]).astype(dtype) for _ in range(2))
    seed = rng.standard_normal(shape).astype(dtype)
    mine = [numdiff.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out_m = numdiff.nn.functional.layer_norm(mine[0], shape[-1:], mine[1], mine[2])
    out_t = torch.nn.functional.layer_norm(theirs[0], shape[-1:], theirs[1], theirs[2])
    (out_m * numdiff.tensor(seed)).sum().backward()
    (out_t * torch.tensor(seed)).sum().backward()
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), **tol)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), **tol)


def test_layer_norm_gradient_check_across_row_blocks():
    rng = np.random.default_rng(2)
    rows = norm_rows.ROWS_PER_PART + 9  # two blocks of rows, unequal
    x, w, b = (numdiff.tensor(rng.standard_normal(s), requires_grad=True) for s in ((rows, 3), (3,), (3,)))
    assert gradcheck(lambda x, w, b: numdiff.nn.functional.layer_norm(x, (3,), w, b), (x, w, b))


def test_row_path_refuses_a_wrong_weight_shape_by_name():
    x = np.zeros((4, 1, 1, 3, 1), np.float32)
    stats = np.zeros((4, 1), np.float32)
    with pytest.raises(ValueError, match=r"group_norm_backward: weight must have shape \(1, 3\)"):
        norm.group_norm_backward(x, x, np.ones((1, 4), np.float32), stats, stats, np.empty_like(x),
                                 np.empty((1, 3), np.float32), np.empty((1, 3), np.float32))  # fmt: skip
