"""DistributedSampler gives each rank the same indices as PyTorch's, for every option."""

from __future__ import annotations

import pytest

from numdiff.utils.data import DataLoader, TensorDataset
from numdiff.utils.data.distributed import DistributedSampler, torch_randperm

torch = pytest.importorskip("torch")
from torch.utils.data.distributed import DistributedSampler as TorchSampler  # noqa: E402


@pytest.mark.parametrize("length", [0, 1, 7, 10, 33, 1797])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [False, True])
def test_partition_equals_pytorch(length, replicas, shuffle, drop_last):
    data = list(range(length))
    for rank in range(replicas):
        for epoch in (0, 3):
            ours = DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=7, drop_last=drop_last)
            theirs = TorchSampler(data, replicas, rank, shuffle=shuffle, seed=7, drop_last=drop_last)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)
            assert len(ours) == len(theirs)


@pytest.mark.parametrize("n,seed", [(2, 0), (100, 42), (5000, 2**40 + 3)])
def test_shuffle_is_pytorch_randperm(n, seed):
    generator = torch.Generator().manual_seed(seed)
    assert torch_randperm(n, seed).tolist() == torch.randperm(n, generator=generator).tolist()


def test_ranks_cover_the_dataset_once_without_drop_last_padding_wraps():
    shares = [list(DistributedSampler(list(range(10)), 4, r, seed=1)) for r in range(4)]
    assert all(len(s) == 3 for s in shares)
    flat = sorted(i for s in shares for i in s)
    assert set(flat) == set(range(10)) and len(flat) == 12  # two indices padded by wrapping round


def test_the_sampler_drives_a_dataloader():
    import numdiff

    dataset = TensorDataset(numdiff.arange(12.0), numdiff.arange(12))
    sampler = DistributedSampler(dataset, num_replicas=3, rank=1, shuffle=False)
    batches = [y.tolist() for _, y in DataLoader(dataset, batch_size=2, sampler=sampler)]
    assert batches == [[1, 4], [7, 10]]


def test_bad_arguments_name_the_values():
    with pytest.raises(ValueError, match=r"invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(list(range(4)), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match=r"num_replicas must be a positive int, got 0"):
        DistributedSampler(list(range(4)), num_replicas=0, rank=0)
    import numdiff.distributed as dist

    if not dist.is_initialized():
        with pytest.raises(RuntimeError, match=r"DistributedSampler: the default process group has not been"):
            DistributedSampler(list(range(4)))
