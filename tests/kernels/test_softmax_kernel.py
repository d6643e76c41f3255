"""The fused softmax / log_softmax kernels (numdiff.kernels.softmax): NumPy's values and gradients
along rows and along a middle axis (several column blocks, a ragged last one), from both the
serial and the parallel build; NaN lines where the NumPy form has them; bad arrays refused by name
before any kernel runs."""

from __future__ import annotations

import re

import numpy as np
import pytest

from numdiff.kernels import _parallel
from numdiff.kernels.softmax import COLUMN_BLOCK, softmax_backward, softmax_forward

SHAPES = [(5, 7, 1), (1, 300, 1), (3, 1, 4), (2, 6, COLUMN_BLOCK + 37), (4, 3, 9)]


def _reference(x: np.ndarray, grad: np.ndarray, log: bool) -> tuple[np.ndarray, np.ndarray]:
    shifted = x - x.max(axis=1, keepdims=True)
    total = np.exp(shifted).sum(axis=1, keepdims=True)
    if log:
        out = shifted - np.log(total)
        return out, grad - np.exp(out) * grad.sum(axis=1, keepdims=True)
    out = np.exp(shifted) / total
    return out, out * (grad - (grad * out).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("build", [_parallel.always_serial, _parallel.always_parallel])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_kernel_matches_numpy_forward_and_backward(shape, log, dtype, build):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 6).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    want_out, want_dx = _reference(x.astype(np.float64), grad.astype(np.float64), log)
    out, dx = np.empty_like(x), np.empty_like(x)
    with build():
        softmax_forward(x, out, log)
        softmax_backward(grad, out, dx, log)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(out, want_out, **tol)
    np.testing.assert_allclose(dx, want_dx, **tol)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("columns", [False, True], ids=["rows", "columns"])
def test_lines_holding_inf_or_nan_or_only_minus_inf_are_nan(log, columns):
    lines = np.array([[0.0, np.inf, 1.0], [-np.inf, -np.inf, -np.inf], [0.0, np.nan, 1.0], [-np.inf, 0.0, 1.0]])
    x = np.ascontiguousarray(lines.T[None]) if columns else lines[:, :, None]
    out = np.empty_like(x)
    softmax_forward(x, out, log)
    got = out[0].T if columns else out[:, :, 0]
    assert np.isnan(got[:3]).all()
    with np.errstate(divide="ignore"):
        want = np.log([0.0, 1 / (1 + np.e), np.e / (1 + np.e)]) if log else [0.0, 1 / (1 + np.e), np.e / (1 + np.e)]
    np.testing.assert_allclose(got[3], want, rtol=1e-15)


def test_forward_refuses_mixed_dtypes_by_name():
    with pytest.raises(TypeError, match=r"softmax_forward: all arrays must share one dtype, got x=float32, out=float64"):
        softmax_forward(np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 1)), False)


def test_forward_refuses_an_integer_input():
    with pytest.raises(TypeError, match="softmax_forward: x must be float32 or float64, got int64"):
        softmax_forward(np.zeros((1, 2, 1), np.int64), np.zeros((1, 2, 1), np.int64), False)


def test_forward_refuses_a_strided_input():
    x = np.zeros((2, 3, 4))[:, :, ::2]
    with pytest.raises(ValueError, match="softmax_forward: x must be C-contiguous"):
        softmax_forward(x, np.zeros((2, 3, 2)), False)


@pytest.mark.parametrize("shape", [(6,), (2, 3, 1, 1), (2, 0), (2, 0, 3)], ids=str)
def test_forward_refuses_a_view_that_is_not_rows_or_3d(shape):
    with pytest.raises(ValueError, match=rf"softmax_forward: expected rows \(outer, n\) or a view \(outer, n, inner\) with n >= 1, got shape {re.escape(str(shape))}"):
        softmax_forward(np.zeros(shape), np.zeros(shape), False)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_given_as_2d_match_the_3d_view(log):
    rng = np.random.default_rng(3)
    x, grad = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    out2, dx2, out3, dx3 = (np.empty((4, 5)) for _ in range(4))
    softmax_forward(x, out2, log)
    softmax_backward(grad, out2, dx2, log)
    softmax_forward(x[:, :, None], out3.reshape(4, 5, 1), log)
    softmax_backward(grad[:, :, None], out3.reshape(4, 5, 1), dx3.reshape(4, 5, 1), log)
    want_out, want_dx = _reference(x, grad, log)
    np.testing.assert_allclose(out2, want_out, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(dx2, want_dx, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(out2, out3)
    np.testing.assert_array_equal(dx2, dx3)


def test_backward_refuses_a_gradient_of_another_shape():
    out = np.full((2, 3, 1), 1 / 3)
    with pytest.raises(ValueError, match=r"softmax_backward: grad must have shape \(2, 3, 1\), got \(2, 4, 1\)"):
        softmax_backward(np.zeros((2, 4, 1)), out, np.empty_like(out), False)
