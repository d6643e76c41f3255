"""numdiff.accelerator: PyTorch's device-neutral accelerator API, backed by numdiff.cuda.

CUDA (through numba-cuda) is numdiff's only accelerator, so these answer for it::

    device = numdiff.accelerator.current_accelerator() if numdiff.accelerator.is_available() else "cpu"
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from numdiff import cuda
from numdiff._device import device


def is_available() -> bool:
    """True when a CUDA device (or Numba's CUDA simulator) can be used.

    >>> numdiff.accelerator.is_available()
    False
    """
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """``device(type='cuda')`` when numba-cuda is installed, else None, as PyTorch answers when
    there is no accelerator; with `check_available`, None also when no GPU is usable now."""
    try:
        import numba.cuda  # noqa: F401 - only whether CUDA support is built in
    except ImportError:
        return None
    if check_available and not is_available():
        return None
    return device("cuda")


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return cuda.device_count()


def current_device_index() -> int:
    """The index of the device numba-cuda launches kernels on now."""
    return cuda.current_device()


def set_device_index(index: int | str | device) -> None:
    """Make device `index` the one numba-cuda launches kernels on (tensors still say where they live:
    ``"cuda"`` without an index means cuda:0 in numdiff)."""
    if isinstance(index, int):
        target = device("cuda", index)
    else:
        target = device(index)
        if target.type != "cuda":
            raise ValueError(f"set_device_index: expected a CUDA device index, got {index!r}")
    cuda._check_index(target)
    from numba import cuda as numba_cuda

    numba_cuda.select_device(target.index)


@contextmanager
def device_index(index: int | None) -> Iterator[None]:
    """Run a block with device `index` current, restoring the previous one after (None: no change)."""
    if index is None:
        yield
        return
    previous = current_device_index()
    set_device_index(index)
    try:
        yield
    finally:
        set_device_index(previous)


def synchronize(target: Any = None) -> None:
    """Wait for every kernel launched on `target` (default: the current device) to finish."""
    cuda.synchronize(target)


# PyTorch's older spellings of the same functions.
current_device_idx = current_device_index
set_device_idx = set_device_index

__all__ = [
    "current_accelerator", "current_device_idx", "current_device_index", "device_count", "device_index",
    "is_available", "set_device_idx", "set_device_index", "synchronize",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
