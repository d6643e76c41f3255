"""numdiff's random number state: one default generator, reseeded by `manual_seed`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from numdiff.autograd.transform_state import transforms

if TYPE_CHECKING:
    from numdiff.tensor import Tensor


class Generator:
    """A source of random numbers (PCG64), as ``numdiff.Generator().manual_seed(0)``."""

    def __init__(self, device: str = "cpu") -> None:
        self._rng = np.random.default_rng()
        self._seed: int | None = None

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> int | None:
        return self._seed

    @property
    def numpy(self) -> np.random.Generator:
        return self._rng


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (and the CUDA one, where numdiff.cuda is in use)."""
    return default_generator.manual_seed(seed)


class SameDrawReplay:
    """Makes every chunk of a vmap(randomness='same', chunk_size=...) draw what the first chunk
    drew: each generator's state at its first use in the first chunk is put back at its first use
    in each later chunk, so the whole batch shares one draw, as without chunks."""

    def __init__(self) -> None:
        self.recorded: dict[Generator, dict] = {}
        self.seen: set[Generator] = set()

    def next_chunk(self) -> None:
        self.seen = set()

    def use(self, generator: Generator) -> None:
        if generator in self.seen:
            return
        self.seen.add(generator)
        state = self.recorded.get(generator)
        if state is None:
            self.recorded[generator] = generator._rng.bit_generator.state
        else:
            generator._rng.bit_generator.state = state


# The replays of the chunked vmap(randomness='same') calls in progress, outermost first.
same_draw_replays: list[SameDrawReplay] = []


def rng(generator: Generator | None) -> np.random.Generator:
    if transforms.vmap_depth and "error" in transforms.randomness:
        from numdiff.func.vmap import VmapRandomnessError

        raise VmapRandomnessError(
            "vmap: a random op ran inside vmap(randomness='error'); pass randomness='different' for "
            "an independent draw per batch entry, or 'same' for one draw shared by the whole batch"
        )
    generator = generator or default_generator
    for replay in same_draw_replays:
        replay.use(generator)
    return generator.numpy


def different_levels() -> tuple[list[int], tuple[int, ...]]:
    """The active vmap levels with randomness='different', outermost first, and their batch sizes:
    a fresh random tensor gets one batch dim for each (leading its shape) and is batched at them."""
    if not transforms.vmap_depth:
        return [], ()
    levels = [level for level, mode in enumerate(transforms.randomness, start=1) if mode == "different"]
    return levels, tuple(transforms.batch_sizes[level - 1] for level in levels)


def batched_sample(t: Tensor, levels: list[int]) -> Tensor:
    """`t` (leading dims: the batch sizes of `levels`) as a tensor batched at `levels` by vmap."""
    if not levels:
        return t
    from numdiff.func._batched import rewrap

    return rewrap(t, levels[::-1])
