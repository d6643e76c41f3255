"""Tensor.untyped_storage(): views of one tensor share one storage (its address and size in bytes),
read byte by byte as PyTorch's."""

from __future__ import annotations

import pytest

import numdiff

torch = pytest.importorskip("torch")


def _views(lib):
    base = lib.arange(12, dtype=lib.float64)
    return base, [base[3:], base.view(3, 4).t(), base.view(3, 4)[1, ::2], base.reshape(2, 6)]


def test_views_report_their_owners_storage_as_torch():
    for lib in (numdiff, torch):
        base, views = _views(lib)
        storage = base.untyped_storage()
        assert storage.nbytes() == len(storage) == storage.size() == 96
        for view in views:
            assert view.untyped_storage().data_ptr() == storage.data_ptr()
            assert view.untyped_storage().nbytes() == 96
        assert base.clone().untyped_storage().data_ptr() != storage.data_ptr()
    ours, theirs = numdiff.tensor([1.5, -2.0]), torch.tensor([1.5, -2.0])
    assert ours.untyped_storage().tolist() == theirs.untyped_storage().tolist()
    assert [ours.untyped_storage()[i] for i in (0, 3, -1)] == [theirs.untyped_storage()[i] for i in (0, 3, -1)]
    assert repr(numdiff.arange(2, dtype=numdiff.int8).untyped_storage()) == (
        " 0\n 1\n[numdiff.UntypedStorage(device=cpu) of size 2]"
    )


def test_reading_outside_the_storage_names_the_index():
    storage = numdiff.zeros(2).untyped_storage()
    with pytest.raises(IndexError, match="untyped_storage: index 8 out of range for storage of size 8"):
        storage[8]
    with pytest.raises(TypeError, match="only an int index reads a byte, got slice"):
        storage[1:3]
