"""DistributedSampler: each rank draws its own, disjoint share of a dataset's indices.

The partition is PyTorch's for the same seed and epoch: a permutation of the indices (shuffled
with ``seed + epoch``), padded by wrapping around (or truncated with `drop_last`) to a multiple of
the number of replicas, then every ``num_replicas``-th index from ``rank``. The shuffle is
PyTorch's CPU ``randperm`` on a Mersenne Twister seeded with ``seed + epoch``, reproduced here
(NumPy's legacy MT19937 gives the same 32-bit stream), so a job that mixes numdiff and PyTorch
ranks, or resumes one from the other, sees the same batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from numdiff.kernels._self_healing_cache import njit
from numdiff.utils.data.sampler import Sampler


def _shuffle(raw: np.ndarray, n: int) -> np.ndarray:
    order = np.arange(n, dtype=np.int64)
    for i in range(n - 1):
        j = i + np.int64(raw[i] % np.uint64(n - i))
        order[i], order[j] = order[j], order[i]
    return order


_shuffle_compiled = njit(cache=True)(_shuffle)


def torch_randperm(n: int, seed: int) -> np.ndarray:
    """PyTorch's ``randperm(n, generator=Generator().manual_seed(seed))`` on the CPU.

    A Fisher-Yates pass driven by MT19937's 32-bit outputs, reduced modulo the remaining count.
    Checked against torch 2.13 (tests/distributed/test_sampler.py); PyTorch switches to 64-bit
    draws for n >= 2**24, which this refuses rather than silently differ.
    """
    if n >= 2**24:
        raise ValueError(f"DistributedSampler: shuffling {n} indices (2**24 or more) is not supported")
    state = np.random.RandomState(seed & 0xFFFFFFFF)
    raw = state.randint(0, 2**32, size=max(n - 1, 0), dtype=np.uint64)
    return _shuffle_compiled(raw, n) if n > 64 else _shuffle(raw, n)


class DistributedSampler(Sampler):
    """Indices of this rank's share of `dataset`; call `set_epoch(e)` before each epoch.

    >>> sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    >>> loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    >>> for epoch in range(epochs):
    ...     sampler.set_epoch(epoch)
    """

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            from numdiff.distributed import _group

            group = _group.current("DistributedSampler")
            num_replicas = group.size if num_replicas is None else num_replicas
            rank = group.rank if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be a positive int, got {num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(
                f"DistributedSampler: invalid rank {rank!r}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.shuffle = shuffle
        self.seed = int(seed)
        self.drop_last = drop_last
        length = len(dataset)
        if drop_last and length % num_replicas != 0:
            self.num_samples = math.ceil((length - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(length / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        length = len(self.dataset)
        if self.shuffle:
            indices = torch_randperm(length, self.seed + self.epoch)
        else:
            indices = np.arange(length, dtype=np.int64)
        if not self.drop_last:
            padding = self.total_size - length
            if padding > 0:
                indices = np.concatenate([indices, np.resize(indices, padding)]) if length else indices
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle differently for each epoch (the seed used is ``seed + epoch``)."""
        self.epoch = int(epoch)
