"""Sparse CSR tensors: construction, crow/col/values, to_dense, conversions to and from dense and
COO, products with dense matrices (mm, matmul, addmm, sampled_addmm) against PyTorch, float64
gradients to the values and the dense side, vmap, and refused structures."""

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.func import vmap

torch = pytest.importorskip("torch")

CROW = [0, 2, 2, 5]  # row 1 is empty
COLS = [1, 3, 0, 1, 3]
VALUES = [1.0, 2.0, 3.0, 4.0, 5.0]


def _pair():
    return (numdiff.sparse_csr_tensor(CROW, COLS, VALUES, (3, 4)),
            torch.sparse_csr_tensor(torch.tensor(CROW), torch.tensor(COLS), torch.tensor(VALUES), (3, 4)))


def test_construction_and_dense_form_match_pytorch():
    ours, theirs = _pair()
    assert ours.is_sparse_csr and not ours.is_sparse and ours.layout is numdiff.sparse_csr
    assert ours.shape == theirs.shape and ours._nnz() == theirs._nnz() == 5
    np.testing.assert_array_equal(ours.crow_indices().numpy(), theirs.crow_indices().numpy())
    np.testing.assert_array_equal(ours.col_indices().numpy(), theirs.col_indices().numpy())
    np.testing.assert_array_equal(ours.values().numpy(), theirs.values().numpy())
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())


def test_size_is_inferred_as_pytorchs():
    ours = numdiff.sparse_csr_tensor(CROW, COLS, VALUES)
    theirs = torch.sparse_csr_tensor(torch.tensor(CROW), torch.tensor(COLS), torch.tensor(VALUES))
    assert tuple(ours.shape) == tuple(theirs.shape) == (3, 4)


def test_dense_and_coo_convert_to_csr_and_back_as_pytorch():
    dense = np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, -1.0]], dtype=np.float32)
    ours, theirs = numdiff.tensor(dense).to_sparse_csr(), torch.tensor(dense).to_sparse_csr()
    for part in ("crow_indices", "col_indices", "values"):
        np.testing.assert_array_equal(getattr(ours, part)().numpy(), getattr(theirs, part)().numpy())
    assert numdiff.tensor(dense).to_sparse(layout=numdiff.sparse_csr).crow_indices().tolist() == [0, 1, 1, 3]
    coo_ours, coo_theirs = ours.to_sparse_coo(), theirs.to_sparse_coo()
    np.testing.assert_array_equal(coo_ours.indices().numpy(), coo_theirs.indices().numpy())
    # an uncoalesced COO tensor is coalesced on the way: duplicates add
    coo = numdiff.sparse_coo_tensor([[2, 0, 2], [1, 0, 1]], [1.0, 2.0, 3.0], (3, 2))
    coo_t = torch.sparse_coo_tensor([[2, 0, 2], [1, 0, 1]], [1.0, 2.0, 3.0], (3, 2))
    csr, csr_t = coo.to_sparse_csr(), coo_t.to_sparse_csr()
    np.testing.assert_array_equal(csr.crow_indices().numpy(), csr_t.crow_indices().numpy())
    np.testing.assert_array_equal(csr.values().numpy(), csr_t.values().numpy())
    np.testing.assert_array_equal(csr.to_dense().numpy(), coo_t.to_dense().numpy())


def test_products_match_pytorch():
    ours, theirs = _pair()
    rng = np.random.default_rng(0)
    d = rng.standard_normal((4, 5)).astype(np.float32)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    left = rng.standard_normal((2, 3)).astype(np.float32)
    pairs = [
        (ours @ numdiff.tensor(d), theirs @ torch.tensor(d)),
        (numdiff.mm(ours, numdiff.tensor(d)), torch.mm(theirs, torch.tensor(d))),
        (numdiff.sparse.mm(ours, numdiff.tensor(d)), torch.sparse.mm(theirs, torch.tensor(d))),
        (numdiff.matmul(ours, numdiff.tensor(d[:, 0])), torch.matmul(theirs, torch.tensor(d[:, 0]))),
        (numdiff.addmm(numdiff.tensor(x), ours, numdiff.tensor(d), beta=0.5, alpha=2.0),
         torch.addmm(torch.tensor(x), theirs, torch.tensor(d), beta=0.5, alpha=2.0)),
        (numdiff.sparse.addmm(numdiff.tensor(x), ours, numdiff.tensor(d)),
         torch.sparse.addmm(torch.tensor(x), theirs, torch.tensor(d))),
        (numdiff.mm(numdiff.tensor(left), ours), torch.mm(torch.tensor(left), theirs.to_dense())),
    ]
    for got, expected in pairs:
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_sampled_addmm_matches_pytorch():
    ours, theirs = _pair()
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)
    got = numdiff.sparse.sampled_addmm(ours, numdiff.tensor(a), numdiff.tensor(b), beta=0.5, alpha=2.0)
    expected = torch.sparse.sampled_addmm(theirs, torch.tensor(a), torch.tensor(b), beta=0.5, alpha=2.0)
    assert got.layout is numdiff.sparse_csr
    np.testing.assert_allclose(got.values().detach().numpy(), expected.values().numpy(), rtol=1e-5)


def test_gradients_reach_the_values_and_the_dense_side_in_float64():
    values = numdiff.randn(5, dtype=numdiff.float64, requires_grad=True)
    dense = numdiff.randn(4, 3, dtype=numdiff.float64, requires_grad=True)
    bias = numdiff.randn(3, 3, dtype=numdiff.float64, requires_grad=True)

    def product(v, d, x):
        return numdiff.addmm(x, numdiff.sparse_csr_tensor(CROW, COLS, v, (3, 4)), d, alpha=1.5)

    assert gradcheck(product, (values, dense, bias))
    assert gradgradcheck(product, (values, dense, bias))
    left = numdiff.randn(2, 3, dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda v, d: numdiff.mm(d, numdiff.sparse_csr_tensor(CROW, COLS, v, (3, 4))), (values, left))
    a = numdiff.randn(3, 2, dtype=numdiff.float64, requires_grad=True)
    b = numdiff.randn(2, 4, dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda v, a, b: numdiff.sparse.sampled_addmm(
        numdiff.sparse_csr_tensor(CROW, COLS, v, (3, 4)), a, b).values(), (values, a, b))
    x = (numdiff.randn(3, 3, dtype=numdiff.float64).abs() + 0.5).requires_grad_()
    assert gradcheck(lambda t: t.to_sparse_csr() @ numdiff.ones(3, 2, dtype=numdiff.float64), (x,))


def test_gradients_match_pytorchs():
    values = numdiff.tensor(VALUES, dtype=numdiff.float64, requires_grad=True)
    dense = numdiff.tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
    (numdiff.sparse_csr_tensor(CROW, COLS, values, (3, 4)) @ dense).pow(2).sum().backward()
    dense_t = torch.tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
    matrix_t = torch.sparse_csr_tensor(torch.tensor(CROW), torch.tensor(COLS), torch.tensor(VALUES, dtype=torch.float64),
                                       (3, 4)).to_dense().requires_grad_()
    (matrix_t @ dense_t).pow(2).sum().backward()
    np.testing.assert_allclose(dense.grad.numpy(), dense_t.grad.numpy())
    rows = np.repeat(np.arange(3), np.diff(CROW))
    np.testing.assert_allclose(values.grad.numpy(), matrix_t.grad.numpy()[rows, COLS])


def test_vmap_over_dense_operands_and_over_values():
    matrix = numdiff.sparse_csr_tensor(CROW, COLS, VALUES, (3, 4))
    batch = numdiff.randn(6, 4, 2)
    got = vmap(lambda d: matrix @ d)(batch)
    np.testing.assert_allclose(got.numpy(), np.stack([(matrix @ batch[i]).numpy() for i in range(6)]), rtol=1e-6)
    values = numdiff.randn(6, 5)
    got = vmap(lambda v: numdiff.sparse_csr_tensor(CROW, COLS, v, (3, 4)) @ batch[0])(values)
    expected = [(numdiff.sparse_csr_tensor(CROW, COLS, values[i], (3, 4)) @ batch[0]).numpy() for i in range(6)]
    np.testing.assert_allclose(got.numpy(), np.stack(expected), rtol=1e-6)


@pytest.mark.parametrize(
    "crow, cols, values, size, error, match",
    [
        ([1, 2, 2, 5], COLS, VALUES, (3, 4), ValueError, "start at 0"),
        ([0, 3, 2, 5], COLS, VALUES, (3, 4), ValueError, "must not decrease.*3 to 2 at row 1"),
        ([0, 2, 5], COLS, VALUES, (3, 4), ValueError, "size\\[0\\] \\+ 1 = 4 entries, got 3"),
        (CROW, [1, 3, 0, 1, 4], VALUES, (3, 4), IndexError, "column index is 4, outside \\[0, 4\\)"),
        (CROW, COLS, VALUES[:4], (3, 4), ValueError, "one value per column index \\(5\\)"),
        ([0.0, 2.0, 2.0, 5.0], COLS, VALUES, (3, 4), TypeError, "crow_indices must be integers"),
        (CROW, COLS, VALUES, (3, 4, 1), ValueError, "size must have 2 dims"),
    ],
)
def test_bad_structures_are_refused_naming_the_values(crow, cols, values, size, error, match):
    with pytest.raises(error, match=match):
        numdiff.sparse_csr_tensor(crow, cols, values, size)


def test_bad_products_are_refused_naming_shapes_and_dtypes():
    matrix = numdiff.sparse_csr_tensor(CROW, COLS, VALUES, (3, 4))
    with pytest.raises(ValueError, match=r"sparse \(3, 4\) @ dense \(3, 2\)"):
        matrix @ numdiff.ones(3, 2)
    with pytest.raises(TypeError, match="float32 and numdiff.float64|float32.*float64"):
        matrix @ numdiff.ones(4, 2, dtype=numdiff.float64)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        matrix @ numdiff.ones(2, 4, 2)
    with pytest.raises(ValueError, match="to_sparse_csr: expects a 2-D tensor"):
        numdiff.ones(2, 2, 2).to_sparse_csr()
    with pytest.raises(TypeError, match="sampled_addmm: expected a sparse CSR input"):
        numdiff.sparse.sampled_addmm(numdiff.ones(3, 4), numdiff.ones(3, 2), numdiff.ones(2, 4))


def test_mv_with_a_sparse_matrix_matches_pytorch():
    ours, theirs = _pair()
    vec = np.arange(4.0, dtype=np.float32)
    np.testing.assert_allclose(numdiff.mv(ours, numdiff.tensor(vec)).numpy(), torch.mv(theirs, torch.tensor(vec)).numpy())
    coo, coo_t = ours.to_sparse_coo(), theirs.to_sparse_coo()
    np.testing.assert_allclose(numdiff.mv(coo, numdiff.tensor(vec)).numpy(), torch.mv(coo_t, torch.tensor(vec)).numpy())
    with pytest.raises(ValueError, match="mv: vec must be 1-D"):
        numdiff.mv(ours, numdiff.ones(4, 1))
