"""where, masked_fill and clamp give the branch not taken an exact zero gradient, as PyTorch does,
even when the gradient arriving is NaN or inf (a fully masked attention row: softmax of all -inf)."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
X = [-1.0, 0.5, -2.0, 3.0, 2.0, 0.0]
UPSTREAM = [NAN, 1.0, INF, 2.0, NAN, -INF]

CASES = {
    "where-tensor": lambda lib, x: lib.where(x > 0, x, x * 3),
    "where-scalar": lambda lib, x: lib.where(x > 0, x, 0.0),
    "masked_fill": lambda lib, x: x.masked_fill(x < 0, 0.0),
    "clamp-both": lambda lib, x: x.clamp(-0.5, 0.7),
    "clamp-min": lambda lib, x: x.clamp(min=0.0),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_branch_not_taken_gets_zero_not_the_nan_arriving(name, create_graph):
    x = numdiff.tensor(X, dtype=numdiff.float64, requires_grad=True)
    (g,) = numdiff.autograd.grad(CASES[name](numdiff, x), x, numdiff.tensor(UPSTREAM, dtype=numdiff.float64),
                                 create_graph=create_graph)
    tx = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(CASES[name](torch, tx), tx, torch.tensor(UPSTREAM, dtype=torch.float64))
    np.testing.assert_array_equal(g.detach().numpy(), tg.numpy())


def test_fully_masked_softmax_row_gives_zero_gradient_through_masked_fill():
    scores = np.random.default_rng(0).standard_normal((3, 4))
    mask = np.array([[1, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]], dtype=bool)
    grads = []
    for lib in (numdiff, torch):
        s = lib.tensor(scores, requires_grad=True)
        p = lib.softmax(s.masked_fill(~lib.tensor(mask), -INF), dim=-1)  # row 1: all NaN
        lib.where(lib.isnan(p), lib.zeros_like(p), p)[:, 0].sum().backward()
        grads.append(s.grad.numpy())
    np.testing.assert_array_equal(grads[0][1], np.zeros(4))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", sorted(CASES))
def test_selection_gradchecks_in_float64(name):
    x = numdiff.tensor([-1.0, 0.5, -2.0, 3.0, 0.25], dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: CASES[name](numdiff, t), (x,))
    assert numdiff.autograd.gradgradcheck(lambda t: CASES[name](numdiff, t), (x,))


def test_masked_fill_refuses_a_non_bool_mask_naming_the_op():
    with pytest.raises(TypeError, match="masked_fill: mask must be a bool Tensor"):
        numdiff.ones(3).masked_fill(numdiff.tensor([1, 0, 1]), 0.0)
