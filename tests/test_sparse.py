"""Sparse COO tensors: construction, coalesce, to_dense/to_sparse, sums, products with dense
matrices against PyTorch, gradients to the values and the dense side, and refused inputs."""

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck

torch = pytest.importorskip("torch")

INDICES = [[0, 2, 2, 1, 2], [1, 0, 1, 3, 1]]
VALUES = [1.0, 2.0, 3.0, 4.0, 5.0]


def _pair():
    ours = numdiff.sparse_coo_tensor(INDICES, VALUES, (3, 4))
    theirs = torch.sparse_coo_tensor(INDICES, VALUES, (3, 4))
    return ours, theirs


def test_construction_coalesce_and_dense_form_match_pytorch():
    ours, theirs = _pair()
    assert ours.is_sparse and ours.layout is numdiff.sparse_coo and ours.shape == (3, 4) and ours._nnz() == 5
    assert not ours.is_coalesced()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        ours.indices()
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())
    c_ours, c_theirs = ours.coalesce(), theirs.coalesce()
    assert c_ours.is_coalesced() and c_ours._nnz() == c_theirs._nnz() == 4
    np.testing.assert_array_equal(c_ours.indices().numpy(), c_theirs.indices().numpy())
    np.testing.assert_array_equal(c_ours.values().numpy(), c_theirs.values().numpy())
    dense = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], dtype=np.float32)
    s_ours, s_theirs = numdiff.tensor(dense).to_sparse(), torch.tensor(dense).to_sparse()
    np.testing.assert_array_equal(s_ours.indices().numpy(), s_theirs.indices().numpy())
    np.testing.assert_array_equal(s_ours.values().numpy(), s_theirs.values().numpy())


def test_products_and_sums_match_pytorch():
    ours, theirs = _pair()
    d = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose((ours @ numdiff.tensor(d)).numpy(), (theirs @ torch.tensor(d)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(numdiff.spmm(ours, numdiff.tensor(d)).numpy(), torch.spmm(theirs, torch.tensor(d)).numpy(),
                               rtol=1e-6)
    left = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(numdiff.mm(numdiff.tensor(left), ours).numpy(), torch.mm(torch.tensor(left), theirs).numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose((numdiff.eye(3, 4) + ours).numpy(), (torch.eye(3, 4) + theirs).numpy())
    np.testing.assert_allclose(numdiff.sparse.sum(ours, dim=0).numpy(), torch.sparse.sum(theirs, dim=0).to_dense().numpy())
    assert float(numdiff.sparse.sum(ours)) == float(torch.sparse.sum(theirs)) == 15.0


def test_gradients_reach_the_values_and_the_dense_side_in_float64():
    rows = numdiff.tensor([0, 2, 2, 1])
    cols = numdiff.tensor([1, 0, 1, 3])
    values = numdiff.randn(4, dtype=numdiff.float64, requires_grad=True)
    dense = numdiff.randn(4, 3, dtype=numdiff.float64, requires_grad=True)

    def product(v, d):
        return numdiff.sparse_coo_tensor(numdiff.stack([rows, cols]), v, (3, 4)) @ d

    assert gradcheck(product, (values, dense))
    x = (numdiff.randn(3, 3, dtype=numdiff.float64).abs() + 0.5).requires_grad_()  # no zero moves in or out
    assert gradcheck(lambda t: t.to_sparse() @ numdiff.ones(3, 2, dtype=numdiff.float64), (x,))


def test_a_gcn_layer_trains_through_the_sparse_adjacency():
    numdiff.manual_seed(0)
    adjacency = numdiff.sparse_coo_tensor([[0, 1, 1, 2, 2], [1, 0, 2, 1, 2]], [1.0, 1.0, 0.5, 0.5, 1.0], (3, 3))
    weight = numdiff.nn.Parameter(numdiff.randn(4, 2))
    features = numdiff.randn(3, 4)
    loss = numdiff.spmm(adjacency, numdiff.mm(features, weight)).pow(2).sum()
    loss.backward()
    expected = torch.tensor(features.numpy())
    w = torch.tensor(weight.detach().numpy(), requires_grad=True)
    adj_t = torch.sparse_coo_tensor([[0, 1, 1, 2, 2], [1, 0, 2, 1, 2]], [1.0, 1.0, 0.5, 0.5, 1.0], (3, 3))
    torch.spmm(adj_t, expected @ w).pow(2).sum().backward()
    np.testing.assert_allclose(weight.grad.numpy(), w.grad.numpy(), rtol=1e-5)


def test_bad_inputs_are_refused_before_a_kernel_runs():
    with pytest.raises(IndexError, match="sparse_coo_tensor: index 4 in dim 1 is outside size 4"):
        numdiff.sparse_coo_tensor([[0], [4]], [1.0], (3, 4))
    with pytest.raises(ValueError, match="one value per index column"):
        numdiff.sparse_coo_tensor([[0, 1], [0, 1]], [1.0], (2, 2))
    ours, _ = _pair()
    with pytest.raises(ValueError, match=r"sparse matmul: size mismatch, sparse \(3, 4\) @ dense \(3, 2\)"):
        ours @ numdiff.ones(3, 2)
    with pytest.raises(TypeError, match="one floating dtype, got numdiff.float32 and numdiff.float64"):
        ours @ numdiff.ones(4, 2, dtype=numdiff.float64)
    from numdiff.ops.sparse import coo_matmul

    with pytest.raises(IndexError, match=r"a row index is 7, outside \[0, 3\)"):
        coo_matmul(numdiff.tensor([7]), numdiff.tensor([0]), numdiff.ones(1), (3, 4), numdiff.ones(4, 1))
