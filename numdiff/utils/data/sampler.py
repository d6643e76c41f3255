"""numdiff.utils.data.sampler, the module path PyTorch programs import samplers from: the
samplers of numdiff.utils.data, SubsetRandomSampler and WeightedRandomSampler. Samplers draw
lazily, a block of indices at a time, whatever the number of samples asked for."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from numdiff._random import Generator, rng
from numdiff.tensor import Tensor
from numdiff.utils.data import _DRAW_BLOCK, BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = [
    "BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler",
]  # fmt: skip


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
