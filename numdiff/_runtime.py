"""Process-wide switches with PyTorch's names: the deterministic-algorithms flag (threads: numdiff._threads)."""

from __future__ import annotations

_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted and remembered; numdiff's CPU kernels are deterministic already (see numdiff.backends
    for its CUDA scatter kernels, which add with atomics either way)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms: mode must be a bool, got {mode!r}")
    _deterministic.update(mode=mode, warn_only=warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """The mode last given to `use_deterministic_algorithms` (False at start)."""
    return _deterministic["mode"]
