"""softmax as one registered op (numdiff.ops.activation.Softmax): one node, PyTorch's values and
gradients on a hand-written attention's masked scores, NaN rows where PyTorch has them, and the
first-order backward on arrays agreeing with the differentiable one."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck


def test_softmax_records_one_node():
    x = numdiff.randn(3, 4, requires_grad=True)
    assert numdiff.softmax(x, -1).grad_fn.name() == "SoftmaxBackward"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_masked_attention_scores_match_torch(dtype):
    rng = np.random.default_rng(4)
    scores = rng.standard_normal((2, 3, 9, 9)).astype(dtype) * 4
    hidden = np.triu(np.ones((9, 9), bool), 1)
    seed = rng.standard_normal(scores.shape).astype(dtype)
    xm, xt = numdiff.tensor(scores, requires_grad=True), torch.tensor(scores, requires_grad=True)
    out_m = numdiff.nn.functional.softmax(xm.masked_fill(numdiff.tensor(hidden), -math.inf), dim=-1)
    out_t = torch.nn.functional.softmax(xt.masked_fill(torch.tensor(hidden), -math.inf), dim=-1)
    out_m.backward(numdiff.tensor(seed))
    out_t.backward(torch.tensor(seed))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), **tol)


def test_rows_of_only_minus_inf_or_holding_inf_are_nan_as_in_torch():
    rows = np.array([[-np.inf, -np.inf, -np.inf], [1.0, np.inf, 0.0], [0.0, 1.0, -np.inf]])
    got = numdiff.softmax(numdiff.tensor(rows), 1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(torch.softmax(torch.tensor(rows), 1).numpy()))
    np.testing.assert_allclose(got[2], torch.softmax(torch.tensor(rows[2]), 0).numpy(), rtol=1e-15)


def test_gradients_of_every_dim_and_second_order():
    x = numdiff.tensor(np.random.default_rng(5).standard_normal((3, 4, 2)), requires_grad=True)
    for dim in (0, 1, -1):
        assert gradcheck(lambda x, dim=dim: numdiff.softmax(x, dim) * numdiff.arange(2.0, dtype=numdiff.float64), (x,))
        assert gradgradcheck(lambda x, dim=dim: numdiff.softmax(x, dim).square(), (x,))


def test_first_order_backward_on_arrays_equals_the_recorded_form():
    x = numdiff.tensor(np.random.default_rng(6).standard_normal((4, 5)), requires_grad=True)
    seed = numdiff.tensor(np.random.default_rng(7).standard_normal((4, 5)))
    (plain,) = numdiff.autograd.grad(numdiff.softmax(x, 1), x, seed)
    (recorded,) = numdiff.autograd.grad(numdiff.softmax(x, 1), x, seed, create_graph=True)
    assert recorded.grad_fn is not None and plain.grad_fn is None
    np.testing.assert_allclose(plain.numpy(), recorded.detach().numpy(), rtol=1e-14, atol=1e-15)


def test_softmax_of_integers_is_refused_by_name():
    with pytest.raises(TypeError, match="softmax: expected a floating point tensor, got dtype"):
        numdiff.softmax(numdiff.arange(3), 0)
