"""How many threads numdiff's CPU kernels use: ``numdiff.set_num_threads`` / ``get_num_threads``.

One number governs both thread pools in the process. Numba's pool runs every parallel kernel
with that many threads; BLAS products are split into that many blocks, one single-threaded
SciPy OpenBLAS call per Numba thread (numdiff.kernels._blas explains why OpenBLAS never runs its
own pool next to Numba's), so setting the count here also pins OpenBLAS to one thread.
Kernels with little work run on the calling thread whatever the count (numdiff.kernels._parallel).

Numba's pool runs on libgomp here (its "omp" threading layer). Between parallel regions, and at
the barrier that ends each, an idle libgomp thread spins for GOMP_SPINCOUNT polls before it
sleeps: 300,000 by default, about 4 ms of a core here. Beside another busy process that spinning
is what makes a small step slow: the thread that finished first keeps its core busy, so the
scheduler does not move the other thread, which shares its core with the other process, onto
it, and the region waits out the other process's time slice. So numdiff sets GOMP_SPINCOUNT to
:data:`SPIN_COUNT` in its process's environment at import, unless GOMP_SPINCOUNT or
OMP_WAIT_POLICY is set already (then yours applies). libgomp reads it when it loads, which for
Numba's pool is its first parallel call; a libgomp that is already loaded keeps its setting, and
one that loads later (another library's OpenMP, a child process's) takes this one too.

An OpenMP runtime that loaded before numdiff was imported keeps its own spin count. PyTorch
bundles its own libgomp, loaded by ``import torch``: imported first, as a comparison notebook
does, its idle threads spin libgomp's default after each of its parallel regions, and measured
here (2 threads, a conv step, 2026-12-06) they burnt a median 3.9 ms of CPU in the 20 ms after
each step, against 0.3 ms when numdiff was imported first; the next numdiff step shares a core
with that spinning. :func:`openmp_runtimes` lists the runtimes in the process and which of them
kept their own spin (``numdiff.show_config()`` prints it); setting ``GOMP_SPINCOUNT`` before
Python starts, or importing numdiff first, gives every libgomp the short spin.

The pool is not started at import: GNU OpenMP cannot be used again in a process forked after it
started, so a program that forks workers before it runs a parallel kernel keeps working.
"""

from __future__ import annotations

import os
import sys

from numdiff._lazy import lazy_module

numba = lazy_module("numba")  # loaded by the first kernel or thread-count call, not at import
_blas = lazy_module("numdiff.kernels._blas")

__all__ = ["SPIN_COUNT", "get_num_threads", "openmp_runtimes", "set_num_threads"]

SPIN_COUNT = 10_000
"""libgomp's idle polls before a thread of Numba's pool sleeps (about 0.1 ms here). Measured
(bench_cpu.py --busy, two threads, 2026-12-02, one or two runs each, GOMP_SPINCOUNT set for both
libraries' processes), numdiff's time alone and its slowdown beside one process spinning on a
core, digits CNN / LeNet / conv 8x8 / max_pool2d:
300,000 (libgomp's default) 1.31 ms x8.8 / 2.75 ms x8.6 / 0.47 ms x7.7 / 0.41 ms x6.6;
30,000 1.17-1.20 x4.5-6.1 / 2.32-2.52 x5.8-6.5 / 0.40-0.41 x5.4-5.6 / 0.38-0.39 x4.1-4.5;
10,000 1.26-1.29 x2.2-2.9 / 2.51-2.65 x3.1-3.2 / 0.44-0.45 x2.2-3.1 / 0.40-0.44 x2.6-2.8;
3,000 1.43-1.44 x1.4-1.5 / 2.85-2.99 x1.8 / 0.44 x2.6 / 0.51-0.54 x1.6; 0 (sleep at once)
1.42 x1.0 / 4.07 x0.9 / 0.77 x0.9 / 0.57 x1.2. 10,000 keeps the time alone and cuts the
slowdown by about three; fewer polls cost small steps their wake-ups."""


_OPENMP_NAMES = ("libgomp", "libiomp", "libomp")


def _mapped_openmp_runtimes() -> list[str]:
    """The paths of the OpenMP runtimes mapped into this process, from /proc/self/maps (Linux; an
    empty list where that file cannot be read)."""
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    paths: list[str] = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and os.path.basename(fields[5]).startswith(_OPENMP_NAMES) and fields[5] not in paths:
            paths.append(fields[5])
    return paths


_kept_own_spin: list[str] = []
"""The OpenMP runtimes already loaded when numdiff set GOMP_SPINCOUNT: they kept their own spin."""

_OPENMP_AT_IMPORT = ("torch", "sklearn", "xgboost", "lightgbm", "mkl", "tensorflow")
"""Packages whose import loads an OpenMP runtime. Reading /proc/self/maps took 6 ms here (16 ms
with torch loaded), too slow for every ``import numdiff``, so it is read at import only when one
of these was imported before numdiff."""


def _shorten_spin() -> None:
    """Set GOMP_SPINCOUNT to :data:`SPIN_COUNT` unless the user chose libgomp's spin count or wait
    policy (see the module docstring), and note which runtimes had loaded before."""
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
        if any(name in sys.modules for name in _OPENMP_AT_IMPORT):
            _kept_own_spin.extend(_mapped_openmp_runtimes())


_shorten_spin()


def openmp_runtimes() -> list[tuple[str, bool]]:
    """``(path, short_spin)`` for each OpenMP runtime loaded in this process: ``short_spin`` is False
    for one that was loaded before numdiff set GOMP_SPINCOUNT (another library's, such as
    PyTorch's libgomp when torch was imported first), whose idle threads keep spinning as that
    library set them (see the module docstring). Empty where the process's mappings cannot be
    read (not Linux).

    >>> all(isinstance(path, str) for path, _ in numdiff._threads.openmp_runtimes())
    True
    """
    return [(path, path not in _kept_own_spin) for path in _mapped_openmp_runtimes()]




def set_num_threads(n: int) -> None:
    """Use `n` threads for numdiff's CPU kernels (Numba's pool and the BLAS split), as
    ``torch.set_num_threads``. At most ``numba.config.NUMBA_NUM_THREADS`` (the pool's size, fixed
    at start-up by the ``NUMBA_NUM_THREADS`` environment variable; the core count by default).
    Like Numba's setting, it applies to the calling thread.

    >>> numdiff.set_num_threads(1); numdiff.get_num_threads()
    1
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads: expected an int, got {type(n).__name__}")
    limit = numba.config.NUMBA_NUM_THREADS
    if not 1 <= n <= limit:
        raise ValueError(
            f"set_num_threads: n must be between 1 and {limit} (the thread pool's size, set by the "
            f"NUMBA_NUM_THREADS environment variable at start-up), got {n}"
        )
    numba.set_num_threads(n)
    _blas.hold_one_blas_thread()


def thread_pool_size() -> int:
    """The most threads :func:`set_num_threads` takes: Numba's pool size, fixed at start-up."""
    return numba.config.NUMBA_NUM_THREADS


def get_num_threads() -> int:
    """The number of threads numdiff's CPU kernels use (see :func:`set_num_threads`).

    >>> numdiff.get_num_threads() >= 1
    True
    """
    return numba.get_num_threads()
