"""numdiff.utils.data: datasets, samplers and a DataLoader with PyTorch's batching semantics.

A DataLoader draws indices from a sampler (sequential, or a fresh random permutation each epoch),
groups them into batches and collates each batch: samples that are tuples of tensors become a
list of stacked tensors, numbers become 1-D tensors, dicts are collated per key. Shuffling draws
from numdiff's random state (seeded by ``numdiff.manual_seed``) or from a given
``numdiff.Generator``, so a seeded run sees the same batches every time.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from numdiff._random import Generator, rng
from numdiff.backend import CPU, backend_for
from numdiff.tensor import Tensor
from numdiff.utils.data._collate import default_collate, default_convert
from numdiff.utils.data._workers import check_worker_options, get_worker_info

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


# --------------------------------------------------------------------------- datasets


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and ``__len__()``."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses define ``__iter__()``, yielding samples (a stream,
    a file read line by line). A DataLoader batches them in the order they come.

    >>> class Counting(IterableDataset):
    ...     def __iter__(self):
    ...         return iter(range(5))
    >>> [b.tolist() for b in DataLoader(Counting(), batch_size=2)]
    [[0, 1], [2, 3], [4]]
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} defines no __len__: how many samples it yields is unknown")


class TensorDataset(Dataset):
    """Samples are ``(t[i] for t in tensors)``; every tensor has the same first dimension.

    >>> ds = TensorDataset(numdiff.randn(100, 3), numdiff.randint(0, 2, (100,)))
    >>> x, y = ds[0]
    """

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: argument {i} is a {type(t).__name__}, not a Tensor")
            if t.ndim == 0:
                raise ValueError(
                    f"TensorDataset: argument {i} is 0-d; every tensor needs a first (sample) dimension"
                )
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) != 1:
            raise ValueError(f"Size mismatch between tensors: first dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = [int(i) for i in indices]

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Dataset, lengths: Sequence[int | float], generator: Generator | None = None
) -> list[Subset]:
    """Split into non-overlapping random subsets of the given lengths (or fractions summing to 1).

    >>> train, val = random_split(ds, [0.8, 0.2], generator=numdiff.Generator().manual_seed(0))
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1 (got {fraction})")
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):  # spread the remainder round-robin, as PyTorch does
            counts[i % len(counts)] += 1
        lengths = counts
    for i, length in enumerate(lengths):
        if isinstance(length, bool) or not float(length).is_integer() or length < 0:
            raise ValueError(
                f"random_split: lengths must be non-negative whole numbers (or fractions summing to 1), "
                f"got {list(lengths)}: the one at index {i} is {length!r}"
            )
    if sum(lengths) != n:
        raise ValueError(
            f"Sum of input lengths ({sum(lengths)}) does not equal the length of the input dataset ({n})"
        )
    order = rng(generator).permutation(n).tolist()
    subsets, start = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[start : start + int(length)]))
        start += int(length)
    return subsets


# --------------------------------------------------------------------------- samplers

_DRAW_BLOCK = 4096  # indices a sampler with replacement draws at a time


class Sampler:
    """Yields dataset indices; subclasses define ``__iter__`` (and ``__len__`` when known)."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh random permutation of the indices on every pass (or draws with replacement).

    Without a `generator`, each pass seeds a new generator from numdiff's default one, so
    ``numdiff.manual_seed`` fixes every epoch's order.
    """

    def __init__(
        self,
        data_source: Any,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={self.num_samples} "
                "(the dataset is empty)"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if n == 0:
            raise ValueError(f"RandomSampler: cannot draw {self.num_samples} samples from an empty dataset")
        if self.generator is None:
            source = np.random.default_rng(int(rng(None).integers(0, 2**63 - 1)))
        else:
            source = self.generator.numpy
        if self.replacement:
            # Drawn a block at a time, as PyTorch draws lazily: num_samples may be far larger
            # than memory (RandomSampler(ds, replacement=True, num_samples=10**10)).
            for start in range(0, self.num_samples, _DRAW_BLOCK):
                yield from source.integers(0, n, size=min(_DRAW_BLOCK, self.num_samples - start)).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from source.permutation(n).tolist()
        if self.num_samples % n:
            yield from source.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size` (the last may be short)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# --------------------------------------------------------------------------- loader


class DataLoader:
    """Iterate over `dataset` in batches.

    >>> loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    >>> for xb, yb in loader: ...

    Loading runs in the calling process; `num_workers` is accepted for PyTorch code and changes
    nothing about the batches produced. ``batch_size=None`` turns batching off, as in PyTorch:
    each sample comes alone, through `collate_fn` (default :func:`default_convert`).
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int = 1,
        shuffle: bool | None = None,
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[list[int]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        drop_last: bool = False,
        generator: Generator | None = None,
        pin_memory: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing, "
                f"got {num_workers!r}"
            )
        check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        if isinstance(dataset, IterableDataset):
            # Its samples come in its own order: there are no indices to shuffle or sample.
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value!r}")
            if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0):
                raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        batched = batch_size is not None or batch_sampler is not None
        if not batched and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
            )
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
        if isinstance(dataset, IterableDataset):
            pass
        elif sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_sampler is None and batched and not isinstance(dataset, IterableDataset):
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.generator = generator
        # Accepted and kept for PyTorch code. Batches are loaded in this process, so there are no
        # workers to start, time out or keep, and no page-locked copy to make: pin_memory is a
        # no-op (a CPU array is already where the CPU kernels read it; CUDA copies need no pinning here).
        self.pin_memory, self.timeout, self.worker_init_fn = pin_memory, timeout, worker_init_fn
        self.multiprocessing_context, self.prefetch_factor = multiprocessing_context, prefetch_factor
        self.persistent_workers, self.pin_memory_device, self.in_order = persistent_workers, pin_memory_device, in_order
        self._batched = batched
        if collate_fn is None:
            collate_fn = default_collate if batched else default_convert
        self.collate_fn = collate_fn

    def __iter__(self) -> Iterator[Any]:
        if not self._batched:
            samples = self.dataset if isinstance(self.dataset, IterableDataset) else map(self.dataset.__getitem__, self.sampler)
            for sample in samples:
                yield self.collate_fn(sample)
            return
        if isinstance(self.dataset, IterableDataset):
            yield from self._stream()
            return
        for indices in self.batch_sampler:
            yield self._fetch(indices)

    def __len__(self) -> int:
        if not self._batched:
            return len(self.dataset) if isinstance(self.dataset, IterableDataset) else len(self.sampler)
        if isinstance(self.dataset, IterableDataset):
            # PyTorch's estimate: known only when the dataset says how many samples it yields.
            samples = len(self.dataset)
            return samples // self.batch_size if self.drop_last else -(-samples // self.batch_size)
        return len(self.batch_sampler)

    def _stream(self) -> Iterator[Any]:
        """Batches of an IterableDataset: consecutive samples, the last one short unless drop_last."""
        batch: list = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def _fetch(self, indices: list[int]) -> Any:
        dataset = self.dataset
        if self.collate_fn is default_collate and type(dataset) is TensorDataset and self._plain(dataset):
            # One gather per tensor gives exactly default_collate's stack of the samples.
            rows = np.asarray(indices, dtype=np.int64)
            return [Tensor._wrap(t._data[rows], None, None) for t in dataset.tensors]
        getitems = getattr(dataset, "__getitems__", None)
        samples = getitems(indices) if getitems is not None else [dataset[i] for i in indices]
        return self.collate_fn(samples)

    @staticmethod
    def _plain(dataset: TensorDataset) -> bool:
        """CPU tensors outside autograd, which can be gathered directly from their arrays."""
        return all(backend_for(t._data) is CPU and not t.requires_grad for t in dataset.tensors)


from numdiff.utils.data.dataset import ChainDataset, ConcatDataset, StackDataset  # noqa: E402 - need Dataset
from numdiff.utils.data.sampler import SubsetRandomSampler, WeightedRandomSampler  # noqa: E402 - need Sampler


def __getattr__(name: str) -> object:
    # DistributedSampler imports numba; load it on first use so `import numdiff` stays light.
    if name in ("DistributedSampler", "distributed"):
        distributed = importlib.import_module("numdiff.utils.data.distributed")
        return distributed if name == "distributed" else distributed.DistributedSampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
