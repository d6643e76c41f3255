"""numdiff.utils.data: datasets, samplers and a DataLoader with PyTorch's batching semantics.

A DataLoader draws indices from a sampler (sequential, or a fresh random permutation each epoch),
groups them into batches and collates each batch: samples that are tuples of tensors become a
list of stacked tensors, numbers become 1-D tensors, dicts are collated per key. Shuffling draws
from numdiff's random state (seeded by ``numdiff.manual_seed``) or from a given
``numdiff.Generator``, so a seeded run sees the same batches every time.
"""

from __future__ import annotations

import importlib

from numdiff.utils.data._collate import default_collate, default_convert
from numdiff.utils.data._workers import get_worker_info
from numdiff.utils.data.dataloader import DataLoader
from numdiff.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from numdiff.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]


def __getattr__(name: str) -> object:
    # DistributedSampler imports numba; load it on first use so `import numdiff` stays light.
    if name in ("DistributedSampler", "distributed"):
        distributed = importlib.import_module("numdiff.utils.data.distributed")
        return distributed if name == "distributed" else distributed.DistributedSampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
