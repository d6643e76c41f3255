"""numdiff's random number state: one default generator, reseeded by `manual_seed`.

The default generator is process-wide, as in PyTorch (``manual_seed`` in one thread seeds the
draws of all). Each draw is one call of NumPy's Generator, which holds the bit generator's lock
for the call, so threads drawing at once get disjoint parts of one stream; reseeding and
restoring a state swap the generator under `Generator._lock`. Every draw passes through `rng`,
which asks this thread's innermost interpreter first (vmap's randomness modes, compile's trace).
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from numdiff import _device
from numdiff.autograd.transform_state import anywhere, transforms, vmap_active

if TYPE_CHECKING:
    from numdiff.tensor import Tensor


class Generator:
    """A source of random numbers (PCG64), as ``numdiff.Generator().manual_seed(0)``."""

    def __init__(self, device: str = "cpu") -> None:
        self._device = device
        # The NumPy generator is made at the first draw: numpy.random's import is a tenth of
        # `import numdiff`'s, and a script that never draws should not pay it.
        self._numpy_rng: np.random.Generator | None = None
        self._seed: int | None = None
        self._lock = threading.RLock()  # reentrant: __getstate__ holds it while _rng may make the generator

    @property
    def _rng(self) -> np.random.Generator:
        rng = self._numpy_rng
        if rng is None:
            with self._lock:
                if self._numpy_rng is None:
                    self._numpy_rng = np.random.default_rng()
                rng = self._numpy_rng
        return rng

    @_rng.setter
    def _rng(self, rng: np.random.Generator) -> None:
        self._numpy_rng = rng

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if not -(1 << 63) <= seed < 1 << 64:
            raise ValueError(f"manual_seed: the seed {seed} is outside [-2**63, 2**64 - 1], the range PyTorch takes")
        seed %= 1 << 64  # a negative seed wraps, as in PyTorch: -1 is 2**64 - 1
        rng = np.random.default_rng(seed)
        with self._lock:
            self._seed = seed
            self._numpy_rng = rng
        return self

    def initial_seed(self) -> int | None:
        return self._seed

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        value = int(np.random.SeedSequence().entropy % (2**63))
        self.manual_seed(value)
        return value

    @property
    def device(self) -> _device.device:
        return _device.to_device(self._device)

    def get_state(self) -> Tensor:
        """This generator's state as a uint8 tensor, for `set_state` (torch.Generator's pair)."""
        return _state_tensors()._state_tensor(self)

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state from `get_state` (of this generator or another); returns self."""
        _state_tensors()._restore_state(self, new_state)
        return self

    def __getstate__(self) -> dict:
        """Pickled (and deep-copied) without its lock, which is process-local."""
        with self._lock:
            return {"_rng": self._rng, "_seed": self._seed, "_device": self._device}

    def __setstate__(self, state: dict) -> None:
        self._lock = threading.RLock()
        self._rng, self._seed = state["_rng"], state["_seed"]
        self._device = state.get("_device", "cpu")

    @property
    def numpy(self) -> np.random.Generator:
        return self._rng


def _state_tensors() -> ModuleType:
    # The state is a uint8 Tensor, and Tensor's module imports this one: import at the first use.
    from numdiff import _torch_misc

    return _torch_misc


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


def rng(generator: Generator | None) -> np.random.Generator:
    """The NumPy generator a random op draws from: `generator`'s, or the default one's. The
    calling thread's interpreters may refuse the draw first (vmap(randomness='error'), compile)."""
    if anywhere.levels:
        top = transforms.interpreter
        if top is not None:
            top.draw(generator)
    generator = generator or default_generator
    # The replays of this thread's chunked vmap(randomness='same') calls, outermost first.
    if anywhere.levels:
        for replay in transforms.same_draw_replays:
            replay.use(generator)
    return generator.numpy


def different_levels() -> tuple[list[int], tuple[int, ...]]:
    """The active vmap levels with randomness='different', outermost first, and their batch sizes:
    a fresh random tensor gets one batch dim for each (leading its shape) and is batched at them."""
    if not vmap_active():
        return [], ()
    levels = [level for level, mode in enumerate(transforms.randomness, start=1) if mode == "different"]
    return levels, tuple(transforms.batch_sizes[level - 1] for level in levels)


def batched_sample(t: Tensor, levels: list[int]) -> Tensor:
    """`t` (leading dims: the batch sizes of `levels`) as a tensor batched at `levels` by vmap."""
    if not levels:
        return t
    from numdiff._batched import rewrap

    return rewrap(t, levels[::-1])
