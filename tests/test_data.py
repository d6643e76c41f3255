"""numdiff.utils.data: datasets, samplers, collation and the DataLoader's batching semantics."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import numdiff
from numdiff.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


def _dataset(n: int = 10) -> TensorDataset:
    x = numdiff.tensor(np.arange(n * 2, dtype=np.float32).reshape(n, 2))
    y = numdiff.tensor(np.arange(n) % 3)
    return TensorDataset(x, y)


class Squares(Dataset):
    """A dataset of Python tuples (int, float, dict) to exercise the general collate path."""

    def __len__(self) -> int:
        return 7

    def __getitem__(self, i: int):
        return i, float(i * i), {"arr": np.full(2, i, dtype=np.float32), "name": f"s{i}"}


def test_tensor_dataset_indexes_every_tensor_and_checks_sizes():
    ds = _dataset()
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 0 and len(ds) == 10
    with pytest.raises(ValueError, match=r"Size mismatch between tensors: first dimensions are \[3, 2\]"):
        TensorDataset(numdiff.zeros(3), numdiff.zeros(2))
    with pytest.raises(TypeError, match="argument 1 is a ndarray"):
        TensorDataset(numdiff.zeros(3), np.zeros(3))


def test_sequential_loader_batches_in_order_with_a_short_last_batch():
    loader = DataLoader(_dataset(), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    xs, ys = batches[-1]
    assert xs.shape == (2, 2) and xs.tolist() == [[16.0, 17.0], [18.0, 19.0]]
    assert ys.dtype is numdiff.int64 and ys.tolist() == [2, 0]
    assert isinstance(batches[0], list) and batches[0][0].shape == (4, 2)


def test_drop_last_drops_the_short_batch():
    loader = DataLoader(_dataset(), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [len(b[1]) for b in loader] == [4, 4]


def test_shuffle_visits_every_sample_once_per_epoch_in_a_new_order():
    loader = DataLoader(_dataset(), batch_size=3, shuffle=True)
    numdiff.manual_seed(0)
    first = np.concatenate([y[0].numpy()[:, 0] for y in loader]) // 2
    second = np.concatenate([y[0].numpy()[:, 0] for y in loader]) // 2
    assert sorted(first.tolist()) == list(range(10)) == sorted(second.tolist())
    assert first.tolist() != second.tolist()


def test_shuffle_is_reproducible_with_manual_seed_and_with_a_generator():
    def order(loader):
        return [int(v) for xb, _ in loader for v in xb.numpy()[:, 0] // 2]

    numdiff.manual_seed(123)
    a = order(DataLoader(_dataset(), batch_size=4, shuffle=True))
    numdiff.manual_seed(123)
    b = order(DataLoader(_dataset(), batch_size=4, shuffle=True))
    assert a == b
    g1, g2 = numdiff.Generator().manual_seed(5), numdiff.Generator().manual_seed(5)
    assert order(DataLoader(_dataset(), batch_size=4, shuffle=True, generator=g1)) == order(
        DataLoader(_dataset(), batch_size=4, shuffle=True, generator=g2)
    )


def test_the_gathered_batches_equal_collating_the_samples_one_by_one():
    ds = _dataset(9)
    fast = list(DataLoader(ds, batch_size=4, shuffle=True, generator=numdiff.Generator().manual_seed(1)))
    slow = list(
        DataLoader(
            ds,
            batch_size=4,
            shuffle=True,
            generator=numdiff.Generator().manual_seed(1),
            collate_fn=lambda b: default_collate(b),
        )
    )
    for (fx, fy), (sx, sy) in zip(fast, slow):
        assert fx.dtype is sx.dtype and fy.dtype is sy.dtype
        np.testing.assert_array_equal(fx.numpy(), sx.numpy())
        np.testing.assert_array_equal(fy.numpy(), sy.numpy())


def test_default_collate_handles_numbers_dicts_arrays_and_strings():
    (ints, floats, meta), *_ = list(DataLoader(Squares(), batch_size=7))
    assert ints.dtype is numdiff.int64 and ints.tolist() == list(range(7))
    assert floats.dtype is numdiff.float64 and floats.tolist() == [float(i * i) for i in range(7)]
    assert meta["arr"].shape == (7, 2) and meta["arr"].dtype is numdiff.float32
    assert meta["name"] == [f"s{i}" for i in range(7)]
    assert default_collate([True, False]).dtype is numdiff.bool
    assert default_collate([np.float32(1.0), np.float32(2.0)]).dtype is numdiff.float32
    point = namedtuple("Point", "x y")
    batch = default_collate([point(1, 2.0), point(3, 4.0)])
    assert type(batch).__name__ == "Point" and batch.x.tolist() == [1, 3]


def test_default_collate_keeps_strings_in_the_container_torch_gives_them():
    # torch returns the strings as the batch holds them: a list at the top and under a dict key,
    # the tuple zip made inside a sample's tuple or list (numdiff gave lists everywhere)
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([{"n": "a"}, {"n": "b"}]) == {"n": ["a", "b"]}
    names, numbers = default_collate([("a", 1), ("b", 2)])
    assert names == ("a", "b") and numbers.tolist() == [1, 2]
    assert default_collate([["a", "x"], ["b", "y"]]) == [("a", "b"), ("x", "y")]
    pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate

    for batch in (["a", "b"], [("a", "x"), ("b", "y")], [{"n": ("a", "x")}, {"n": ("b", "y")}]):
        assert default_collate(batch) == torch_collate(batch)


def test_default_collate_refuses_ragged_tensors_and_unknown_types():
    with pytest.raises(RuntimeError, match=r"equal size, but got \[\[2\], \[3\]\]"):
        default_collate([numdiff.zeros(2), numdiff.zeros(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([(1, 2), (1,)])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object()])


def test_tensors_that_require_grad_are_collated_with_their_graph():
    w = numdiff.ones(4, 2, requires_grad=True)
    (xb,) = next(iter(DataLoader(TensorDataset(w), batch_size=2)))
    xb.sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def test_custom_collate_fn_and_samplers():
    loader = DataLoader(_dataset(), batch_size=5, collate_fn=lambda samples: len(samples))
    assert list(loader) == [5, 5]
    loader = DataLoader(_dataset(), sampler=[9, 0, 4], batch_size=2)
    assert [b[0].numpy()[:, 0].tolist() for b in loader] == [[18.0, 0.0], [8.0]]
    loader = DataLoader(_dataset(), batch_sampler=[[1, 2], [3]])
    assert [len(b[1]) for b in loader] == [2, 1]


def test_loader_argument_errors_name_the_values():
    with pytest.raises(
        ValueError, match="batch_size should be a positive integer value, but got batch_size=0"
    ):
        DataLoader(_dataset(), batch_size=0)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(_dataset(), sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(_dataset(), batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(_dataset(), num_workers=-1)
    with pytest.raises(IndexError):
        list(DataLoader(_dataset(3), sampler=[5]))


def test_samplers_lengths_and_replacement():
    ds = _dataset(5)
    assert list(SequentialSampler(ds)) == [0, 1, 2, 3, 4]
    draws = list(
        RandomSampler(ds, replacement=True, num_samples=50, generator=numdiff.Generator().manual_seed(0))
    )
    assert len(draws) == 50 and set(draws) <= set(range(5)) and len(set(draws)) > 1
    longer = list(RandomSampler(ds, num_samples=12, generator=numdiff.Generator().manual_seed(0)))
    assert len(longer) == 12 and sorted(longer[:10]) == sorted(list(range(5)) * 2)
    assert len(BatchSampler(range(10), 3, drop_last=False)) == 4
    assert list(BatchSampler(range(5), 2, drop_last=True)) == [[0, 1], [2, 3]]


def test_shuffling_an_empty_dataset_is_refused_with_a_clear_error():
    empty = TensorDataset(numdiff.zeros(0, 2))
    with pytest.raises(ValueError, match=r"num_samples=0 \(the dataset is empty\)"):
        DataLoader(empty, batch_size=2, shuffle=True)
    with pytest.raises(ValueError, match="cannot draw 3 samples from an empty dataset"):
        list(RandomSampler(empty, replacement=True, num_samples=3))
    with pytest.raises(ValueError, match="cannot draw 3 samples from an empty dataset"):
        list(RandomSampler(empty, num_samples=3))


def test_subset_and_random_split():
    ds = _dataset(10)
    sub = Subset(ds, [7, 2])
    assert len(sub) == 2 and sub[0][1].item() == 7 % 3
    a, b = random_split(ds, [0.7, 0.3], generator=numdiff.Generator().manual_seed(0))
    assert (len(a), len(b)) == (7, 3) and sorted(a.indices + b.indices) == list(range(10))
    with pytest.raises(ValueError, match=r"Sum of input lengths \(9\) does not equal the length"):
        random_split(ds, [4, 5])


def test_random_split_refuses_negative_or_fractional_lengths_that_sum_to_the_size():
    ds = _dataset(6)
    # Both sum to 6: a -1 made splits of 5 and 1, and 2.5 + 3.5 silently dropped a sample.
    with pytest.raises(ValueError, match=r"non-negative whole numbers .*got \[-1, 7\]: the one at index 0 is -1"):
        random_split(ds, [-1, 7])
    with pytest.raises(ValueError, match=r"the one at index 0 is 2\.5"):
        random_split(ds, [2.5, 3.5])
    assert [len(s) for s in random_split(ds, [2.0, 4])] == [2, 4]


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter({"x": numdiff.tensor([float(i)]), "i": i} for i in range(self.n))


def test_an_iterable_dataset_is_batched_in_its_order_with_a_short_last_batch():
    batches = list(DataLoader(_Stream(5), batch_size=2))
    assert [b["i"].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[0]["x"].tolist() == [[0.0], [1.0]]
    assert [b["i"].tolist() for b in DataLoader(_Stream(5), batch_size=2, drop_last=True)] == [[0, 1], [2, 3]]
    with pytest.raises(TypeError, match="_Stream defines no __len__"):
        len(DataLoader(_Stream(5), batch_size=2))


def test_an_iterable_dataset_refuses_shuffle_and_samplers():
    with pytest.raises(ValueError, match="IterableDataset: expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(_Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(_Stream(3), sampler=[0, 1])


def test_batch_size_none_yields_each_sample_converted_like_torch():
    torch = pytest.importorskip("torch")

    class Samples:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"x": np.full(2, float(i)), "n": i, "pair": (np.float32(i), "tag")}

    ours = list(DataLoader(Samples(), batch_size=None))
    theirs = list(torch.utils.data.DataLoader(Samples(), batch_size=None))
    assert len(DataLoader(Samples(), batch_size=None)) == 3
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a["x"].numpy(), b["x"].numpy())
        assert a["x"].dtype == numdiff.float64 and a["n"] == b["n"]
        assert float(a["pair"][0]) == float(b["pair"][0]) and a["pair"][1] == "tag"
        assert isinstance(a["pair"], list)
    order = [s["n"] for s in DataLoader(Samples(), batch_size=None, shuffle=True, generator=numdiff.Generator().manual_seed(3))]
    assert sorted(order) == [0, 1, 2]
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching and is mutually exclusive with drop_last"):
        DataLoader(Samples(), batch_size=None, drop_last=True)


def test_batch_size_none_streams_an_iterable_dataset_sample_by_sample():
    class Stream(numdiff.utils.data.IterableDataset):
        def __iter__(self):
            return iter([np.ones(1), np.zeros(1)])

    assert [t.tolist() for t in DataLoader(Stream(), batch_size=None)] == [[1.0], [0.0]]
