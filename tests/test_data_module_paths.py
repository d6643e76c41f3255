"""numdiff.utils.data's PyTorch module paths (dataset, sampler, dataloader), the datasets and
samplers programs take from them, DataLoader's worker and pinning options, and lazy sampling."""

import itertools

import numpy as np
import pytest

import numdiff
from numdiff.utils.data import DataLoader, RandomSampler, TensorDataset
from numdiff.utils.data.dataloader import DataLoader as DataLoaderFromItsModule
from numdiff.utils.data.dataloader import get_worker_info
from numdiff.utils.data.dataset import ChainDataset, ConcatDataset, IterableDataset, StackDataset
from numdiff.utils.data.sampler import SubsetRandomSampler, WeightedRandomSampler


def test_module_paths_name_the_same_objects():
    assert DataLoaderFromItsModule is DataLoader
    assert numdiff.utils.data.ConcatDataset is ConcatDataset and get_worker_info() is None


def test_a_sampler_with_replacement_draws_lazily_however_many_samples_are_asked_for():
    sampler = RandomSampler(range(7), replacement=True, num_samples=10**12)  # 8 TB of indices if materialised
    assert len(sampler) == 10**12
    first = list(itertools.islice(iter(sampler), 10_000))
    assert len(first) == 10_000 and set(first) <= set(range(7))
    weighted = WeightedRandomSampler([1.0, 3.0], num_samples=10**12)
    assert set(itertools.islice(iter(weighted), 100)) <= {0, 1}


def test_weighted_sampler_follows_the_weights_and_checks_them():
    draws = np.array(list(WeightedRandomSampler([1.0, 0.0, 3.0], 40_000, generator=numdiff.Generator().manual_seed(0))))
    counts = np.bincount(draws, minlength=3) / len(draws)
    np.testing.assert_allclose(counts, [0.25, 0.0, 0.75], atol=0.01)
    without = list(WeightedRandomSampler([1.0, 1.0, 1.0, 0.0], 3, replacement=False))
    assert sorted(without) == [0, 1, 2]
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(RuntimeError, match="cannot draw 3 samples without replacement from 2 non-zero weights"):
        WeightedRandomSampler([1.0, 1.0, 0.0], 3, replacement=False)


def test_subset_random_sampler_permutes_its_indices():
    order = list(SubsetRandomSampler([10, 20, 30, 40], generator=numdiff.Generator().manual_seed(1)))
    assert sorted(order) == [10, 20, 30, 40]


def test_concat_chain_and_stack_datasets_index_as_pytorch_does():
    torch = pytest.importorskip("torch")
    parts = [list(range(3)), list(range(10, 14))]
    ours, theirs = ConcatDataset(parts), torch.utils.data.ConcatDataset(parts)
    assert len(ours) == len(theirs) == 7
    assert [ours[i] for i in range(-7, 7)] == [theirs[i] for i in range(-7, 7)]
    with pytest.raises(IndexError):
        ours[7]

    class Stream(IterableDataset):
        def __init__(self, values):
            self.values = values

        def __iter__(self):
            return iter(self.values)

    assert list(ChainDataset([Stream([1, 2]), Stream([3])])) == [1, 2, 3]
    stacked = StackDataset(a=[1, 2], b=[3, 4])
    assert stacked[1] == {"a": 2, "b": 4}
    with pytest.raises(ValueError, match="size mismatch"):
        StackDataset([1], [1, 2])


def test_loader_accepts_pin_memory_and_worker_options_and_refuses_what_pytorch_refuses():
    ds = TensorDataset(numdiff.arange(6.0))
    loader = DataLoader(ds, batch_size=4, pin_memory=True, num_workers=2, persistent_workers=True, prefetch_factor=2,
                        worker_init_fn=lambda worker_id: None, timeout=5)
    assert [b[0].tolist() for b in loader] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(ds, timeout=-1)
