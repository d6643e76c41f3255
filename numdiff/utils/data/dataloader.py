"""numdiff.utils.data.dataloader: the DataLoader, at the module path PyTorch programs import it from."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from numdiff._random import Generator
from numdiff.backend import CPU, backend_for
from numdiff.tensor import Tensor
from numdiff.utils.data._collate import default_collate, default_convert
from numdiff.utils.data._workers import check_worker_options, get_worker_info
from numdiff.utils.data.dataset import Dataset, IterableDataset, TensorDataset
from numdiff.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


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
