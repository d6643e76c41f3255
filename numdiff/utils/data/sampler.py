"""numdiff.utils.data.sampler, at the module path PyTorch programs import samplers from: sequential,
random and batch samplers, SubsetRandomSampler and WeightedRandomSampler. Samplers draw
lazily, a block of indices at a time, whatever the number of samples asked for."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from numdiff._random import Generator, rng
from numdiff.tensor import Tensor

__all__ = [
    "BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler",
]  # fmt: skip


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


def _source(generator: Generator | None) -> np.random.Generator:
    if generator is not None:
        return generator.numpy
    return np.random.default_rng(int(rng(None).integers(0, 2**63 - 1)))


class SubsetRandomSampler(Sampler):
    """The given indices in a fresh random order on every pass.

    >>> sorted(SubsetRandomSampler([3, 5, 7]))
    [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _source(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices in [0, len(weights)), index i drawn with probability proportional to
    weights[i], with or without replacement.

    >>> list(WeightedRandomSampler([0.0, 1.0], 3))
    [1, 1, 1]
    """

    def __init__(self, weights: Any, num_samples: int, replacement: bool = True, generator: Generator | None = None) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        array = weights.detach().cpu().numpy() if isinstance(weights, Tensor) else np.asarray(weights)
        array = np.asarray(array, dtype=np.float64)
        if array.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(array.shape)}")
        if not np.isfinite(array).all() or (array < 0).any() or array.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and not all zero")
        if not replacement and num_samples > np.count_nonzero(array):
            raise RuntimeError(
                f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement from "
                f"{np.count_nonzero(array)} non-zero weights"
            )
        self.weights, self.num_samples, self.replacement, self.generator = array, num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        source = _source(self.generator)
        p = self.weights / self.weights.sum()
        if not self.replacement:
            yield from source.choice(len(p), self.num_samples, replace=False, p=p).tolist()
            return
        cumulative = np.cumsum(p)
        for start in range(0, self.num_samples, _DRAW_BLOCK):
            u = source.random(min(_DRAW_BLOCK, self.num_samples - start)) * cumulative[-1]
            yield from np.minimum(np.searchsorted(cumulative, u, side="right"), len(p) - 1).tolist()

    def __len__(self) -> int:
        return self.num_samples
