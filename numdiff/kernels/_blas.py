"""BLAS GEMM callable from ``@njit`` code on strided 2-D views, with Numba owning the threads.

``np.dot`` inside ``@njit`` only takes contiguous operands and always overwrites its output.
The kernels need more: sub-blocks of larger arrays (a tile of an output plane, a column block of
a weight matrix) and ``beta = 1`` accumulation. :func:`gemm` calls BLAS ``sgemm``/``dgemm``
with explicit leading dimensions, so any row-major view whose rows are unit-stride works. The
library is SciPy's OpenBLAS (``scipy.linalg.cython_blas``) or, with the ``mkl`` extra, MKL's
sequential layer: numdiff.kernels._blas_library chooses (``NUMDIFF_BLAS`` forces either).

Threads: SciPy's OpenBLAS runs its own thread pool whose workers busy-wait after each call.
Measured here (2 cores): mixing a threaded BLAS call with a Numba ``prange`` region makes both
pools fight for the cores, and a 256^3 product that takes 0.25 ms alone took 8 ms. So numdiff
sets SciPy's OpenBLAS to one thread (:func:`prepare_blas`; NumPy's own BLAS is a different
library and is left alone) and parallelises by splitting GEMMs across Numba threads
(:func:`gemm_parallel`), which measured as fast as threaded OpenBLAS on 1024^3 (11 ms) and
faster on small products. A side effect worth knowing: SciPy's own linear algebra in the same
process also runs on one thread.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading

import numpy as np
from numba import prange
from numpy.typing import DTypeLike

from numdiff.kernels._blas_library import blas_library
from numdiff.kernels._gemm_body import call_gemm_build, fill_gemm_slot
from numdiff.kernels._gemm_route import gemm_route
from numdiff.kernels._self_healing_cache import njit

__all__ = ["gemm", "gemm_batch", "gemm_parallel", "prepare_blas", "hold_one_blas_thread", "blas_threading"]

# The chosen library (numdiff.kernels._blas_library) and whether gemm's build takes Numba loops
# for some products (numdiff.kernels._gemm_route): both chosen once a process, at import.
_LIBRARY = blas_library()
_ROUTE = gemm_route()

# Below this many multiply-adds a product runs on the calling thread: a parallel region costs
# more than it saves (measured crossover between 32^3 and 64^3 on this machine).
PARALLEL_MIN_MACS = 1 << 17

SPLIT_ROWS_MAX_K = 256
SPLIT_ROWS_MIN_ROWS = 64
"""A product split across threads gives each a block of c's rows when c is at least as tall as
wide, and also when its inner dimension is at most :data:`SPLIT_ROWS_MAX_K` and every block keeps
:data:`SPLIT_ROWS_MIN_ROWS` rows; otherwise a block of columns. Measured (2026-12-02, two threads,
ms, columns / rows): a short product writes its output in strided half rows when split by columns
and ran up to three times slower: 256x10x512 nt 0.067 / 0.023, nn 0.032 / 0.016, tn 0.020 /
0.012; 128x32x512 nt 0.060 / 0.030; 256x64x1024 nt 0.184 / 0.152; 512x256x784 nt 0.81 / 0.75.
With few rows columns stay better (32x256x512 nt 0.055 / 0.067, 10x256x512 0.032 / 0.051), and
past k = 256 neither wins by more than the noise (256x784x512 nn 0.78 / 0.84, nt 0.75 / 0.75)."""


@njit(cache=True, nogil=True, inline="always")
def gemm(trans_a, trans_b, alpha, a, b, beta, c):
    """``c = alpha * op(a) @ op(b) + beta * c`` on row-major 2-D views of one dtype, float32 or float64.

    ``op(x)`` is ``x.T`` when the flag is set. Every view must have unit stride along its last
    axis (checked; raises ValueError). Shapes: op(a) (M, K), op(b) (K, N), c (M, N).
    ``beta == 0`` overwrites c without reading it. Runs on the calling thread. A one-row or
    one-column c is a BLAS gemv; otherwise the process's route (numdiff.kernels._gemm_route) picks
    numdiff.kernels._gemm_loops.loop_gemm where it suits the product (loops_suit), else ``a @ b.T``
    with at most GEMV_ROWS_MAX rows is one gemv a row, and the rest one BLAS gemm
    (numdiff.kernels._gemm_body). That code is compiled once per dtype, by :func:`prepare_blas`, and
    called here by address: a kernel calling gemm compiles a call, not a copy of it.
    """
    call_gemm_build(trans_a, trans_b, alpha, a, b, beta, c)


@njit(cache=True, nogil=True, inline="always")
def gemm_block(trans_a, trans_b, alpha, a, b, beta, c, t, parts, by_rows):
    """Block ``t`` of ``parts`` of :func:`gemm`: a block of c's rows (``by_rows``) or columns."""
    m, n = c.shape
    if by_rows:
        lo, hi = t * m // parts, (t + 1) * m // parts
        a_part = a[:, lo:hi] if trans_a else a[lo:hi]
        gemm(trans_a, trans_b, alpha, a_part, b, beta, c[lo:hi])
    else:
        lo, hi = t * n // parts, (t + 1) * n // parts
        b_part = b[lo:hi] if trans_b else b[:, lo:hi]
        gemm(trans_a, trans_b, alpha, a, b_part, beta, c[:, lo:hi])


@njit(cache=True, nogil=True, inline="always")
def split_by_rows(m, n, k, parts):
    """Whether a product with an m x n output and inner dimension k, split into `parts` blocks,
    gives each a block of rows (see :data:`SPLIT_ROWS_MAX_K`)."""
    return m >= n or (k <= SPLIT_ROWS_MAX_K and m >= SPLIT_ROWS_MIN_ROWS * parts)


@njit(cache=True, nogil=True, parallel=True)
def _gemm_split(trans_a, trans_b, alpha, a, b, beta, c, parts, by_rows):
    for t in prange(parts):
        gemm_block(trans_a, trans_b, alpha, a, b, beta, c, t, parts, by_rows)


@njit(cache=True, nogil=True)
def gemm_parallel(trans_a, trans_b, alpha, a, b, beta, c, parts):
    """:func:`gemm` split into ``parts`` blocks of rows or columns (:func:`split_by_rows`), one
    per Numba thread; each block is a single-threaded BLAS call. Small products stay on one
    thread. Call from outside any parallel region with ``parts = numba.get_num_threads()``
    (read in Python: calling it inside compiled code would stop the cache from working).
    """
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    if parts == 1 or m * n * k < PARALLEL_MIN_MACS or max(m, n) < 2 * parts:
        gemm(trans_a, trans_b, alpha, a, b, beta, c)
    else:
        _gemm_split(trans_a, trans_b, alpha, a, b, beta, c, parts, split_by_rows(m, n, k, parts))


@njit(cache=True, nogil=True)
def gemm_batch(trans_a, trans_b, a, b, out):
    """``out[i] = op(a[i]) @ op(b[i])`` for each i, one :func:`gemm` after another on the calling
    thread. Shapes: a, b and out 3-D with one batch length, as :func:`gemm` per slice."""
    for i in range(out.shape[0]):
        gemm(trans_a, trans_b, 1.0, a[i], b[i], 0.0, out[i])


_GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _build_gemm(dtype: np.dtype) -> None:
    """Compile (or load) gemm's build for one dtype's arrays and call BLAS once with it.

    Built per dtype on first use, not at import (which it would slow down) and not for both dtypes
    at once: a float32 model never calls the float64 build, which cost 0.8-0.9 s CPU of its
    empty-cache start. The one call is a tiny product on the calling thread, before any worker
    thread calls BLAS: MKL sets itself up (CPU dispatch, its code path libraries) on its first
    call of each routine, and two Numba threads making that first call at once is not safe
    (measured, one thread's half of a split dgemm stayed unwritten: NaN). For SciPy's OpenBLAS the
    call is harmless.
    """
    build = fill_gemm_slot(dtype, _ROUTE.loops, _ROUTE.tiles)
    a = np.ones((1, 1), dtype)
    build(False, False, 1.0, a, a, 0.0, np.empty((1, 1), dtype))


_state: dict[str, object] = {"ready": False, "setter": None, "getter": None, "library": None}
_built: set[np.dtype] = set()
"""The dtypes whose :func:`gemm` build is made and whose BLAS routine has been called once."""


def _find_thread_control() -> None:
    import scipy

    base = os.path.dirname(os.path.abspath(scipy.__file__))
    candidates = []
    for pattern in ("scipy.libs/*openblas*", "scipy/.dylibs/*openblas*", ".dylibs/*openblas*"):
        candidates += glob.glob(os.path.join(base, "..", pattern))
        candidates += glob.glob(os.path.join(base, pattern))
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("", "64_"):
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    setter.argtypes, setter.restype = [ctypes.c_int], None
                    getter.argtypes, getter.restype = [], ctypes.c_int
                    _state.update(setter=setter, getter=getter, library=os.path.realpath(path))
                    return


_setup_lock = threading.Lock()


def prepare_blas(dtype: DTypeLike = None) -> None:
    """Make SciPy's OpenBLAS single-threaded (every call; cheap) and build :func:`gemm` for
    `dtype` (float32 or float64; None: both).

    Kernels call this, with the dtype of their arrays, before any compiled code that uses
    :func:`gemm` for that dtype: compiled code calls only the prepared dtypes' builds, and a gemm
    of another dtype raises RuntimeError naming this function. If SciPy's BLAS is not an OpenBLAS whose thread
    count can be set, the kernels still work, only slower when BLAS threads and Numba threads
    compete. The one-time set-up of each dtype runs under a lock: a second thread arriving
    meanwhile waits for it rather than using it half set up.

    >>> prepare_blas(np.float32)
    """
    if dtype in _built:
        _set_one_thread()
        return
    wanted = _GEMM_DTYPES if dtype is None else (_gemm_dtype(dtype),)
    hold_one_blas_thread()
    if all(d in _built for d in wanted):
        return
    with _setup_lock:
        for d in wanted:
            if d not in _built:
                _build_gemm(d)
                _built.add(d)


def _gemm_dtype(dtype: DTypeLike) -> np.dtype:
    try:
        found = np.dtype(dtype)
    except TypeError:
        found = None
    if found is None or found not in _GEMM_DTYPES:  # np.dtype(None) is float64, so None == float64
        raise TypeError(f"prepare_blas: gemm runs on float32 or float64 arrays, got dtype {dtype!r}")
    return found


def hold_one_blas_thread() -> None:
    """Hold SciPy's OpenBLAS at one thread (finding its thread control on the first call), and
    build nothing: for callers that change thread counts but run no product themselves."""
    if not _state["ready"]:
        with _setup_lock:
            if not _state["ready"]:
                _find_thread_control()
                _state["ready"] = True
    _set_one_thread()


def _set_one_thread() -> None:
    getter = _state["getter"]
    if getter is not None and getter() != 1:
        _state["setter"](1)


def blas_threading() -> str:
    """Describe how BLAS threads are controlled, for benchmark reports.

    >>> isinstance(blas_threading(), str)
    True
    """
    hold_one_blas_thread()
    gemm_library = "GEMM: MKL, sequential layer" if _LIBRARY.name == "mkl" else "GEMM: SciPy's BLAS"
    if _state["library"] is None:
        return (f"{gemm_library}; SciPy BLAS thread count not controllable; BLAS threads may compete "
                "with Numba's")
    return f"{gemm_library}; SciPy OpenBLAS {os.path.basename(str(_state['library']))} held at 1 thread"
