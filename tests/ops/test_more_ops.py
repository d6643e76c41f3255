"""cumsum, diagonal, norm, scatter, nonzero, ... against torch 2.13: values, dtypes, shapes and
gradients from the same code run with either library, plus bad inputs and in-place rules.

Each parity case is ``fn(lib, *tensors)`` called once with ``lib=numdiff`` and once with
``lib=torch`` on the same arrays (float64 ones require grad)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import numdiff
from numdiff.tensor import InPlaceOnLeafError

RNG = np.random.default_rng(7)


def _normal(*shape):
    return RNG.standard_normal(shape)


def _ints(low, high, *shape):
    return RNG.integers(low, high, shape)


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "").replace("numdiff.", "")


def _run_both(fn, arrays):
    ours = [numdiff.tensor(a, requires_grad=a.dtype == np.float64) if isinstance(a, np.ndarray) else a for a in arrays]
    theirs = [torch.tensor(a, requires_grad=a.dtype == np.float64) if isinstance(a, np.ndarray) else a for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.cross without dim warns about its default
        expected = _as_tuple(fn(torch, *theirs))
    got = _as_tuple(fn(numdiff, *ours))
    return ours, theirs, got, expected


def _check_parity(fn, *arrays, grads: bool = True, single: bool = False) -> None:
    ours, theirs, got, expected = _run_both(fn, arrays)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert tuple(g.shape) == tuple(e.shape), (tuple(g.shape), tuple(e.shape))
        assert _dtype_name(g) == _dtype_name(e)
        # float32 sums may associate differently from PyTorch's vectorized loops.
        rtol = 1e-6 if e.dtype == torch.float32 else 1e-12
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=rtol, atol=rtol)
    differentiable = [(g, e) for g, e in zip(got, expected) if e.requires_grad]
    if not grads or not differentiable:
        return
    rng = np.random.default_rng(1)
    loss_ours = loss_theirs = 0
    for g, e in differentiable:
        weight = rng.standard_normal(tuple(e.shape))
        loss_ours = loss_ours + (g * numdiff.tensor(weight)).sum()
        loss_theirs = loss_theirs + (e * torch.tensor(weight)).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for o, t in zip(ours, theirs):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            expected_grad = t.grad.numpy() if t.grad is not None else np.zeros(tuple(t.shape))
            got_grad = o.grad.numpy() if o.grad is not None else np.zeros(tuple(o.shape))
            rtol = 1e-6 if single or any(e.dtype == torch.float32 for _, e in differentiable) else 1e-12
            np.testing.assert_allclose(got_grad, expected_grad, rtol=rtol, atol=rtol)


PARITY = {
    "cumsum": (lambda m, x: m.cumsum(x, dim=-1), _normal(2, 3)),
    "cumsum-method-dtype": (lambda m, x: x.cumsum(0, dtype=m.float32), _normal(3)),
    "cumsum-int": (lambda m, x: m.cumsum(x, 0), _ints(0, 5, 4)),
    "cumsum-bool": (lambda m, x: x.cumsum(1), _ints(0, 2, 2, 3).astype(bool)),
    "cumsum-0d": (lambda m, x: m.cumsum(x, -1), _normal()),
    "cumsum-empty": (lambda m, x: m.cumsum(x, 0), np.zeros((0, 2))),
    "cumprod": (lambda m, x: m.cumprod(x, 1), RNG.uniform(0.5, 2, (2, 4))),
    "cumprod-zeros": (lambda m, x: x.cumprod(0), np.array([[1.5, 0.0], [0.0, 2.0], [3.0, 0.5]])),
    "cumprod-int": (lambda m, x: m.cumprod(x, 0), _ints(1, 4, 3)),
    "cummax": (lambda m, x: m.cummax(x, 0), np.array([1.0, 3.0, 3.0, 2.0, math.nan, 5.0, math.nan, 1.0])),
    "cummin-dim": (lambda m, x: x.cummin(-1), np.array([[3.0, 1.0, 1.0, 2.0], [0.5, 4.0, -1.0, -1.0]])),
    "cummax-int": (lambda m, x: m.cummax(x, 1), _ints(0, 4, 2, 5)),
    "cummax-0d": (lambda m, x: x.cummax(0), _normal()),
    "cummin-empty": (lambda m, x: m.cummin(x, 0), np.zeros((0, 2))),
    "diag-1d": (lambda m, x: m.diag(x, 2), _normal(3)),
    "diag-2d": (lambda m, x: m.diag(x, -1), _normal(3, 4)),
    "diag-2d-past-edge": (lambda m, x: x.diag(7), _normal(3, 4)),
    "diagonal": (lambda m, x: m.diagonal(x, offset=1, dim1=-1, dim2=0), _normal(3, 2, 4)),
    "diagonal-method": (lambda m, x: x.diagonal(-2), _normal(4, 3)),
    "diag_embed": (lambda m, x: m.diag_embed(x), _normal(2, 3)),
    "diag_embed-dims": (lambda m, x: m.diag_embed(x, -1, 2, 0), _normal(2, 3)),
    "diag_embed-method": (lambda m, x: x.diag_embed(2, dim1=0, dim2=-1), _normal(3)),
    "cdist": (lambda m, a, b: m.cdist(a, b), _normal(2, 4, 3), _normal(2, 5, 3)),
    "cdist-p1-broadcast": (lambda m, a, b: m.cdist(a, b, p=1), _normal(1, 3, 2), _normal(2, 4, 2)),
    "cdist-pinf": (lambda m, a, b: m.cdist(a, b, p=math.inf), _normal(3, 2), _normal(4, 2)),
    "cdist-p0": (lambda m, a, b: m.cdist(a, b, p=0), _normal(3, 2), _normal(4, 2)),
    "cdist-zero-distance": (lambda m, a: m.cdist(a, a), _normal(3, 2)),
    # More than 25 rows on either side: PyTorch's default switches p=2 to its matrix-product form.
    "cdist-mm-by-default": (lambda m, a, b: m.cdist(a, b), _normal(30, 4), _normal(3, 4)),
    "cdist-mm-by-default-right": (lambda m, a, b: m.cdist(a, b), _normal(2, 4, 7), _normal(1, 27, 7)),
    "cdist-mm-forced": (lambda m, a, b: m.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), _normal(3, 5), _normal(4, 5)),
    "cdist-mm-refused": (lambda m, a, b: m.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"), _normal(30, 3), _normal(28, 3)),
    "cdist-mm-float32": (lambda m, a, b: m.cdist(a, b), _normal(40, 16).astype(np.float32), _normal(33, 16).astype(np.float32)),
    "prod-two-zeros-in-a-group": (lambda m, x: x.prod(-1), np.array([[0.0, 2.0, 0.0, 3.0], [1.5, 0.0, -2.0, 1.0], [0.5, 2.0, 3.0, 4.0]])),
    "prod-dims-keepdim-transposed": (lambda m, x: m.prod(x.mT, 0, keepdim=True), np.where(_normal(4, 3, 5) > 1, 0.0, _normal(4, 3, 5))),
    "prod-single-element-groups": (lambda m, x: x.prod(1), _normal(3, 1)),
    "trace": (lambda m, x: m.trace(x), _normal(3, 5)),
    "trace-int": (lambda m, x: x.trace(), _ints(0, 9, 3, 3)),
    "roll-flat": (lambda m, x: m.roll(x, -4), _normal(2, 3)),
    "roll-tuple": (lambda m, x: x.roll((1, 5), (-1, 0)), _normal(2, 3)),
    "roll-0d": (lambda m, x: m.roll(x, 3), _normal()),
    "unbind": (lambda m, x: m.unbind(x, -1), _normal(2, 3)),
    "tile-short": (lambda m, x: m.tile(x, (2,)), _normal(2, 3)),
    "tile-long": (lambda m, x: x.tile((2, 1, 3)), _normal(2, 3)),
    "select": (lambda m, x: m.select(x, 1, -1), _normal(2, 3)),
    "select-method": (lambda m, x: x.select(0, 1), _normal(2, 3)),
    "narrow-negative": (lambda m, x: m.narrow(x, -1, -2, 2), _normal(2, 4)),
    "narrow-tensor-start": (lambda m, x: x.narrow(0, m.tensor(1), 2), _normal(4)),
    "movedim": (lambda m, x: m.movedim(x, -1, 0), _normal(2, 3, 4)),
    "moveaxis-lists": (lambda m, x: x.moveaxis([0, 2], [1, 0]), _normal(2, 3, 4)),
    "swapaxes": (lambda m, x: m.swapaxes(x, 0, -1), _normal(2, 3)),
    "swapdims": (lambda m, x: x.swapdims(1, 2), _normal(2, 3, 4)),
    "vstack": (lambda m, a, b: m.vstack([a, b]), _normal(3), _normal(2, 3)),
    "hstack": (lambda m, a, b: m.hstack((a, b)), _normal(2, 1), _normal(2, 3)),
    "hstack-1d": (lambda m, a, b: m.hstack((a, b)), _normal(2), _normal()),
    "dstack": (lambda m, a, b: m.dstack([a, b]), _normal(2, 3), _normal(2, 3, 2)),
    "column_stack": (lambda m, a, b: m.column_stack([a, b]), _normal(3), _normal(3, 2)),
    "atleast_3d": (lambda m, a, b: m.atleast_3d(a, b), _normal(), _normal(2, 3)),
    "repeat_interleave-int": (lambda m, x: m.repeat_interleave(x, 3), _normal(2, 2)),
    "repeat_interleave-dim": (lambda m, x: x.repeat_interleave(2, dim=-2), _normal(2, 3)),
    "repeat_interleave-tensor": (lambda m, x, r: m.repeat_interleave(x, r, dim=1), _normal(2, 3), np.array([1, 0, 2])),
    "repeat_interleave-counts-only": (lambda m, r: m.repeat_interleave(r), np.array([2, 0, 3])),
    "meshgrid-ij": (lambda m, a, b, c: m.meshgrid(a, b, c, indexing="ij"), _normal(2), _normal(3), _normal()),
    "meshgrid-xy": (lambda m, a, b: m.meshgrid([a, b], indexing="xy"), _normal(2), _normal(3)),
    "norm-default": (lambda m, x: m.norm(x), _normal(2, 3)),
    "norm-zero-vector": (lambda m, x: m.norm(x), np.zeros(3)),
    "norm-fro-dims": (lambda m, x: x.norm("fro", dim=(0, 2), keepdim=True), _normal(2, 3, 2)),
    "norm-p1": (lambda m, x: m.norm(x, p=1, dim=-1), _normal(2, 3)),
    "norm-p2-dim": (lambda m, x: x.norm(2, 0), _normal(3, 2)),
    "norm-inf": (lambda m, x: m.norm(x, float("inf"), dim=1), _normal(2, 3)),
    "norm-ninf": (lambda m, x: m.norm(x, -math.inf), _normal(2, 3)),
    "norm-p0": (lambda m, x: m.norm(x, 0, dim=0), np.array([[0.0, 1.0], [2.0, 0.0], [3.0, 0.0]])),
    "norm-p0-inf-nan": (lambda m, x: m.norm(x, 0), np.array([0.0, math.inf, math.nan, -0.0])),
    "norm-p3": (lambda m, x: m.norm(x, 3.5, dim=1), _normal(2, 3)),
    "norm-dtype": (lambda m, x: m.norm(x.float(), dtype=m.float64), _normal(3)),
    "norm-0d": (lambda m, x: m.norm(x), _normal()),
    "linalg.vector_norm": (lambda m, x: m.linalg.vector_norm(x, ord=3, dim=(0, 1)), _normal(3, 4)),
    "linalg.vector_norm-0": (lambda m, x: m.linalg.vector_norm(x, 0), np.array([0.0, 2.0, -1.0])),
    "linalg.matrix_norm-fro": (lambda m, x: m.linalg.matrix_norm(x, keepdim=True), _normal(2, 3, 4)),
    "linalg.matrix_norm-1": (lambda m, x: m.linalg.matrix_norm(x, ord=1), _normal(2, 3, 4)),
    "linalg.matrix_norm-ninf": (lambda m, x: m.linalg.matrix_norm(x, -math.inf, dim=(0, 2)), _normal(3, 2, 4)),
    "linalg.matrix_norm-inf": (lambda m, x: m.linalg.matrix_norm(x, math.inf), _normal(3, 4)),
    "linalg.matrix_norm--1": (lambda m, x: m.linalg.matrix_norm(x, -1, dim=(1, 0), keepdim=True), _normal(3, 4)),
    "linalg.norm": (lambda m, x: m.linalg.norm(x), _normal(2, 3, 2)),
    "linalg.norm-ord-2d": (lambda m, x: m.linalg.norm(x, ord=math.inf), _normal(3, 4)),
    "linalg.norm-ord-1d": (lambda m, x: m.linalg.norm(x, 1), _normal(4)),
    "linalg.norm-dim": (lambda m, x: m.linalg.norm(x, dim=1, keepdim=True), _normal(2, 3)),
    "linalg.norm-dims": (lambda m, x: m.linalg.norm(x, 1, dim=(0, 1)), _normal(2, 3)),
    "linalg.cross": (lambda m, a, b: m.linalg.cross(a, b), _normal(2, 3), _normal(1, 3)),
    "linalg.diagonal": (lambda m, x: m.linalg.diagonal(x, offset=1), _normal(2, 3, 3)),
    "diff": (lambda m, x: m.diff(x), _normal(2, 4)),
    "diff-n-append": (lambda m, x, a: m.diff(x, n=2, dim=0, append=a), _normal(3, 2), _normal(1, 2)),
    "diff-too-many": (lambda m, x: x.diff(n=5), _normal(3)),
    "diff-bool": (lambda m, x: m.diff(x), np.array([True, False, False, True])),
    "diff-int": (lambda m, x: m.diff(x), _ints(0, 9, 4)),
    "cross": (lambda m, a, b: m.cross(a, b, dim=0), _normal(3, 2), _normal(3, 2)),
    "cross-default-dim": (lambda m, a, b: m.cross(a, b), _normal(2, 3), _normal(2, 3)),
    "cross-method-broadcast": (lambda m, a, b: a.cross(b, dim=-1), _normal(2, 1, 3), _normal(1, 4, 3)),
    "tensordot-int": (lambda m, a, b: m.tensordot(a, b, dims=1), _normal(2, 3), _normal(3, 4)),
    "tensordot-zero": (lambda m, a, b: m.tensordot(a, b, dims=0), _normal(2), _normal(3)),
    "tensordot-lists": (lambda m, a, b: m.tensordot(a, b, dims=([0, 1], [1, 0])), _normal(2, 3, 4), _normal(3, 2)),
    "inner": (lambda m, a, b: m.inner(a, b), _normal(2, 3), _normal(3)),
    "inner-0d": (lambda m, a, b: a.inner(b), _normal(), _normal(2)),
    "addmm": (lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=-2), _normal(2, 1), _normal(2, 3), _normal(3, 4)),
    "addmm-beta0-nan": (lambda m, c, a, b: m.addmm(c, a, b, beta=0), np.full(4, math.nan), _normal(2, 3), _normal(3, 4)),
    "addmm-bias": (lambda m, c, a, b: m.addmm(c, a, b), _normal(4), _normal(2, 3), _normal(3, 4)),
    "addmm-bias-float32": (lambda m, c, a, b: m.addmm(c.float(), a.float(), b.float()), _normal(4), _normal(2, 3), _normal(3, 4)),
    "addmm-method": (lambda m, c, a, b: c.addmm(a, b), _normal(2, 4), _normal(2, 3), _normal(3, 4)),
    "addmv": (lambda m, c, a, b: m.addmv(c, a, b, alpha=3), _normal(2), _normal(2, 3), _normal(3)),
    "baddbmm": (lambda m, c, a, b: m.baddbmm(c, a, b, beta=2), _normal(3), _normal(2, 2, 4), _normal(2, 4, 3)),
    "addcmul": (lambda m, x, a, b: m.addcmul(x, a, b, value=-0.5), _normal(2, 3), _normal(3), _normal(2, 1)),
    "addcmul-int": (lambda m, x, a, b: x.addcmul(a, b, value=2), _ints(0, 5, 3), _ints(0, 5, 3), _ints(0, 5, 3)),
    "addcdiv": (lambda m, x, a, b: m.addcdiv(x, a, b, value=2), _normal(3), _normal(2, 3), RNG.uniform(0.5, 2, (3,))),
    "scatter-src": (lambda m, x, i, s: m.scatter(x, 1, i, s), _normal(2, 4), np.array([[3, 0], [1, 2]]), _normal(2, 2)),
    "scatter-value": (lambda m, x, i: x.scatter(0, i, -1.5), _normal(3, 2), np.array([[2, 0]])),
    "scatter-value-kw": (lambda m, x, i: m.scatter(x, 0, i, value=4), _ints(0, 9, 3, 2), np.array([[2, 0]])),
    "scatter-reduce-add": (lambda m, x, i, s: x.scatter(0, i, s, reduce="add"), _normal(3), np.array([1, 1]), _normal(2)),
    # torch records no derivative for reduce="multiply", so the parity cases hold integers
    "scatter-reduce-multiply": (lambda m, x, i, s: x.scatter(1, i, s, reduce="multiply"), _ints(1, 6, 2, 3), np.array([[0, 0, 2], [1, 1, 1]]), _ints(1, 6, 2, 3)),
    "scatter-reduce-multiply-value": (lambda m, x, i: m.scatter(x, 0, i, value=3, reduce="multiply"), _ints(1, 6, 3, 2), np.array([[2, 0], [2, 2]])),
    "index_add": (lambda m, x, i, s: m.index_add(x, 0, i, s, alpha=3), _normal(3, 2), np.array([2, 2, 0]), _normal(3, 2)),
    "index_add-dim": (lambda m, x, i, s: x.index_add(-1, i, s), _normal(2, 3), np.array([1]), _normal(2, 1)),
    "masked_select": (lambda m, x, k: m.masked_select(x, k), _normal(2, 3), _normal(3) > 0),
    "masked_select-method": (lambda m, x, k: x.masked_select(k), _normal(3), _normal(2, 3) > 0),
    "take": (lambda m, x, i: m.take(x, i), _normal(2, 3), np.array([[5, -6], [0, 0]])),
    "take-0d-index": (lambda m, x, i: x.take(i), _normal(2, 3), np.array(4)),
    "nansum": (lambda m, x: m.nansum(x + m.tensor([math.nan, 0.0, 0.0], dtype=m.float64), dim=1, keepdim=True), _normal(2, 3)),
    "nansum-int": (lambda m, x: x.nansum(), _ints(0, 5, 4)),
    # No all-NaN column: there torch's gradient is NaN (its nanmean multiplies by the mask) and
    # numdiff's 0 (masked_fill gives the NaN elements an exact zero, as torch's own masked_fill does).
    "nanmean": (lambda m, x: m.nanmean(x + m.tensor([[math.nan, 0.0, 0.0], [0.0, 0.0, math.nan]], dtype=m.float64), 0), _normal(2, 3)),
    "nanmean-dtype": (lambda m, x: x.nanmean(dtype=m.float32), _normal(2, 3)),
    "count_nonzero": (lambda m, x: m.count_nonzero(x), np.array([[0.0, 1.0], [2.0, 0.0]])),
    "count_nonzero-dims": (lambda m, x: x.count_nonzero(dim=(0, -1)), _ints(0, 2, 2, 3, 2)),
    "nonzero": (lambda m, x: m.nonzero(x), _ints(0, 2, 3, 4)),
    "nonzero-0d": (lambda m, x: m.nonzero(x), np.array(2.0)),
    "nonzero-tuple": (lambda m, x: x.nonzero(as_tuple=True), _ints(0, 2, 3, 4)),
    "nonzero-tuple-0d": (lambda m, x: m.nonzero(x, as_tuple=True), np.array(True)),
    "argwhere": (lambda m, x: m.argwhere(x), np.array([[0.0, 1.5], [0.0, -2.0]])),
    "argwhere-0d-zero": (lambda m, x: x.argwhere(), np.array(0.0)),
    "isclose": (
        lambda m, a, b: m.isclose(a, b),
        np.array([1.0, math.inf, math.nan, 1.0, -math.inf]),
        np.array([1.0 + 1e-9, math.inf, math.nan, 1.1, math.inf]),
    ),
    "isclose-nan-tol": (
        lambda m, a, b: a.isclose(b, rtol=0.2, atol=0.0, equal_nan=True),
        np.array([1.0, math.nan, 2.0]),
        np.array([1.15, math.nan, 2.5]),
    ),
    "isclose-int": (lambda m, a, b: m.isclose(a, b), np.array([1, 2, 10**9]), np.array([1, 3, 10**9 + 1])),
    "isclose-bool": (lambda m, a, b: m.isclose(a, b), np.array([True, False]), np.array([True, True])),
    "unique": (lambda m, x: m.unique(x), np.array([3, 1, 3, 2, 1])),
    "unique-all": (
        lambda m, x: x.unique(sorted=False, return_inverse=True, return_counts=True),
        np.array([[3.0, 1.0], [3.0, 2.0]], dtype=np.float32),
    ),
    # each NaN is its own value in PyTorch; NumPy's default merged them (values, inverse, counts)
    "unique-nan": (
        lambda m, x: m.unique(x, return_inverse=True, return_counts=True),
        np.array([2.0, math.nan, 1.0, math.nan, 2.0]),
    ),
    "unique-dim": (
        lambda m, x: m.unique(x, return_inverse=True, return_counts=True, dim=0),
        np.array([[1, 2], [0, 5], [1, 2]]),
    ),
    "searchsorted": (lambda m, s, v: m.searchsorted(s, v), np.array([1.0, 3.0, 5.0]), np.array([[3.0, 6.0], [0.0, 1.0]])),
    "searchsorted-right-int32": (
        lambda m, s, v: m.searchsorted(s, v, right=True, out_int32=True), np.array([1, 3, 3, 5]), np.array([3, 4]),
    ),
    "searchsorted-rows": (
        lambda m, s, v: m.searchsorted(s, v, side="right"), np.array([[1, 3, 5], [2, 4, 6]]), np.array([[3], [6]]),
    ),
    "searchsorted-sorter": (
        lambda m, s, v, o: m.searchsorted(s, v, sorter=o), np.array([5, 1, 3]), np.array([2, 5]), np.array([1, 2, 0]),
    ),
    "searchsorted-scalar": (lambda m, s: m.searchsorted(s, 4), np.array([1, 3, 5])),
    "searchsorted-keywords": (lambda m, s, v: m.searchsorted(sorted_sequence=s, input=v, side="right"), np.array([1, 3]), np.array([3])),
    "bucketize": (lambda m, v, b: m.bucketize(v, b), np.array([[1, 4], [5, 9]]), np.array([1, 3, 5])),
    "bucketize-right": (lambda m, v, b: m.bucketize(v, b, right=True), np.array([1.0, 4.0, 5.0]), np.array([1.0, 3.0, 5.0])),
    # empty tensors
    "empty-diagonal": (lambda m, x: m.diagonal(x), np.zeros((0, 3))),
    "empty-trace": (lambda m, x: m.trace(x), np.zeros((0, 0))),
    "empty-diag": (lambda m, x: m.diag(x, 1), np.zeros(0)),
    "empty-tile": (lambda m, x: m.tile(x, (2, 0)), _normal(2, 3)),
    "empty-scatter": (lambda m, x, i, s: m.scatter(x, 0, i, s), _normal(3), np.zeros(0, dtype=np.int64), np.zeros(0)),
    "empty-index_add": (lambda m, x, i, s: m.index_add(x, 1, i, s), _normal(2, 3), np.zeros(0, dtype=np.int64), np.zeros((2, 0))),
    "empty-masked_select": (lambda m, x, k: m.masked_select(x, k), np.zeros((0, 2)), np.zeros(2, dtype=bool)),
    "empty-take": (lambda m, x, i: m.take(x, i), _normal(3), np.zeros((0, 2), dtype=np.int64)),
    "empty-unique": (lambda m, x: m.unique(x, return_inverse=True, return_counts=True), np.zeros(0, dtype=np.int64)),
    "empty-searchsorted": (lambda m, s, v: m.searchsorted(s, v), np.array([1, 2]), np.zeros(0, dtype=np.int64)),
    "empty-diff": (lambda m, x: m.diff(x, dim=0), np.zeros((0, 2))),
    "empty-cross": (lambda m, a, b: m.cross(a, b, dim=1), np.zeros((0, 3)), np.zeros((0, 3))),
    "empty-tensordot": (lambda m, a, b: m.tensordot(a, b, 1), np.zeros((2, 0)), np.zeros((0, 3))),
    "empty-norm": (lambda m, x: m.norm(x), np.zeros((0, 3))),
    "empty-norm-dim": (lambda m, x: m.norm(x, 1, dim=0), np.zeros((0, 3))),
    "empty-nansum": (lambda m, x: m.nansum(x, 0), np.zeros((0, 3))),
    "empty-count_nonzero": (lambda m, x: m.count_nonzero(x, 1), np.zeros((2, 0))),
    "empty-repeat_interleave": (lambda m, x, r: m.repeat_interleave(x, r), np.zeros(0), np.zeros(0, dtype=np.int64)),
    "empty-roll": (lambda m, x: m.roll(x, 2, 0), np.zeros((0, 2))),
    "empty-meshgrid": (lambda m, a, b: m.meshgrid(a, b, indexing="ij"), np.zeros(0), _normal(2)),
    "empty-nonzero": (lambda m, x: m.nonzero(x), np.zeros((0, 3))),
    "empty-cumprod": (lambda m, x: m.cumprod(x, 1), np.zeros((2, 0))),
    "empty-addmm": (lambda m, c, a, b: m.addmm(c, a, b), _normal(2, 3), np.zeros((2, 0)), np.zeros((0, 3))),
}


# torch has no gradient for scatter with reduce, nor for unique (its float result still requires grad).
VALUES_ONLY = {"scatter-reduce-add", "unique-nan"}


@pytest.mark.parametrize("name", sorted(PARITY))
def test_matches_torch(name):
    fn, *arrays = PARITY[name]
    # A dtype= case passes its gradient through float32 on the way.
    _check_parity(fn, *arrays, grads=name not in VALUES_ONLY, single=name.endswith("-dtype"))


def test_cumprod_double_backward_matches_torch_with_zeros():
    x = np.array([[1.5, 0.0, 2.0, 0.5], [0.0, 0.0, 3.0, 1.0]])
    ours, theirs = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (g_ours,) = numdiff.autograd.grad(ours.cumprod(1).sum(), ours, create_graph=True)
    (g_theirs,) = torch.autograd.grad(theirs.cumprod(1).sum(), theirs, create_graph=True)
    np.testing.assert_allclose(g_ours.detach().numpy(), g_theirs.detach().numpy(), rtol=1e-12)
    (gg_ours,) = numdiff.autograd.grad((g_ours * g_ours).sum(), ours)
    (gg_theirs,) = torch.autograd.grad((g_theirs * g_theirs).sum(), theirs)
    np.testing.assert_allclose(gg_ours.numpy(), gg_theirs.numpy(), rtol=1e-12)


def test_diagonal_is_a_view_that_in_place_edits_reach():
    x = numdiff.zeros(3, 3)
    d = x.diagonal()
    d.add_(2.0)
    assert x._version == d._version == 1
    np.testing.assert_array_equal(x.numpy(), 2 * np.eye(3))
    x.diagonal(1).fill_(5.0)
    np.testing.assert_array_equal(x.numpy(), 2 * np.eye(3) + 5 * np.eye(3, k=1))
    x[0, 0] = 7.0
    assert d.tolist() == [7.0, 2.0, 2.0]


def test_diagonal_of_a_leaf_that_requires_grad_refuses_in_place():
    x = numdiff.zeros(2, 2, requires_grad=True)
    with pytest.raises(InPlaceOnLeafError, match="add_"):
        x.diagonal().add_(1.0)


def test_unbind_gives_views():
    x = numdiff.zeros(2, 3)
    rows = x.unbind(0)
    rows[1].fill_(4.0)
    assert x.tolist() == [[0.0, 0.0, 0.0], [4.0, 4.0, 4.0]]


@pytest.mark.parametrize(
    "method, args",
    [
        ("scatter_", lambda m: (0, m.tensor([[2, 0]]), m.tensor([[1.0, 2.0]], dtype=m.float64))),
        ("scatter_", lambda m: (1, m.tensor([[1], [0], [1]]), 3.0)),
        ("scatter_add_", lambda m: (0, m.tensor([[2, 2]]), m.tensor([[1.0, 2.0]], dtype=m.float64))),
        ("index_add_", lambda m: (0, m.tensor([1, 1]), m.ones(2, 2, dtype=m.float64), )),
        ("addmm_", lambda m: (m.ones(3, 4, dtype=m.float64), m.ones(4, 2, dtype=m.float64))),
        ("addcmul_", lambda m: (m.ones(2, dtype=m.float64) * 2, m.ones(3, 2, dtype=m.float64) * 3)),
        ("addcdiv_", lambda m: (m.ones(2, dtype=m.float64) * 2, m.ones(3, 2, dtype=m.float64) * 4)),
        ("cumsum_", lambda m: (0,)),
        ("cumprod_", lambda m: (1,)),
    ],
)
def test_in_place_forms_match_torch_values_and_versions(method, args):
    base = np.arange(6.0).reshape(3, 2)
    ours, theirs = numdiff.tensor(base), torch.tensor(base)
    out_ours = getattr(ours, method)(*args(numdiff))
    out_theirs = getattr(theirs, method)(*args(torch))
    assert out_ours is ours and out_theirs is theirs
    assert ours._version == theirs._version == 1
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # A non-leaf result of grad-tracking ops may be edited in place, and the gradient flows through.
    w_ours = numdiff.tensor(base, requires_grad=True)
    w_theirs = torch.tensor(base, requires_grad=True)
    y_ours, y_theirs = w_ours * 2, w_theirs * 2
    getattr(y_ours, method)(*args(numdiff))
    getattr(y_theirs, method)(*args(torch))
    (y_ours * y_ours).sum().backward()
    (y_theirs * y_theirs).sum().backward()
    np.testing.assert_allclose(w_ours.grad.numpy(), w_theirs.grad.numpy(), rtol=1e-12)
    leaf = numdiff.tensor(base, requires_grad=True)
    with pytest.raises(InPlaceOnLeafError, match=method):
        getattr(leaf, method)(*args(numdiff))


def test_in_place_scatter_gradient_reaches_src():
    x = numdiff.zeros(3, dtype=numdiff.float64)
    src = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    y = x * 1.0
    y.scatter_(0, numdiff.tensor([2, 0]), src)
    (y * numdiff.tensor([10.0, 20.0, 30.0])).sum().backward()
    assert src.grad.tolist() == [30.0, 10.0]


def test_meshgrid_outputs_carry_gradient():
    a = numdiff.tensor([1.0, 2.0], requires_grad=True)
    b = numdiff.tensor([3.0, 4.0, 5.0], requires_grad=True)
    x, y = numdiff.meshgrid(a, b, indexing="ij")
    (x * y).sum().backward()
    assert a.grad.tolist() == [12.0, 12.0]
    assert b.grad.tolist() == [3.0, 3.0, 3.0]


BAD = [
    (lambda: numdiff.cumsum(numdiff.ones(2, 3), 2), IndexError, r"cumsum: dimension 2 is out of range .* 2 dimensions"),
    (lambda: numdiff.cumprod(numdiff.ones(2), None), TypeError, r"cumprod: missing the required argument 'dim'"),
    (lambda: numdiff.cumsum([1.0], 0), TypeError, r"cumsum: argument 'input' must be a Tensor, not list"),
    (lambda: numdiff.diag(numdiff.ones(2, 2, 2)), ValueError, r"diag: expects a 1-D or 2-D tensor, got shape \(2, 2, 2\)"),
    (lambda: numdiff.diagonal(numdiff.ones(3)), ValueError, r"diagonal: .* at least 2 dimensions, got shape \(3,\)"),
    (lambda: numdiff.diagonal(numdiff.ones(2, 2), 0, 1, -1), ValueError, r"diagonal: dim1 and dim2 name the same dimension 1"),
    (lambda: numdiff.diagonal(numdiff.ones(2, 2), 0, 0, 2), IndexError, r"diagonal: dimension 2 is out of range"),
    (lambda: numdiff.diag_embed(numdiff.tensor(1.0)), ValueError, r"diag_embed: expects a tensor with at least 1 dimension"),
    (lambda: numdiff.diag_embed(numdiff.ones(2), 0, 0, -2), ValueError, r"diag_embed: dim1 and dim2 name the same dimension 0"),
    (lambda: numdiff.cdist(numdiff.ones(2, 3), numdiff.ones(2, 2)), ValueError, r"cdist: x1 and x2 must have the same number of columns, got shapes \(2, 3\) and \(2, 2\)"),
    (lambda: numdiff.cdist(numdiff.ones(3), numdiff.ones(2, 3)), ValueError, r"cdist: x1 and x2 must have at least 2 dimensions"),
    (lambda: numdiff.cdist(numdiff.ones(2, 3), numdiff.ones(2, 3), p=-1), ValueError, r"cdist: p must be a non-negative number, got -1"),
    (lambda: numdiff.cdist(numdiff.ones(2, 2, 3), numdiff.ones(3, 2, 3)), ValueError, r"cdist \(batch dimensions\): shapes \(2,\) and \(3,\) cannot be broadcast"),
    (lambda: numdiff.trace(numdiff.ones(2, 2, 2)), ValueError, r"trace: expects a 2-D tensor, got shape \(2, 2, 2\)"),
    (lambda: numdiff.roll(numdiff.ones(2, 2), (1, 2)), ValueError, r"roll: with dims=None, shifts must be a single integer"),
    (lambda: numdiff.roll(numdiff.ones(2, 2), (1, 2), 0), ValueError, r"roll: shifts \[1, 2\] and dims \[0\] must have the same length"),
    (lambda: numdiff.roll(numdiff.ones(2, 2), 1, 3), IndexError, r"roll: dimension 3 is out of range"),
    (lambda: numdiff.tile(numdiff.ones(2), (-1,)), ValueError, r"tile: repeats must be non-negative, got \[-1\]"),
    (lambda: numdiff.unbind(numdiff.tensor(1.0)), IndexError, r"unbind: a 0-d tensor"),
    (lambda: numdiff.select(numdiff.ones(2, 3), 1, 3), IndexError, r"select: index 3 is out of range for dimension 1 of size 3"),
    (lambda: numdiff.narrow(numdiff.ones(4), 0, 3, 2), ValueError, r"narrow: start \(3\) \+ length \(2\) exceeds the size 4"),
    (lambda: numdiff.narrow(numdiff.ones(4), 0, numdiff.tensor([1]), 2), TypeError, r"narrow: start must be an integer or a 0-d"),
    (lambda: numdiff.movedim(numdiff.ones(2, 3), (0, 1), 0), ValueError, r"movedim: source \[0, 1\] and destination \[0\]"),
    (lambda: numdiff.movedim(numdiff.ones(2, 3), (0, 0), (0, 1)), ValueError, r"movedim: repeated dim in source \[0, 0\]"),
    (lambda: numdiff.vstack([]), ValueError, r"vstack: expected a non-empty sequence"),
    (lambda: numdiff.hstack(numdiff.ones(2)), TypeError, r"hstack: expected a sequence of tensors, got Tensor"),
    (lambda: numdiff.repeat_interleave(numdiff.ones(3), numdiff.tensor([1, 2])), ValueError, r"repeats has 2 counts but the dimension has size 3"),
    (lambda: numdiff.repeat_interleave(numdiff.ones(2), numdiff.tensor([1, -1])), ValueError, r"repeats must be non-negative, got \[1, -1\]"),
    (lambda: numdiff.repeat_interleave(numdiff.ones(2), -2), ValueError, r"repeats must be non-negative, got -2"),
    (lambda: numdiff.repeat_interleave(numdiff.ones(2), numdiff.tensor([1.0, 2.0])), TypeError, r"repeats must be an int or a 1-D integer tensor"),
    (lambda: numdiff.meshgrid(numdiff.ones(2, 2)), ValueError, r"meshgrid: expects 0-d or 1-D tensors, got shape \(2, 2\)"),
    (lambda: numdiff.meshgrid(numdiff.ones(2), indexing="ji"), ValueError, r"meshgrid: indexing must be 'ij' or 'xy'"),
    (lambda: numdiff.norm(numdiff.tensor([3, 4])), TypeError, r"norm: expected a floating point tensor as input, got numdiff.int64"),
    (lambda: numdiff.norm(numdiff.ones(2), "nuc"), ValueError, r"norm: p='nuc' needs two dims \(a matrix\), got dims \(0,\) of shape \(2,\)"),
    (lambda: numdiff.norm(numdiff.ones(2, 2), "spectral"), ValueError, r"norm: p='spectral' is not supported \(only 'fro', 'nuc' and numbers\)"),
    (lambda: numdiff.norm(numdiff.ones(0), float("inf")), RuntimeError, r"norm: the inf norm of an empty tensor"),
    (lambda: numdiff.linalg.matrix_norm(numdiff.ones(2, 2), 3), ValueError, r"linalg.matrix_norm: ord=3 is not supported"),
    (lambda: numdiff.linalg.matrix_norm(numdiff.ones(2)), ValueError, r"linalg.matrix_norm: expects a tensor with at least 2 dimensions"),
    (lambda: numdiff.linalg.matrix_norm(numdiff.ones(2, 2), dim=(0, -2)), ValueError, r"linalg.matrix_norm: dims \(0, -2\) name the same"),
    (lambda: numdiff.linalg.norm(numdiff.ones(2, 2, 2), 1), ValueError, r"linalg.norm: with ord given and dim None the input must be 1-D or 2-D"),
    (lambda: numdiff.linalg.vector_norm(numdiff.tensor([1, 2])), TypeError, r"norm: expected a floating point tensor"),
    (lambda: numdiff.norm(numdiff.ones(2, dtype=numdiff.float64), dtype=numdiff.float32), TypeError, r"norm: dtype numdiff.float32 would narrow the input's numdiff.float64"),
    (lambda: numdiff.nanmean(numdiff.tensor([1, 2])), TypeError, r"nanmean: expected a floating point input, got numdiff.int64"),
    (lambda: numdiff.diff(numdiff.tensor(1.0)), RuntimeError, r"diff: expected at least a 1-dimensional tensor"),
    (lambda: numdiff.diff(numdiff.ones(3), n=-1), ValueError, r"diff: order must be a non-negative integer, got -1"),
    (lambda: numdiff.diff(numdiff.ones(2, 3), prepend=numdiff.ones(3, 1)), ValueError, r"diff: prepend of shape \(3, 1\) must .* shape \(2, 3\) except in dimension 1"),
    (lambda: numdiff.cross(numdiff.ones(2, 4), numdiff.ones(2, 4)), ValueError, r"cross: no dimension of size 3 in input of shape \(2, 4\)"),
    (lambda: numdiff.cross(numdiff.ones(3, 2), numdiff.ones(3, 2), dim=1), ValueError, r"cross: dimension 1 must have length 3"),
    (lambda: numdiff.cross(numdiff.ones(3), numdiff.ones(2, 3)), ValueError, r"cross: inputs must have the same number of dimensions"),
    (lambda: numdiff.tensordot(numdiff.ones(2, 3), numdiff.ones(2, 3), 1), ValueError, r"tensordot: contracted dimension 1 of a .* has size 3 but dimension 0 of b .* has size 2"),
    (lambda: numdiff.tensordot(numdiff.ones(2), numdiff.ones(2), 2), ValueError, r"tensordot: dims=2 must be in \[0, min\(1, 1\)\]"),
    (lambda: numdiff.inner(numdiff.ones(2, 3), numdiff.ones(2)), ValueError, r"inner: the last dims must match, got shapes \(2, 3\) and \(2,\)"),
    (lambda: numdiff.addmm(numdiff.ones(3), numdiff.ones(2, 3), numdiff.ones(3, 4)), ValueError, r"addmm: shapes \(3,\) and \(2, 4\) cannot be broadcast"),
    (lambda: numdiff.addmm(numdiff.ones(4, dtype=numdiff.float64), numdiff.ones(2, 3), numdiff.ones(3, 4)), TypeError, r"addmm: input is numdiff.float64 but the product is numdiff.float32"),
    (lambda: numdiff.addmm(numdiff.ones(2, 4), numdiff.ones(2, 3), numdiff.ones(2, 4)), ValueError, r"matmul: size mismatch"),
    (lambda: numdiff.baddbmm(numdiff.ones(1), numdiff.ones(2, 3), numdiff.ones(3, 4)), ValueError, r"bmm: both arguments must be 3-D"),
    (lambda: numdiff.addcmul(numdiff.ones(2), numdiff.ones(3), numdiff.ones(2)), ValueError, r"addcmul: shapes \(2,\) and \(3,\) and \(2,\) cannot be broadcast"),
    (lambda: numdiff.addcdiv(numdiff.ones(2), numdiff.tensor([1, 2]), numdiff.tensor([1, 2])), TypeError, r"addcdiv: integer division is not supported"),
    (lambda: numdiff.scatter(numdiff.ones(3), 0, numdiff.tensor([3]), 1.0), IndexError, r"scatter: index values must be in \[0, 3\) .* got values in \[3, 3\]"),
    (lambda: numdiff.scatter(numdiff.ones(3), 0, numdiff.tensor([-1]), 1.0), IndexError, r"scatter: index values must be in \[0, 3\)"),
    (lambda: numdiff.scatter(numdiff.ones(3), 0, numdiff.tensor([0.0]), 1.0), TypeError, r"scatter: index must be an integer Tensor"),
    (lambda: numdiff.scatter(numdiff.ones(3), 0, numdiff.tensor([0, 1]), numdiff.ones(1)), ValueError, r"scatter: index shape \(2,\) exceeds src shape \(1,\)"),
    (lambda: numdiff.scatter(numdiff.ones(3), 0, numdiff.tensor([0]), numdiff.ones(1, dtype=numdiff.float64)), TypeError, r"scatter: src is numdiff.float64 but input is numdiff.float32"),
    (lambda: numdiff.scatter(numdiff.ones(2, 2), 0, numdiff.tensor([[0, 0, 0]]), 1.0), ValueError, r"scatter: index shape \(1, 3\) exceeds input shape \(2, 2\) in dimension 1"),
    (lambda: numdiff.scatter(numdiff.ones(2), 0, numdiff.tensor([0]), 1.0, reduce="mean"), ValueError, r"scatter: reduce must be 'add' or 'multiply' .* got 'mean'"),
    (lambda: numdiff.scatter(numdiff.ones(2), 0, numdiff.tensor([0])), TypeError, r"scatter: expected a src tensor or a value"),
    (lambda: numdiff.index_add(numdiff.ones(3), 0, numdiff.tensor([3]), numdiff.ones(1)), IndexError, r"index_add: index values must be in \[0, 3\)"),
    (lambda: numdiff.index_add(numdiff.ones(3, 2), 0, numdiff.tensor([0, 1]), numdiff.ones(3, 2)), ValueError, r"index_add: source of shape \(3, 2\) must be the input's shape \(3, 2\) with 2"),
    (lambda: numdiff.index_add(numdiff.ones(3), 0, numdiff.tensor([[0]]), numdiff.ones(1)), TypeError, r"index_add: index must be a 0-d or 1-D integer tensor"),
    (lambda: numdiff.index_add(numdiff.ones(3), 0, numdiff.tensor([0]), numdiff.ones(1, dtype=numdiff.float64)), TypeError, r"index_add: source is numdiff.float64 but input is numdiff.float32"),
    (lambda: numdiff.masked_select(numdiff.ones(3), numdiff.tensor([1, 0, 1])), TypeError, r"masked_select: mask must be a bool tensor, got numdiff.int64"),
    (lambda: numdiff.masked_select(numdiff.ones(3), numdiff.tensor([True, False])), ValueError, r"masked_select: shapes \(3,\) and \(2,\) cannot be broadcast"),
    (lambda: numdiff.take(numdiff.ones(2, 2), numdiff.tensor([4])), IndexError, r"take: index values must be in \[-4, 4\) for an input of 4 elements \(shape \(2, 2\)\); got values in \[4, 4\]"),
    (lambda: numdiff.take(numdiff.ones(2), numdiff.tensor([0.5])), TypeError, r"take: index must be an integer tensor"),
    (lambda: numdiff.isclose(numdiff.ones(2), numdiff.ones(2, dtype=numdiff.float64)), TypeError, r"isclose: input is numdiff.float32 but other is numdiff.float64"),
    (lambda: numdiff.isclose(numdiff.ones(2), numdiff.ones(2), rtol=-1.0), ValueError, r"isclose: rtol and atol must be non-negative"),
    (lambda: numdiff.unique(numdiff.ones(2), dim=1), IndexError, r"unique: dimension 1 is out of range"),
    (lambda: numdiff.searchsorted(numdiff.tensor([[1, 2]]), numdiff.tensor([1, 2])), ValueError, r"searchsorted: the leading dims of sorted_sequence \(1, 2\) and input \(2,\) must match"),
    (lambda: numdiff.searchsorted(numdiff.tensor([1, 2]), numdiff.tensor([1]), side="middle"), ValueError, r"searchsorted: side must be 'left' or 'right'"),
    (lambda: numdiff.searchsorted(numdiff.tensor([1, 2]), numdiff.tensor([1]), right=True, side="left"), ValueError, r"searchsorted: side='left' and right=True contradict"),
    (lambda: numdiff.searchsorted(numdiff.tensor([2, 1]), numdiff.tensor([1]), sorter=numdiff.tensor([1, 2])), IndexError, r"searchsorted: sorter values must be in \[0, 2\)"),
    (lambda: numdiff.bucketize(numdiff.tensor([1]), numdiff.tensor([[1, 2]])), ValueError, r"bucketize: boundaries must be 1-D, got shape \(1, 2\)"),
]


@pytest.mark.parametrize("index", range(len(BAD)))
def test_bad_input_raises_naming_the_op(index):
    call, error, pattern = BAD[index]
    with pytest.raises(error, match=pattern):
        call()


def test_scatter_rejects_bad_index_before_writing():
    x = numdiff.zeros(3)
    with pytest.raises(IndexError):
        x.scatter_(0, numdiff.tensor([0, 5]), 1.0)
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.cumsum(1),
        lambda t: t.cumprod(0),
        lambda t: t.diagonal(1),
        lambda t: numdiff.diagonal(t, 0, 1, 0),
        lambda t: numdiff.scatter(t, 1, numdiff.tensor([[2, 0, 1]]), 7.0),
        lambda t: numdiff.norm(t, dim=1),
        lambda t: t.roll(1, 0),
        lambda t: t.cross(t.flip(0), dim=0),
        lambda t: t.cummax(1).values,
        lambda t: numdiff.diag_embed(t, 1),
    ],
    ids=["cumsum", "cumprod", "diagonal", "diagonal-dims", "scatter", "norm", "roll", "cross", "cummax", "diag_embed"],
)
def test_vmap_runs_batched_and_matches_a_loop(fn):
    from numdiff.func import VmapPerformanceWarning, jacrev, vmap

    x = numdiff.tensor(np.random.default_rng(2).standard_normal((4, 3, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapPerformanceWarning)
        got = vmap(fn)(x)
        jacobian = jacrev(fn)(x[0])
    expected = numdiff.stack([fn(x[i]) for i in range(4)])
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    assert tuple(jacobian.shape) == tuple(expected.shape[1:]) + (3, 3)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: numdiff.unique(x, return_inverse=True)[1].sum() + numdiff.unique(x, return_counts=True)[1].max() + x.sum(),
        lambda x: numdiff.nonzero(x, as_tuple=True)[0].sum() + x.argwhere().sum() + x.sum(),
        lambda x: numdiff.bucketize(x, numdiff.tensor([0.5, 1.5])).sum() + numdiff.count_nonzero(x) + x.sum(),
        lambda x: numdiff.masked_select(x, x > 0).sum() + numdiff.isclose(x, x.roll(1)).sum(),
        lambda x: x.cummax(0).indices.sum() + x.cummin(0).values.sum(),
    ],
    ids=["unique", "nonzero", "bucketize", "masked_select", "cummax"],
)
def test_compiled_search_ops_recompute_on_new_values(fn):
    compiled = numdiff.compile(fn)
    for values in ([1.0, 1.0, 2.0], [1.0, 2.0, 2.0], [0.0, 1.0, 0.0], [2.0, 0.0, 3.0]):
        x = numdiff.tensor(values)
        assert compiled(x).item() == fn(x).item(), values


def test_compiled_cumprod_gradient_stays_exact_when_zeros_move():
    weight = numdiff.tensor([[1.0, 2.0, 3.0]], dtype=numdiff.float64)
    compiled = numdiff.compile(lambda x: (x.cumprod(1) * weight).sum())
    for values in ([[1.0, 2.0, 3.0], [0.5, 0.0, 2.0]], [[0.0, 2.0, 3.0], [1.5, 1.0, 0.0]]):
        x = numdiff.tensor(values, dtype=numdiff.float64, requires_grad=True)
        compiled(x).backward()
        eager = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        (eager.cumprod(1) * torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), eager.grad.numpy())


def test_host_reading_ops_refuse_vmap_with_a_reason():
    from numdiff.func import vmap

    with pytest.raises(RuntimeError, match="nonzero: not supported on a tensor batched by numdiff.func.vmap"):
        vmap(lambda x: x.nonzero())(numdiff.ones(3, 2))
    with pytest.raises(RuntimeError, match="searchsorted: not supported .* loop over the batch instead"):
        vmap(lambda x: numdiff.searchsorted(numdiff.tensor([0.0, 1.0]), x))(numdiff.ones(3, 2))


def _t(m, values):
    return m.tensor(np.array(values))


KEYWORD_CALLS = {
    "tensordot": lambda m: dict(a=_t(m, [[1.0, 2.0]]), b=_t(m, [[1.0], [2.0]]), dims=1),
    "cross": lambda m: dict(input=_t(m, [1.0, 0, 0]), other=_t(m, [0.0, 1, 0]), dim=0),
    "take": lambda m: dict(input=_t(m, [1.0, 2]), index=_t(m, [1])),
    "index_add": lambda m: dict(input=_t(m, [1.0, 2]), dim=0, index=_t(m, [1]), source=_t(m, [3.0]), alpha=2),
    "scatter": lambda m: dict(input=_t(m, [1.0, 2]), dim=0, index=_t(m, [1]), src=_t(m, [3.0])),
    "masked_select": lambda m: dict(input=_t(m, [1.0, 2]), mask=_t(m, [True, False])),
    "diff": lambda m: dict(input=_t(m, [1.0, 2, 4]), n=1, dim=0, prepend=_t(m, [0.0]), append=_t(m, [9.0])),
    "roll": lambda m: dict(input=_t(m, [1.0, 2, 4]), shifts=1, dims=0),
    "tile": lambda m: dict(input=_t(m, [1.0, 2]), dims=(2,)),
    "narrow": lambda m: dict(input=_t(m, [1.0, 2, 3]), dim=0, start=1, length=2),
    "select": lambda m: dict(input=_t(m, [1.0, 2, 3]), dim=0, index=1),
    "movedim": lambda m: dict(input=_t(m, [[1.0, 2]]), source=0, destination=1),
    "swapaxes": lambda m: dict(input=_t(m, [[1.0, 2]]), axis0=0, axis1=1),
    "swapdims": lambda m: dict(input=_t(m, [[1.0, 2]]), dim0=0, dim1=1),
    "repeat_interleave": lambda m: dict(input=_t(m, [1.0, 2]), repeats=2, dim=0, output_size=4),
    "diag": lambda m: dict(input=_t(m, [1.0, 2]), diagonal=1),
    "diag_embed": lambda m: dict(input=_t(m, [1.0, 2]), offset=1, dim1=0, dim2=1),
    "diagonal": lambda m: dict(input=_t(m, [[1.0, 2], [3, 4]]), offset=0, dim1=0, dim2=1),
    "unbind": lambda m: dict(input=_t(m, [1.0, 2]), dim=0),
    "addmm": lambda m: dict(input=_t(m, [1.0]), mat1=_t(m, [[1.0]]), mat2=_t(m, [[2.0]]), beta=1, alpha=1),
    "addmv": lambda m: dict(input=_t(m, [1.0]), mat=_t(m, [[1.0]]), vec=_t(m, [2.0]), beta=1, alpha=1),
    "baddbmm": lambda m: dict(input=_t(m, [1.0]), batch1=_t(m, [[[1.0]]]), batch2=_t(m, [[[2.0]]]), beta=1, alpha=1),
    "addcmul": lambda m: dict(input=_t(m, [1.0]), tensor1=_t(m, [1.0]), tensor2=_t(m, [2.0]), value=2),
    "addcdiv": lambda m: dict(input=_t(m, [1.0]), tensor1=_t(m, [1.0]), tensor2=_t(m, [2.0]), value=2),
    "count_nonzero": lambda m: dict(input=_t(m, [1.0, 0]), dim=0),
    "isclose": lambda m: dict(input=_t(m, [1.0]), other=_t(m, [1.0]), rtol=0.1, atol=0.1, equal_nan=True),
    "unique": lambda m: dict(input=_t(m, [1.0, 1]), sorted=True, return_inverse=True, return_counts=True, dim=None),
    "bucketize": lambda m: dict(input=_t(m, [1.0]), boundaries=_t(m, [0.0, 2]), out_int32=False, right=False),
    "searchsorted": lambda m: dict(sorted_sequence=_t(m, [0.0, 2]), input=_t(m, [1.0]), out_int32=True, side="left", sorter=None),
    "cummax": lambda m: dict(input=_t(m, [1.0]), dim=0),
    "cummin": lambda m: dict(input=_t(m, [1.0]), dim=0),
    "cumsum": lambda m: dict(input=_t(m, [1.0]), dim=0, dtype=m.float64),
    "cumprod": lambda m: dict(input=_t(m, [1.0]), dim=0, dtype=m.float64),
    "norm": lambda m: dict(input=_t(m, [1.0]), p=2, dim=0, keepdim=True, dtype=m.float64),
    "cdist": lambda m: dict(x1=_t(m, [[1.0]]), x2=_t(m, [[2.0]]), p=1.0, compute_mode="donot_use_mm_for_euclid_dist"),
    "nansum": lambda m: dict(input=_t(m, [1.0]), dim=0, keepdim=True, dtype=m.float64),
    "nanmean": lambda m: dict(input=_t(m, [1.0]), dim=0, keepdim=True, dtype=m.float64),
    "nonzero": lambda m: dict(input=_t(m, [1.0]), as_tuple=True),
    "argwhere": lambda m: dict(input=_t(m, [1.0])),
    "inner": lambda m: dict(input=_t(m, [1.0]), other=_t(m, [1.0])),
    "trace": lambda m: dict(input=_t(m, [[1.0]])),
    "meshgrid": lambda m: dict(indexing="xy"),
    "vstack": lambda m: dict(tensors=[_t(m, [1.0])]),
    "hstack": lambda m: dict(tensors=[_t(m, [1.0])]),
    "dstack": lambda m: dict(tensors=[_t(m, [1.0])]),
    "column_stack": lambda m: dict(tensors=[_t(m, [1.0])]),
}


@pytest.mark.parametrize("name", sorted(KEYWORD_CALLS))
def test_keywords_are_torch_names(name):
    expected = _as_tuple(getattr(torch, name)(*([_t(torch, [1.0])] if name == "meshgrid" else []), **KEYWORD_CALLS[name](torch)))
    got = _as_tuple(getattr(numdiff, name)(*([_t(numdiff, [1.0])] if name == "meshgrid" else []), **KEYWORD_CALLS[name](numdiff)))
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_where_with_the_condition_alone_or_two_scalars_matches_torch():
    values = np.array([[True, False, True], [False, False, True]])
    cond, tcond = numdiff.tensor(values), torch.tensor(values)
    for ours, theirs in zip(numdiff.where(cond), torch.where(tcond)):
        assert ours.tolist() == theirs.tolist() and ours.dtype == numdiff.int64
    for args in ((1.0, 0.0), (1, 0), (1, 0.5), (True, False)):
        ours, theirs = numdiff.where(cond, *args), torch.where(tcond, *args)
        assert ours.tolist() == theirs.tolist() and str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    with pytest.raises(TypeError, match="where: pass both input and other, or the condition alone"):
        numdiff.where(cond, 1.0)


def test_bincount_matches_torch_and_refuses_what_it_cannot_count():
    values = np.array([0, 1, 1, 3, 7])
    ours, theirs = numdiff.tensor(values), torch.tensor(values)
    assert numdiff.bincount(ours).tolist() == torch.bincount(theirs).tolist()
    assert ours.bincount(minlength=10).tolist() == theirs.bincount(minlength=10).tolist()
    for weights in (np.array([0.5, 1, 1, 2, 3], np.float32), np.array([1, 2, 3, 4, 5])):
        got = numdiff.bincount(ours, numdiff.tensor(weights))
        expected = torch.bincount(theirs, torch.tensor(weights))
        assert got.tolist() == expected.tolist() and str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
    assert numdiff.bincount(numdiff.tensor([], dtype=numdiff.int64)).tolist() == []
    with pytest.raises(ValueError, match="bincount: only non-negative values can be counted, got -1"):
        numdiff.bincount(numdiff.tensor([2, -1]))
    with pytest.raises(ValueError, match=r"bincount: only 1-d .* got shape \(1, 1\)"):
        numdiff.bincount(numdiff.tensor([[1]]))
    with pytest.raises(ValueError, match=r"bincount: only 1-d .* dtype numdiff.float32"):
        numdiff.bincount(numdiff.tensor([1.5]))
    with pytest.raises(ValueError, match=r"bincount: weights \(2,\) must have the input's shape \(5,\)"):
        numdiff.bincount(ours, numdiff.ones(2))


def test_isin_matches_torch():
    cases = [
        (numdiff.tensor([1, 2, 3]), numdiff.tensor([2, 5]), torch.tensor([1, 2, 3]), torch.tensor([2, 5]), {}),
        (numdiff.tensor([[1.0, 2.0]]), 2.0, torch.tensor([[1.0, 2.0]]), 2.0, {}),
        (3, numdiff.tensor([3]), 3, torch.tensor([3]), {}),
        (numdiff.tensor([1, 2]), numdiff.tensor([2]), torch.tensor([1, 2]), torch.tensor([2]), {"invert": True}),
    ]
    for a, b, ta, tb, options in cases:
        got, expected = numdiff.isin(a, b, **options), torch.isin(ta, tb, **options)
        assert got.tolist() == expected.tolist() and got.dtype == numdiff.bool and tuple(got.shape) == tuple(expected.shape)
    with pytest.raises(TypeError, match="isin: expected elements or test_elements to be a Tensor"):
        numdiff.isin(1, 2)


def test_inf_norms_and_logsumexp_of_an_empty_tensor_over_non_empty_dims_are_empty():
    # amax refused every empty tensor, also reduced over dims that are not empty, where torch
    # gives an empty result: vector_norm(ord=inf, dim=1) and logsumexp(dim=1) of a (0, 3) raised.
    empty = numdiff.zeros(0, 3, dtype=numdiff.float64, requires_grad=True)
    norm = numdiff.linalg.vector_norm(empty, float("inf"), 1)
    assert norm.shape == (0,)
    assert numdiff.special.logsumexp(empty, 1).shape == (0,)
    assert numdiff.linalg.matrix_norm(numdiff.zeros(0, 2, 3), float("inf")).shape == (0,)
    norm.sum().backward()
    assert empty.grad.shape == (0, 3)
    with pytest.raises(RuntimeError, match=r"amax: cannot reduce over dim 0, which has size 0 \(input shape \(0, 3\)\)"):
        empty.amax(0)


def test_scatter_multiply_of_floats_matches_torch_and_passes_gradcheck():
    # torch computes the products but records no derivative; numdiff's go through scatter_reduce's prod.
    x, src, index = _normal(2, 4), _normal(2, 4), np.array([[0, 0, 3, 3], [1, 2, 1, 1]])
    expected = torch.tensor(x).scatter(1, torch.tensor(index), torch.tensor(src), reduce="multiply")
    got = numdiff.tensor(x).scatter(1, numdiff.tensor(index), numdiff.tensor(src), reduce="multiply")
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-15)
    inplace = numdiff.tensor(x)
    inplace.scatter_(1, numdiff.tensor(index), numdiff.tensor(src), reduce="multiply")
    np.testing.assert_allclose(inplace.numpy(), expected.numpy(), rtol=1e-15)
    inputs = (numdiff.tensor(x, requires_grad=True), numdiff.tensor(src, requires_grad=True))
    assert numdiff.autograd.gradcheck(lambda a, s: a.scatter(1, numdiff.tensor(index), s, reduce="multiply"), inputs)
