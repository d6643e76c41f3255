"""What a traced function changes besides its outputs: in-place updates and random draws.

Functionalization. An in-place op while tracing (BatchNorm's ``running_mean.mul_(0.9).add_(...)``,
``num_batches_tracked.add_(1)``, a counter a function keeps) runs eagerly; the tensor it computed
becomes the target's value for the rest of the trace. When the target is an argument or a tensor
from outside (a buffer), the last value written becomes an extra output of the graph, which every
compiled call writes back into the target's storage (`Effects.write_back`), bumping its version.

Random draws (numdiff's rand, randn, randint, randperm, multinomial: numdiff._host_functions'
`random_function`) are steps of the graph that draw afresh on every call, from the same
generator and in the same order as eager mode, so for the same seed a compiled dropout draws
eager's mask.

The trace itself ran the function once for real; its writes and draws are undone afterwards
(`Effects.undo`), because the compiled program (or, on a fallback, the eager function) then
runs the call again.

What cannot be replayed makes the tracer raise UnsupportedInCompileError (the function then runs
eagerly, with a warning saying why): an in-place op on a tensor that views another tensor (or is viewed), a
write into an argument or outside tensor that the compiled backward reads, a draw from a generator outside numdiff's random
functions.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from numdiff._random import Generator, default_generator
from numdiff.tensor import Tensor


def root(array: Any) -> Any:
    """The array that owns `array`'s memory (NumPy's chain of ``.base``)."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


class Effects:
    """The writes and draws of one trace, and how to undo them."""

    def __init__(self) -> None:
        self.writes: dict = {}  # (kind, slot) of an argument or captured tensor -> that tensor
        self.written_roots: set = set()  # ids of the memory owners of every written tensor
        self.saved_data: dict = {}  # id of a written outside array -> (array, copy of its old values)
        self.generator_states: dict = {}  # Generator -> (its NumPy generator, state) before the first draw
        self.default_source = default_generator._rng  # manual_seed inside the function replaces it
        # Draws from these are invisible to the trace (np.random.rand() would become a constant).
        self.global_random = (random.getstate(), np.random.get_state(), _global_random_state())

    def drew_from_global_generators(self) -> bool:
        return _global_random_state() != self.global_random[2]

    def reseeded(self) -> bool:
        """Whether the function called numdiff.manual_seed (or a generator's) while tracing."""
        return default_generator._rng is not self.default_source or any(
            generator._rng is not source for generator, (source, _) in self.generator_states.items()
        )

    def note_generators(self, args: tuple, kwargs: dict) -> None:
        """Remember, before a draw, the state of each generator it may use."""
        for generator in (default_generator, *args, *kwargs.values()):
            if isinstance(generator, Generator) and generator not in self.generator_states:
                self.generator_states[generator] = (generator._rng, generator._rng.bit_generator.state)

    def note_write(self, kind: str, slot: int, target: Tensor) -> None:
        """`target` (an argument or outside tensor) is written: written back after each call."""
        self.writes[(kind, slot)] = target
        self.note_undo(target)

    def note_undo(self, target: Tensor) -> None:
        """Keep `target`'s values from before its first write, for `undo`."""
        data = target._data
        if id(data) not in self.saved_data:
            self.saved_data[id(data)] = (data, data.copy())

    def undo(self) -> None:
        """Put back what the trace's own run wrote and drew."""
        for data, old in self.saved_data.values():
            data[...] = old
        for generator, (source, state) in self.generator_states.items():
            generator._rng = source
            source.bit_generator.state = state
        default_generator._rng = self.default_source
        random.setstate(self.global_random[0])
        np.random.set_state(self.global_random[1])


def _global_random_state() -> tuple:
    """Python's and NumPy's global generator states, comparable with ==."""
    _, keys, position, has_gauss, gauss = np.random.get_state()
    return random.getstate(), (keys.tobytes(), position, has_gauss, gauss)


def unreplayable_inplace(target: Tensor, op: str, alive: list) -> str | None:
    """Why the graph cannot replay an in-place op as "the target now holds this new value", or None."""
    data = target._data
    owner = root(data)
    if target._base is not None or any(a is not data and root(a) is owner for a in alive):
        return f"{op}, an in-place update of a tensor that shares memory with another (a view),"
    return None


def write_back(writes: list, arrays: list) -> None:
    """Store each written value in its target after a compiled call, as the eager ops did."""
    for target, array in zip(writes, arrays):
        target._data[...] = array
        target._version_counter[0] += 1
