"""The short paths small-tensor programs take (a batch-1 layer's GEMM, an integer index into a
sequence, cat's first-order backward, the last-axis softmax view) give what the general paths
give, bit for bit, and refuse what those refuse."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.ops.activation import _lines

torch = pytest.importorskip("torch")
F = numdiff.nn.functional


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, in_features, out_features", [(1, 185, 128), (3, 7, 5), (2, 1, 4), (2, 6, 1)])
def test_linear_of_contiguous_rows_equals_the_general_layouts(dtype, rows, in_features, out_features):
    # C-contiguous 2-D rows take one direct gemm_nt; a Fortran-ordered copy and a (1, rows, in)
    # batch take the general path. Same products, same bits, and torch's values.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((rows, in_features)).astype(dtype)
    w = numdiff.tensor(rng.standard_normal((out_features, in_features)).astype(dtype))
    b = numdiff.tensor(rng.standard_normal(out_features).astype(dtype))
    direct = F.linear(numdiff.tensor(x), w, b).numpy()
    fortran = F.linear(numdiff.tensor(np.asfortranarray(x)), w, b).numpy()
    batched = F.linear(numdiff.tensor(x[None]), w, b).numpy()[0]
    assert direct.dtype == dtype
    np.testing.assert_array_equal(direct, fortran)
    np.testing.assert_array_equal(direct, batched)
    expected = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w.numpy()), torch.tensor(b.numpy()))
    tol = dict(rtol=1e-9, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(direct, expected.numpy(), **tol)


def test_linear_of_contiguous_rows_gradcheck_float64():
    rng = np.random.default_rng(6)
    x = numdiff.tensor(rng.standard_normal((1, 6)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((4, 6)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(4), requires_grad=True)
    assert numdiff.autograd.gradcheck(F.linear, (x, w, b))


def test_linear_of_contiguous_rows_refuses_a_feature_mismatch_before_the_kernel():
    with pytest.raises(ValueError, match=r"linear: input \(1, 5\) must end with in_features=6"):
        F.linear(numdiff.ones(1, 5), numdiff.ones(4, 6))
    with pytest.raises(ValueError, match=r"gemm_nt: b must have shape \(\*, 5\), got \(4, 6\)"):
        numdiff.ops.linalg.Linear.apply(numdiff.ones(1, 5), numdiff.ones(4, 6), None)


def test_an_integer_index_in_bounds_is_a_view_and_out_of_bounds_names_the_shape():
    x = numdiff.tensor(np.arange(24.0).reshape(4, 1, 6), requires_grad=True)
    for t in (0, 3, -1, -4):
        step = x[t]
        np.testing.assert_array_equal(step.detach().numpy(), x.detach().numpy()[t])
        assert step._base is x  # shares the version counter: in-place edits of x are seen
    x[-1].sum().backward()
    expected = np.zeros((4, 1, 6))
    expected[-1] = 1
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    for bad in (4, -5):
        with pytest.raises(IndexError, match=rf"index: index \[{bad}\] is invalid for a tensor of shape \(4, 1, 6\)"):
            x[bad]
    with pytest.raises(IndexError, match="index"):
        numdiff.tensor(1.0)[0]  # a 0-d tensor has no dimension to index


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_first_order_backward_equals_the_recorded_one(dim):
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), rng.standard_normal((2, 3))]
    seed = numdiff.tensor(rng.standard_normal(numdiff.cat([numdiff.tensor(a) for a in arrays], dim).shape))
    results = []
    for create_graph in (False, True):
        parts = [numdiff.tensor(a, requires_grad=i != 1) for i, a in enumerate(arrays)]
        out = numdiff.cat(parts, dim)
        leaves = [parts[0], parts[2]]
        grads = numdiff.autograd.grad(out, leaves, seed, create_graph=create_graph)
        results.append([g.detach().numpy() for g in grads])
    for first_order, recorded in zip(*results):
        np.testing.assert_array_equal(first_order, recorded)


def test_cat_first_order_gradients_do_not_alias_each_other_or_the_seed():
    # The pieces are views of one gradient array: accumulating into .grad must copy them.
    x = numdiff.zeros(2, 3, requires_grad=True)
    seed = numdiff.ones(2, 6)
    numdiff.cat([x, x], 1).backward(seed)
    numdiff.cat([x, x], 1).backward(seed)
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 4.0))
    np.testing.assert_array_equal(seed.numpy(), np.ones((2, 6)))


@pytest.mark.parametrize("shape, dim", [((2, 5), 1), ((5,), 0), ((), 0), ((2, 0), 1), ((3, 4, 2), 2), ((3, 4, 2), 1)])
def test_softmax_lines_view_matches_the_general_products(shape, dim):
    size = int(np.prod(shape)) if shape else 1
    n = (shape or (1,))[dim]
    before = int(np.prod((shape or (1,))[:dim]))
    assert _lines(shape, dim) == (before, n, size // (before * n) if before * n else int(np.prod(shape[dim + 1:])))


def test_log_softmax_of_a_row_matches_torch_and_gradchecks():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 18))
    ours = F.log_softmax(numdiff.tensor(x), dim=1).numpy()
    np.testing.assert_allclose(ours, torch.log_softmax(torch.tensor(x), 1).numpy(), rtol=1e-12, atol=1e-12)
    t = numdiff.tensor(x, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda v: F.log_softmax(v, dim=1), (t,))
    with pytest.raises(IndexError, match="log_softmax: dimension 2 is out of range"):
        F.log_softmax(numdiff.tensor(x), dim=2)

