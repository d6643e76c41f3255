"""Serial and parallel builds of one kernel core, chosen per call by the amount of work.

Opening a Numba parallel region costs a few microseconds on a quiet machine and far more on a
busy one: each region waits for every worker thread, so a worker that lost its core to another
process stalls the whole call (measured here: a digits-CNN step of ~3 ms took 129 ms beside
other jobs). PyTorch runs a loop serially below a grain of 32,768 elements; numdiff does the
same, per kernel, with thresholds measured for each family (:data:`GRAIN_ELEMENTS` for
memory-bound loops, the convolution and GEMM cores use multiply-add counts).

:func:`serial_and_parallel` compiles one loop nest twice: without ``parallel=True`` (``prange``
runs as ``range``) and with it. The serial copy gets its own function name because Numba's disk
cache tells builds apart by name, not by compile flags. With an empty cache the parallel build is
compiled by a helper process while the serial one serves the calls (:mod:`numdiff.kernels._background`).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from numba import get_num_threads

from numdiff.kernels._background import defer_to_helper
from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "GRAIN_ELEMENTS",
    "KernelPair",
    "SUM_GRAIN_ELEMENTS",
    "always_parallel",
    "always_serial",
    "contiguous_run",
    "serial_and_parallel",
]

GRAIN_ELEMENTS = 1 << 15
"""Elements below which a memory-bound loop (pooling, norms, softmax, scans) runs on the calling thread."""

SUM_GRAIN_ELEMENTS = 1 << 23
"""Values below which the summing kernel of numdiff.kernels.reduce_sum (bias gradients, sums over
the batch and the spatial axes) runs on the calling thread. It reads each value once with one add,
so two threads share one memory bus: its parallel build paid at no size measured, busiest thread
over serial 1.65 at 65,536 values, 1.24 at 2,097,152, 1.04 at 8,388,608 (sums over (0, 2, 3)), 1.00
for (256, 512) and (4096, 512) over axis 0; inside the efficientnet step (the two grains alternated
in one process, 30 steps) a bias gradient of 65,536 values took 17.9 us serial against 24.9 us."""

_forced = {"parallel": False, "serial": False}


@njit(cache=True, nogil=True, inline="always")
def contiguous_run(total, parts, t):
    """``(start, stop)``: part `t`'s share of `total` work units split into `parts` contiguous runs
    whose lengths differ by at most one unit.

    A parallel kernel loops ``for t in prange(parts)`` over these runs of its flattened work
    (images x channels x rows, or an output's leading axes) and cuts each run at plane ends into
    its tiles. Handing whole items out round-robin instead leaves a thread a whole item short when
    the items do not divide among the threads: 3 images on 2 threads ran 2 against 1 (a 25%
    longer critical path than 1.5 each), and a first axis of 1 left every thread but one idle.

    >>> [contiguous_run(7, 3, t) for t in range(3)]
    [(0, 2), (2, 4), (4, 7)]
    """
    return t * total // parts, (t + 1) * total // parts


class KernelPair(NamedTuple):
    """A kernel core compiled serially and in parallel; :meth:`pick` chooses one for a call."""

    serial: Any
    parallel: Any

    def pick(self, work: int, grain: int = GRAIN_ELEMENTS, jobs: int | None = None) -> tuple[Any, int]:
        """``(kernel, parts)``: the serial build and 1 part below `grain` units of work, on one
        thread, or when the kernel's ``prange`` has `jobs` iterations, fewer than there are threads
        (one job a thread leaves the others idle at the region's barrier); else the parallel build
        and one part per Numba thread."""
        if _forced["serial"] or (work < grain and not _forced["parallel"]):
            return self.serial, 1  # before asking Numba for its thread count, which costs ~2 us a call
        parts = get_num_threads()
        if _forced["parallel"] or (parts > 1 and (jobs is None or jobs >= parts)):
            return self.parallel, parts
        return self.serial, 1


def serial_and_parallel(loop: Callable, **options: Any) -> KernelPair:
    """Compile `loop` (a plain function using ``prange``) as a serial and a parallel ``@njit``.

    The parallel build keeps `loop`'s name; the serial one is named ``<name>_serial``.
    """
    serial = types.FunctionType(loop.__code__, loop.__globals__, loop.__name__ + "_serial", loop.__defaults__)
    serial.__qualname__ = loop.__qualname__ + "_serial"
    serial.__doc__ = loop.__doc__
    pair = KernelPair(njit(cache=True, **options)(serial), njit(cache=True, parallel=True, **options)(loop))
    defer_to_helper(pair.parallel, pair.serial)
    return pair


@contextmanager
def always_parallel() -> Iterator[None]:
    """Make every :meth:`KernelPair.pick` choose the parallel build (compile_all warms up both
    builds with tiny inputs, in the foreground)."""
    previous = _forced["parallel"]
    _forced["parallel"] = True
    try:
        yield
    finally:
        _forced["parallel"] = previous


@contextmanager
def always_serial() -> Iterator[None]:
    """Make every :meth:`KernelPair.pick` choose the serial build (compile_all warms it up even
    where its warm-up call is enough work for the parallel one: the direct convolution cores)."""
    previous = _forced["serial"]
    _forced["serial"] = True
    try:
        yield
    finally:
        _forced["serial"] = previous
