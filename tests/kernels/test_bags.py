"""numdiff.kernels.bags.first_max_rows (embedding_bag's max) against a NumPy reference: ties keep
the first row, a NaN wins, left-out rows and empty bags; its checks; embedding_bag max vs torch."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff.kernels.bags import first_max_rows


def _reference(table, ids, segment, keep, bags):
    values = table[ids]
    positions, found = np.zeros((bags, values.shape[1]), np.int64), np.zeros(bags, bool)
    for b in range(bags):
        rows = np.flatnonzero((segment == b) & keep)
        if rows.size:
            found[b] = True
            block = values[rows]
            nan = np.isnan(block)
            best = np.where(nan.any(0), nan.argmax(0), np.argmax(np.where(nan, -np.inf, block), axis=0))
            positions[b] = ids[rows[best]]
    return positions, found


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_first_max_rows_matches_numpy_with_ties_nans_and_left_out_rows(dtype):
    rng = np.random.default_rng(8)
    table = rng.integers(-3, 3, (12, 5)).astype(dtype)  # many ties
    table[4, 2] = table[7, 0] = np.nan
    ids = rng.integers(0, 12, 30)  # rows repeat across and within bags
    segment = np.sort(rng.integers(0, 6, 30))
    segment[segment == 3] = 2  # bag 3 is empty
    keep = rng.random(30) > 0.2
    positions, found = first_max_rows(table, ids, segment, keep, 7)
    expected_positions, expected_found = _reference(table.astype(np.float64), ids, segment, keep, 7)
    np.testing.assert_array_equal(found, expected_found)
    np.testing.assert_array_equal(positions, expected_positions)


def test_first_max_rows_refuses_bags_out_of_range_and_mismatched_lengths():
    ids = np.array([0, 1, 2])
    with pytest.raises(IndexError, match=r"first_max_rows: segment must lie in \[0, 1\], got values in \[0, 2\]"):
        first_max_rows(np.zeros((3, 2)), ids, np.array([0, 1, 2]), np.ones(3, bool), 2)
    with pytest.raises(IndexError, match=r"first_max_rows: ids must lie in \[0, 2\], got values in \[0, 3\]"):
        first_max_rows(np.zeros((3, 2)), np.array([0, 3, 1]), np.array([0, 1, 1]), np.ones(3, bool), 2)
    with pytest.raises(ValueError, match=r"first_max_rows: table must be 2-D .* segment \(2,\)"):
        first_max_rows(np.zeros((3, 2)), ids, np.array([0, 1]), np.ones(3, bool), 2)


def test_float32_embedding_bag_max_matches_torch_with_padding_and_empty_bags():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    weight = rng.standard_normal((30, 6)).astype(np.float32)
    indices, offsets = rng.integers(0, 30, 25), np.array([0, 4, 4, 11, 20])
    indices[20:] = 5  # the last bag holds only padding: empty, so zeros
    grad = rng.standard_normal((5, 6)).astype(np.float32)
    mine, theirs = numdiff.tensor(weight, requires_grad=True), torch.tensor(weight, requires_grad=True)
    out = nf.embedding_bag(numdiff.tensor(indices), mine, numdiff.tensor(offsets), mode="max", padding_idx=5)
    expected = torch.nn.functional.embedding_bag(torch.tensor(indices), theirs, torch.tensor(offsets), mode="max", padding_idx=5)
    out.backward(numdiff.tensor(grad))
    expected.backward(torch.tensor(grad))
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_compiled_embedding_bag_max_follows_weight_updates():
    numdiff.manual_seed(0)
    bag = numdiff.nn.EmbeddingBag(10, 3, mode="max", dtype=numdiff.float64)
    optimizer = numdiff.optim.SGD(bag.parameters(), lr=0.5)
    compiled = numdiff.compile(lambda i, o: (bag(i, o) ** 2).sum())
    i, o = numdiff.tensor([1, 4, 4, 7, 2, 9, 3, 1]), numdiff.tensor([0, 3, 3, 6])
    for _ in range(4):  # each step moves the weights, and with them which rows hold the maxima
        optimizer.zero_grad()
        loss = compiled(i, o)
        loss.backward()
        grad = bag.weight.grad.numpy().copy()
        optimizer.zero_grad()
        eager = (bag(i, o) ** 2).sum()
        eager.backward()
        assert float(loss) == pytest.approx(float(eager), rel=1e-13)  # compile fuses the square and the sum
        np.testing.assert_allclose(grad, bag.weight.grad.numpy(), rtol=1e-13, atol=1e-15)
        with numdiff.no_grad():
            bag.weight.mul_(-1.0).add_(numdiff.randn(10, 3, dtype=numdiff.float64))
