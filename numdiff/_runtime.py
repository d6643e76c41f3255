"""Process-wide switches with PyTorch's names: CPU threads and the deterministic-algorithms flag."""

from __future__ import annotations

_deterministic = {"mode": False, "warn_only": False}


def set_num_threads(count: int) -> None:
    """Run numdiff's parallel CPU kernels on `count` threads (Numba's ``set_num_threads``).

    >>> numdiff.set_num_threads(1)
    """
    import numba

    limit = numba.config.NUMBA_NUM_THREADS
    if not isinstance(count, int) or not 1 <= count <= limit:
        raise ValueError(
            f"set_num_threads: expected an int in [1, {limit}] (NUMBA_NUM_THREADS), got {count!r}"
        )
    numba.set_num_threads(count)


def get_num_threads() -> int:
    """How many threads numdiff's parallel CPU kernels use."""
    import numba

    return numba.get_num_threads()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted and remembered; numdiff's CPU kernels are deterministic already (see numdiff.backends
    for its CUDA scatter kernels, which add with atomics either way)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms: mode must be a bool, got {mode!r}")
    _deterministic.update(mode=mode, warn_only=warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """The mode last given to `use_deterministic_algorithms` (False at start)."""
    return _deterministic["mode"]
