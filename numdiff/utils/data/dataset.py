"""numdiff.utils.data.dataset, at the module path PyTorch programs import datasets from: map-style
and iterable datasets, TensorDataset, Subset and random_split, and the datasets that combine
others (ConcatDataset, ChainDataset, StackDataset)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from numdiff._random import Generator, rng
from numdiff.tensor import Tensor

__all__ = [
    "ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset", "Subset", "TensorDataset",
    "random_split",
]  # fmt: skip


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


class ConcatDataset(Dataset):
    """The samples of several map-style datasets, one after another.

    >>> len(ConcatDataset([TensorDataset(numdiff.zeros(2)), TensorDataset(numdiff.ones(3))]))
    5
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes: list[int] = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        if index >= len(self):
            raise IndexError(f"ConcatDataset: index {index} is out of range for {len(self)} samples")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """The samples of several iterable datasets, one stream after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class StackDataset(Dataset):
    """Sample i is the tuple (or dict) of sample i of each dataset, all of the same length.

    >>> StackDataset(TensorDataset(numdiff.zeros(2)), labels=[0, 1])[1]["labels"]
    1
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("StackDataset: pass datasets as positional or as keyword arguments, not both")
        parts = args or tuple(kwargs.values())
        if not parts:
            raise ValueError("StackDataset: at least one dataset should be passed")
        lengths = {len(d) for d in parts}
        if len(lengths) != 1:
            raise ValueError(f"StackDataset: size mismatch between datasets, lengths {sorted(lengths)}")
        self._length = lengths.pop()
        self.datasets: Any = args if args else dict(kwargs)

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {name: d[index] for name, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length
