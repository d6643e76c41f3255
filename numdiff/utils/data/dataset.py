"""numdiff.utils.data.dataset, the module path PyTorch programs import datasets from: the
datasets of numdiff.utils.data, and the ones that combine datasets (ConcatDataset, ChainDataset,
StackDataset)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import Any

from numdiff.utils.data import Dataset, IterableDataset, Subset, TensorDataset, random_split

__all__ = [
    "ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset", "Subset", "TensorDataset",
    "random_split",
]  # fmt: skip


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
