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
from numba import prange, types
from numba.core import cgutils
from numba.core.compiler_lock import global_compiler_lock
from numba.extending import intrinsic
from numpy.typing import DTypeLike

from numdiff.kernels._blas_library import GEMM_SYMBOLS, GEMV_SYMBOLS, blas_library
from numdiff.kernels._gemm_loops import loop_gemm, loops_suit
from numdiff.kernels._gemm_route import gemm_route, loops_route
from numdiff.kernels._self_healing_cache import njit

__all__ = ["gemm", "gemm_batch", "gemm_parallel", "prepare_blas", "hold_one_blas_thread", "blas_threading"]

# The chosen library's Fortran sgemm/dgemm, linked by name (numdiff.kernels._blas_library):
# (transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), every argument by address.
_LIBRARY = blas_library()
# Whether gemm runs Numba loops instead (numdiff.kernels._gemm_route), read by compiled code at run time.
_ROUTE = gemm_route()
_FORTRAN_GEMM = types.void(*(types.voidptr,) * 13)
_SGEMM = types.ExternalFunction(GEMM_SYMBOLS["s"], _FORTRAN_GEMM)
_DGEMM = types.ExternalFunction(GEMM_SYMBOLS["d"], _FORTRAN_GEMM)
# Its sgemv/dgemv: (trans, m, n, alpha, a, lda, x, incx, beta, y, incy), every argument by address.
_FORTRAN_GEMV = types.void(*(types.voidptr,) * 11)
_SGEMV = types.ExternalFunction(GEMV_SYMBOLS["s"], _FORTRAN_GEMV)
_DGEMV = types.ExternalFunction(GEMV_SYMBOLS["d"], _FORTRAN_GEMV)

_NOTRANS, _TRANS = ord("n"), ord("t")

# Below this many multiply-adds a product runs on the calling thread: a parallel region costs
# more than it saves (measured crossover between 32^3 and 64^3 on this machine).
PARALLEL_MIN_MACS = 1 << 17

GEMV_ROWS_MAX = 4
"""A product ``a @ b.T`` with at most this many rows of c runs as one gemv per row: a Linear on a
few samples. Measured (2026-12-06, one thread, SciPy's OpenBLAS with its Haswell kernels, GFLOP/s
gemv per row / one sgemm / torch.mm): 2x784x128 59 / 11 / 37, 4x784x128 60 / 24 / 50; at 8 rows
neither won (8x512x512 53 / 39 / 59, 8x4096x1024 29 / 37 / 40)."""

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


@intrinsic
def _data_ptr(typingctx, arr):
    """The data pointer of an array (view), as ``void*``."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(arr)(context, builder, args[0])
        return builder.bitcast(ary.data, cgutils.voidptr_t)

    return types.voidptr(arr), codegen


@njit(cache=True, nogil=True, inline="always")
def _leading_dim(x):
    """Row stride in elements of a row-major 2-D view (BLAS wants at least max(1, cols))."""
    ld = x.strides[0] // x.itemsize
    if ld < x.shape[1]:
        ld = x.shape[1]
    if ld < 1:
        ld = 1
    return ld


@njit(cache=True, nogil=True)
def gemm(trans_a, trans_b, alpha, a, b, beta, c):
    """``c = alpha * op(a) @ op(b) + beta * c`` on row-major 2-D views, one BLAS call.

    ``op(x)`` is ``x.T`` when the flag is set. Every view must have unit stride along its last
    axis (checked; raises ValueError). Shapes: op(a) (M, K), op(b) (K, N), c (M, N).
    ``beta == 0`` overwrites c without reading it. Runs on the calling thread. A one-row or
    one-column c is a BLAS gemv; otherwise the process's route (numdiff.kernels._gemm_route) picks
    numdiff.kernels._gemm_loops.loop_gemm where it suits the product (loops_suit), else ``a @ b.T``
    with at most :data:`GEMV_ROWS_MAX` rows is one gemv a row, and the rest one BLAS gemm.
    """
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    if (a.shape[1] if trans_a else a.shape[0]) != m or (b.shape[1] if trans_b else b.shape[0]) != k:
        raise ValueError("gemm: operand shapes do not match the output")
    if (b.shape[0] if trans_b else b.shape[1]) != n:
        raise ValueError("gemm: operand shapes do not match the output")
    if m == 0 or n == 0:
        return
    if k == 0:
        for i in range(m):
            for j in range(n):
                c[i, j] = 0 if beta == 0 else beta * c[i, j]
        return
    size = c.itemsize
    if (
        (a.shape[1] > 1 and a.strides[1] != size)
        or (b.shape[1] > 1 and b.strides[1] != size)
        or (c.shape[1] > 1 and c.strides[1] != size)
    ):
        raise ValueError("gemm: every operand needs unit stride along its last axis")
    if m == 1 or n == 1:
        _gemv(trans_a, trans_b, alpha, a, b, beta, c)
        return
    if loops_route() and loops_suit(trans_a, trans_b, m, k):
        loop_gemm(trans_a, trans_b, alpha, a, b, beta, c)
        return
    if trans_b and m <= GEMV_ROWS_MAX:
        for i in range(m):
            _gemv(trans_a, trans_b, alpha, a[:, i : i + 1] if trans_a else a[i : i + 1], b, beta, c[i : i + 1])
        return
    scalars = np.empty(2, c.dtype)
    scalars[0] = alpha
    scalars[1] = beta
    # Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: BLAS sees each row-major
    # array as its transpose, so swap the operands and keep the flags.
    flags = np.empty(2, np.uint8)
    flags[0] = _TRANS if trans_b else _NOTRANS
    flags[1] = _TRANS if trans_a else _NOTRANS
    dims = np.empty(6, np.int32)
    dims[0], dims[1], dims[2] = n, m, k
    dims[3], dims[4], dims[5] = _leading_dim(b), _leading_dim(a), _leading_dim(c)
    transb, transa = _data_ptr(flags[0:1]), _data_ptr(flags[1:2])
    n_, m_, k_ = _data_ptr(dims[0:1]), _data_ptr(dims[1:2]), _data_ptr(dims[2:3])
    ldb, lda, ldc = _data_ptr(dims[3:4]), _data_ptr(dims[4:5]), _data_ptr(dims[5:6])
    alpha_, beta_ = _data_ptr(scalars[0:1]), _data_ptr(scalars[1:2])
    b_, a_, c_ = _data_ptr(b), _data_ptr(a), _data_ptr(c)
    if size == 4:
        _SGEMM(transb, transa, n_, m_, k_, alpha_, b_, ldb, a_, lda, beta_, c_, ldc)
    else:
        _DGEMM(transb, transa, n_, m_, k_, alpha_, b_, ldb, a_, lda, beta_, c_, ldc)


@njit(cache=True, nogil=True)
def _gemv(trans_a, trans_b, alpha, a, b, beta, c):
    """:func:`gemm` for a one-row or one-column c, as one BLAS gemv: the product is a matrix times a
    vector, and sgemm would pack the whole matrix first (a Linear on one sample, 1 x 185 by 185 x 128:
    ~18 us of CPU in sgemm against ~4 in sgemv). c (1, N): the vector is op(a)'s row, the matrix
    op(b); c (M, 1): the vector is op(b)'s column, the matrix op(a). Shapes and strides as gemm checked.
    """
    m, n = c.shape
    size = c.itemsize
    # A row-major (R, C) array is BLAS's column-major (C, R) with leading dimension ld: product with
    # the vector over its R axis is gemv "N" on (C, R), over its C axis gemv "T" on (C, R).
    if m == 1:  # y = c[0, :] (N,), x = op(a)[0, :] (K,), matrix op(b) (K, N)
        matrix, over_columns = b, trans_b  # b (N, K) row-major: c[j] = sum_k b[j, k] x[k]
        x_stride = a.strides[0] // size if trans_a else 1
        y_stride = 1
        y = c
        x = a
    else:  # y = c[:, 0] (M,), x = op(b)[:, 0] (K,), matrix op(a) (M, K)
        matrix, over_columns = a, not trans_a  # a (M, K) row-major: c[i] = sum_k a[i, k] x[k]
        x_stride = 1 if trans_b else b.strides[0] // size
        y_stride = c.strides[0] // size
        y = c
        x = b
    if x_stride < 1:
        x_stride = 1
    if y_stride < 1:
        y_stride = 1
    scalars = np.empty(2, c.dtype)
    scalars[0] = alpha
    scalars[1] = beta
    flags = np.empty(1, np.uint8)
    flags[0] = _TRANS if over_columns else _NOTRANS
    dims = np.empty(5, np.int32)
    dims[0], dims[1] = matrix.shape[1], matrix.shape[0]
    dims[2], dims[3], dims[4] = _leading_dim(matrix), x_stride, y_stride
    trans_, rows_, cols_ = _data_ptr(flags[0:1]), _data_ptr(dims[0:1]), _data_ptr(dims[1:2])
    ld_, incx_, incy_ = _data_ptr(dims[2:3]), _data_ptr(dims[3:4]), _data_ptr(dims[4:5])
    alpha_, beta_ = _data_ptr(scalars[0:1]), _data_ptr(scalars[1:2])
    matrix_, x_, y_ = _data_ptr(matrix), _data_ptr(x), _data_ptr(y)
    if size == 4:
        _SGEMV(trans_, rows_, cols_, alpha_, matrix_, ld_, x_, incx_, beta_, y_, incy_)
    else:
        _DGEMV(trans_, rows_, cols_, alpha_, matrix_, ld_, x_, incx_, beta_, y_, incy_)


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


_GEMM_SCALARS = {np.dtype(np.float32): types.float32, np.dtype(np.float64): types.float64}


def _fix_gemm_build(dtype: np.dtype) -> None:
    """Compile (or load) :func:`gemm` for one dtype's arrays, and allow no other argument types.

    Operands are any-layout views, op(a) and op(b) read-only, so every caller's arrays convert to
    these. Left to itself Numba compiles gemm once per caller's layouts and constant flags (a
    call with literal True/False is specialised): five float32 builds in a digits CNN's cold
    start, 0.3-0.5 s each. Built per dtype on first use, not at import (which it would slow
    down) and not for both dtypes at once: a float32 model never calls the float64 build, which
    cost 0.8-0.9 s CPU of its empty-cache start. Compilation is opened only under Numba's
    compiler lock, so no caller compiling meanwhile on another thread can add a specialised build.
    """
    scalar = _GEMM_SCALARS[dtype]
    operand = types.Array(scalar, 2, "A", readonly=True)
    out = types.Array(scalar, 2, "A")
    with global_compiler_lock:
        gemm.disable_compile(False)
        try:
            gemm.compile((types.boolean, types.boolean, types.float64, operand, operand, types.float64, out))
        finally:
            gemm.disable_compile()


def _touch_blas(dtype: np.dtype) -> None:
    """One tiny product of this dtype on the calling thread, before any worker thread calls BLAS.

    MKL sets itself up (CPU dispatch, its code path libraries) on its first call of each routine,
    and two Numba threads making that first call at once is not safe: measured, one thread's half
    of a split dgemm stayed unwritten (NaN). For SciPy's OpenBLAS the warm-up is harmless.
    """
    a = np.ones((1, 1), dtype)
    gemm(False, False, 1.0, a, a, 0.0, np.empty((1, 1), dtype))


_state: dict[str, object] = {"ready": False, "setter": None, "getter": None, "library": None}
_built: set[np.dtype] = set()
"""The dtypes whose :func:`gemm` build is fixed and whose BLAS routine has been called once."""


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
    """Make SciPy's OpenBLAS single-threaded (every call; cheap) and fix :func:`gemm`'s build
    for `dtype` (float32 or float64; None: both).

    Kernels call this, with the dtype of their arrays, before any compiled code that uses
    :func:`gemm` for that dtype: only the prepared dtypes' builds exist, so a kernel compiled for
    another dtype fails to type its gemm call. If SciPy's BLAS is not an OpenBLAS whose thread
    count can be set, the kernels still work, only slower when BLAS threads and Numba threads
    compete. The one-time set-up of each dtype runs under a lock: a second thread arriving
    meanwhile waits for it rather than using it half set up.

    >>> prepare_blas(np.float32)
    """
    if dtype in _built:
        _set_one_thread()
        return
    wanted = tuple(_GEMM_SCALARS) if dtype is None else (_gemm_dtype(dtype),)
    hold_one_blas_thread()
    if all(d in _built for d in wanted):
        return
    with _setup_lock:
        for d in wanted:
            if d not in _built:
                _fix_gemm_build(d)
                _touch_blas(d)
                _built.add(d)


def _gemm_dtype(dtype: DTypeLike) -> np.dtype:
    try:
        found = np.dtype(dtype)
    except TypeError:
        found = None
    if found not in _GEMM_SCALARS:
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
