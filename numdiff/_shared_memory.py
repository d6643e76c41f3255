"""Shared-memory storage for CPU tensors (``Tensor.share_memory_``), used by numdiff.multiprocessing
to hand tensors to other processes by segment name instead of by value."""

from __future__ import annotations

import atexit

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.backend import CPU, backend_for
from numdiff.tensor import Tensor

shared_memory = lazy_module("multiprocessing.shared_memory")

# Segments this process created or opened, by name; they must stay open while arrays use them.
segments: dict[str, shared_memory.SharedMemory] = {}
_created: set[str] = set()


def segment_of(array: np.ndarray) -> tuple[str, int] | None:
    """(segment name, byte offset) of the segment holding `array`'s data, or None."""
    address = array.__array_interface__["data"][0]
    for name, segment in segments.items():
        start = np.frombuffer(segment.buf, np.uint8).ctypes.data
        if start <= address < start + segment.size:
            return name, address - start
    return None


def in_shared_memory(t: Tensor) -> bool:
    """Whether `t`'s storage lives in a shared-memory segment."""
    return backend_for(t._data) is CPU and segment_of(t._data) is not None


def move_to_shared_memory(t: Tensor) -> None:
    """Copy `t`'s CPU storage into a new shared-memory segment and make it `t`'s storage."""
    if backend_for(t._data) is not CPU or in_shared_memory(t):
        return
    source = t._data
    segment = shared_memory.SharedMemory(create=True, size=max(source.nbytes, 1))
    segments[segment.name] = segment
    _created.add(segment.name)
    shared = np.ndarray(source.shape, source.dtype, buffer=segment.buf)
    shared[...] = source
    t._data = shared


def _release() -> None:
    for name, segment in list(segments.items()):
        try:
            segment.close()
        except BufferError:  # an array still views it: the OS unmaps it at exit
            pass
        if name in _created:
            segment.unlink()
    segments.clear()

atexit.register(_release)
