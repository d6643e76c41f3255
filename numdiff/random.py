"""numdiff.random, as torch.random: the default generator's seed and state, and ``fork_rng``,
a block whose random draws leave the state as it found it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from numdiff import _random
from numdiff._random import Generator, manual_seed
from numdiff._torch_misc import get_rng_state, initial_seed, seed, set_rng_state

default_generator = _random.default_generator


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Within the block, draw from the default generator freely; afterwards its state is restored."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


def __dir__() -> list[str]:
    return sorted(__all__)
