"""Which LAPACK runs a factorization: SciPy's for large or single matrices, NumPy's for small batches,
numdiff's own batched kernels (numdiff.kernels.linalg_small) for the Cholesky, LU, eigh and svd of small matrices.

NumPy's linalg loops over a batch in C, which wins for many small matrices; SciPy's LAPACK is the
one numdiff holds at one thread (numdiff.kernels._blas.prepare_blas), next to its own thread pool, and
the faster build for one large matrix (here 512x512 Cholesky: 22 ms against NumPy's 84 at one thread;
with two OpenBLAS pools spinning on a loaded machine, NumPy's took 1.3 s).

SciPy's LAPACK stays at one thread during a call too. OpenBLAS's threaded LAPACK gained little on two
threads at order 512 on a quiet machine (getrf 4.3 -> 4.2 ms, gesdd about 10%), and lost badly on a
busy one, where its threads busy-wait at every BLAS-2 step of a reduction for a thread that lost its
core (2026-12-06, load 4.5 on 2 cores, medians of 5, one thread against two: gesdd 382 against 1351 ms,
syevd 124 against 417, getri 24 against 120). Parallelism comes from numdiff's threads instead: LU
(solve, slogdet), Cholesky and triangular solves of order BLOCKED_MIN_ORDER and more, at more than one
thread, go to numdiff.kernels.linalg_blocked (LAPACK's blocked algorithms with the trailing updates
split over Numba's threads; inv as the LU's solve on the identity), eigh and a square svd of order
SPLIT_MIN_ORDER and more to numdiff.kernels.linalg_split (syevd's and gesdd's steps, their back-transforms
as GEMMs split over numdiff's threads), and the backward formulas' products to numdiff's GEMM.

Two ways the same factorization is not computed twice:

- :func:`one_factorization`: the public functions apply one op per output (eigh's values and
  vectors, svd's U, S and Vh, slogdet's sign and log|det|), each over the same LAPACK call;
  inside the block the first op's call is remembered for the others (keyed by the input array
  object, which the block keeps alive and nobody can change in between).
- :func:`solve` and :func:`slogdet` return the LU factors (of a single matrix, or of a batch of
  small ones), which the ops keep for their backward: A^-T G is then two triangular solves
  (``getrs``, or the kernel's substitution), not a second LU.

The kernels replace LAPACK up to the orders measured where they win (256 matrices, float64, one
thread): LU up to 16 (solve of 8x8: 0.12 ms against NumPy's 0.24), eigh up to 10 (8x8: 0.88 ms
against 1.66; at 16 LAPACK's tridiagonal QR wins), svd up to 16 (8x8: 1.1 ms against NumPy's
gesdd loop 3-11 ms on a loaded machine; 16x16: 24 against 43 ms).
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module

scipy_linalg = lazy_module("scipy.linalg")
_blas = lazy_module("numdiff.kernels._blas")
_numba = lazy_module("numba")
_small = lazy_module("numdiff.kernels.linalg_small")
_blocked = lazy_module("numdiff.kernels.linalg_blocked")
_blocked_grads = lazy_module("numdiff.kernels.linalg_blocked_grads")
_split = lazy_module("numdiff.kernels.linalg_split")

_SMALL = 32  # matrices of at most this order, in a batch, go through NumPy's batched loop

_LU_KERNEL_MAX_ORDER = 16  # Cholesky, and LU for solve and slogdet, of matrices up to this order: numdiff's kernels
_EIGH_KERNEL_MAX_ORDER = 10  # eigh of matrices up to this order: the batched Jacobi kernel
_SVD_KERNEL_MAX_ORDER = 16  # svd of matrices of at most this many rows and columns: one-sided Jacobi
CHOLESKY_GRAD_BLOCKED_MIN_ORDER = 32  # the Cholesky backward from this order: numdiff.kernels.linalg_blocked_grads
BLOCKED_MIN_ORDER = 256  # LU and Cholesky from this order, at more than one thread: numdiff.kernels.linalg_blocked
SPLIT_MIN_ORDER = 256  # eigh and a square svd from this order: numdiff.kernels.linalg_split

_memo = threading.local()


def lapack_description() -> str:
    """Which LAPACK numdiff.linalg calls, for :func:`numdiff.show_config`."""
    return (f"SciPy's (OpenBLAS, one thread) for single matrices and orders above {_SMALL}; NumPy's batched "
            f"loop for batches of order <= {_SMALL}; numdiff's batched kernels for LU (solve, slogdet) up to "
            f"order {_LU_KERNEL_MAX_ORDER}, eigh up to order {_EIGH_KERNEL_MAX_ORDER} and svd up to {_SVD_KERNEL_MAX_ORDER}; "
            f"numdiff's blocked LU and Cholesky, split over its threads, from order {BLOCKED_MIN_ORDER} at more "
            f"than one thread; eigh and a square svd from order {SPLIT_MIN_ORDER} by LAPACK's steps with their "
            "back-transforms split over its threads")


@contextmanager
def one_factorization() -> Iterator[None]:
    """Within the block, each factorization of one array object runs LAPACK once (see the module doc)."""
    previous = getattr(_memo, "results", None)
    _memo.results = {}
    try:
        yield
    finally:
        _memo.results = previous


def _remembered(key: tuple, a: np.ndarray, compute: Callable[[], Any]) -> Any:
    results = getattr(_memo, "results", None)
    if results is None:
        return compute()
    hit = results.get(key)
    if hit is not None and hit[0] is a:
        return hit[1]
    value = compute()
    results[key] = (a, value)  # holding `a` keeps its id from being reused inside the block
    return value


def per_matrix(a: np.ndarray, scipy_fn: Callable[[np.ndarray], Any], numpy_fn: Callable[[np.ndarray], Any]) -> Any:
    """``numpy_fn(a)`` for a batch of small matrices, else ``scipy_fn`` on each matrix, restacked."""
    if not a.size or (a.ndim > 2 and a.shape[-1] <= _SMALL and a.shape[-2] <= _SMALL):
        return numpy_fn(a)  # NumPy's batched LAPACK also gives empty batches' and 0 x 0 matrices' results
    _blas.prepare_blas()
    if a.ndim == 2:  # one matrix: its results as they come (restacking copied each, ~2 MB at order 512)
        return scipy_fn(a)
    flat = a.reshape((math.prod(a.shape[:-2]),) + a.shape[-2:])
    results = [scipy_fn(m) for m in flat]
    batch = a.shape[:-2]
    if isinstance(results[0], tuple):
        return tuple(np.stack([r[i] for r in results]).reshape(batch + results[0][i].shape)
                     for i in range(len(results[0])))
    return np.stack(results).reshape(batch + results[0].shape)


def blocked_threads(a: np.ndarray) -> int:
    """numdiff's thread count when `a`'s matrices go to the blocked parallel factorizations
    (numdiff.kernels.linalg_blocked: float32/64, order >= BLOCKED_MIN_ORDER, more than one thread), else 0."""
    if a.shape[-1] < BLOCKED_MIN_ORDER or a.dtype not in (np.float32, np.float64):
        return 0
    threads = _numba.get_num_threads()
    return threads if threads > 1 else 0


def _cholesky_blocked(m: np.ndarray, threads: int) -> np.ndarray:
    low, info = _blocked.cholesky_blocked(m, threads=threads)
    if info:
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    return low


def cholesky(a: np.ndarray) -> np.ndarray:
    threads = blocked_threads(a)
    if threads and a.shape[-2] == a.shape[-1]:
        flat = [_cholesky_blocked(m, threads) for m in a.reshape((-1,) + a.shape[-2:])]
        return np.stack(flat).reshape(a.shape) if a.ndim > 2 else flat[0]
    if _kernel_order(a, _LU_KERNEL_MAX_ORDER):
        n = a.shape[-1]
        out = np.empty(a.shape, dtype=a.dtype)
        if _small.cholesky_batched(np.ascontiguousarray(a).reshape(-1, n, n), out.reshape(-1, n, n)).any():
            raise np.linalg.LinAlgError("Matrix is not positive definite")
        return out
    return per_matrix(a, lambda m: scipy_linalg.cholesky(m, lower=True, check_finite=False), np.linalg.cholesky)


def failing_minor(m: np.ndarray) -> int:
    """The order of the first leading minor of the matrix `m` (its lower triangle) that is not positive
    definite, 0 if none: LAPACK potrf's info, from one factorization (not one per minor)."""
    potrf = scipy_linalg.get_lapack_funcs("potrf", (m,))
    _blas.hold_one_blas_thread()
    return int(potrf(m, lower=1, clean=0)[1])


LUFactors = tuple
"""(lu, piv, of_transpose) of one matrix as scipy.linalg.lu_factor returns (lu, piv), of A^T when
`of_transpose` (see :func:`_lu_factor`); or (lu, piv) of a (batch, n, n) stack as
numdiff.kernels.linalg_small.lu_factor_batched gives them (3-D lu)."""


def _kernel_order(a: np.ndarray, largest: int) -> bool:
    """Whether `a`'s matrices go to a batched kernel: nonempty, float32/64, order <= `largest`."""
    return 0 < a.shape[-1] <= largest and a.size > 0 and a.dtype in (np.float32, np.float64)


def cholesky_backward(low: np.ndarray, grad: np.ndarray) -> np.ndarray | None:
    """gA of L = cholesky(A) by a kernel: the batched one for small orders, the blocked one (the
    triangles' zeros skipped: ~ 5 n^3 / 3 flops against the composed formula's 4 n^3, split over
    numdiff's threads) per matrix from CHOLESKY_GRAD_BLOCKED_MIN_ORDER; else None (the caller composes it)."""
    if grad.dtype != low.dtype or low.dtype not in (np.float32, np.float64) or not low.size:
        return None
    n = low.shape[-1]
    if n >= CHOLESKY_GRAD_BLOCKED_MIN_ORDER:
        threads = _numba.get_num_threads()
        grads = np.broadcast_to(grad, low.shape).reshape(-1, n, n)
        flat = [_blocked_grads.cholesky_backward_blocked(m, g, threads) for m, g in zip(low.reshape(-1, n, n), grads)]
        return np.stack(flat).reshape(low.shape) if low.ndim > 2 else flat[0]
    if not _kernel_order(low, _LU_KERNEL_MAX_ORDER):
        return None
    out = np.empty(low.shape, dtype=low.dtype)
    _small.cholesky_backward_batched(np.ascontiguousarray(low).reshape(-1, n, n),
                                     np.ascontiguousarray(grad).reshape(-1, n, n), out.reshape(-1, n, n))
    return out


def _lu_batched(a: np.ndarray) -> tuple[LUFactors, np.ndarray]:
    """((lu, piv), info) of each matrix of `a` by the batched kernel (lu is (batch, n, n))."""
    n = a.shape[-1]
    lu = np.array(a.reshape(-1, n, n), order="C")  # a copy: the kernel factors in place
    piv = np.empty(lu.shape[:2], dtype=np.int32)
    return (lu, piv), _small.lu_factor_batched(lu, piv)


def solve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, LUFactors | None]:
    """(A^-1 B, A's LU factors when A is a single matrix or a small batch of B's batch shape, else None)."""
    if _kernel_order(a, _LU_KERNEL_MAX_ORDER) and a.shape[:-2] == b.shape[:-2] and a.dtype == b.dtype:
        factors, info = _lu_batched(a)
        if info.any():
            raise np.linalg.LinAlgError("Singular matrix")
        return solve_factored(factors, b, transposed=False), factors
    if a.ndim == 2 and b.ndim == 2:
        factors = _lu_factor(a)
        if not np.all(np.diagonal(factors[0])):
            raise np.linalg.LinAlgError("Singular matrix")
        return solve_factored(factors, b, transposed=False), factors
    return np.linalg.solve(a, b), None


def _lu_factor(a: np.ndarray) -> LUFactors:
    """LU factors of one square matrix. LAPACK factors a column-major copy: a row-major A's memory is
    A^T column-major, so A^T is factored from a plain copy (order 512: 0.09 ms) instead of A from a
    transposing one (0.9 ms, a sixth of solve's time at two threads); solve_factored swaps the
    solves' transposition to match (A = U^T L^T P^T), and A^T's factors give the same det."""
    of_transpose = bool(a.flags.c_contiguous and not a.flags.f_contiguous)
    m = a.T if of_transpose else a
    threads = blocked_threads(m)
    if threads:
        lu, piv, _ = _blocked.lu_factor_blocked(m, threads=threads)  # a zero pivot stays in U, as below
        return lu, piv, of_transpose
    _blas.hold_one_blas_thread()
    with warnings.catch_warnings():  # an exactly singular A: its zero pivot, as torch
        warnings.simplefilter("ignore", scipy_linalg.LinAlgWarning)
        return (*scipy_linalg.lu_factor(m, check_finite=False), of_transpose)


def solve_factored(factors: LUFactors, b: np.ndarray, transposed: bool) -> np.ndarray:
    """A^-1 B (or A^-T B) from A's LU factors: two triangular solves."""
    lu = factors[0]
    if lu.ndim == 2 and factors[2]:  # factors of A^T: A^-1 B = A^T^-T B
        transposed = not transposed
    if lu.ndim == 3:
        # B is a matrix per factored matrix, or one matrix for all of them (an identity for A^-T).
        shared = b.ndim == 2
        stack = np.broadcast_to(b, lu.shape[:1] + b.shape) if shared else b.reshape(lu.shape[:1] + b.shape[-2:])
        x = np.array(stack, dtype=lu.dtype, order="C")
        _small.lu_substitute_batched(lu, factors[1], x, transposed)
        return x if shared and len(lu) > 1 else x.reshape(b.shape)
    threads = blocked_threads(lu)
    if threads and b.ndim == 2 and b.dtype == lu.dtype:
        return _blocked.lu_solve_blocked(lu, factors[1], b, transposed, threads)
    _blas.hold_one_blas_thread()
    return scipy_linalg.lu_solve(factors[:2], b, trans=1 if transposed else 0, check_finite=False)


def inv(a: np.ndarray) -> np.ndarray:
    threads = blocked_threads(a)
    if threads and a.shape[-2] == a.shape[-1]:
        flat = [_inverse_blocked(m, threads) for m in a.reshape((-1,) + a.shape[-2:])]
        return np.stack(flat).reshape(a.shape)
    return per_matrix(a, lambda m: scipy_linalg.inv(m, check_finite=False), np.linalg.inv)


def _inverse_blocked(m: np.ndarray, threads: int) -> np.ndarray:
    """A^-1 by the blocked LU and its solve on the identity, both split over `threads` (getri instead
    would run on one OpenBLAS thread)."""
    of_transpose = bool(m.flags.c_contiguous and not m.flags.f_contiguous)  # as _lu_factor
    lu, piv, info = _blocked.lu_factor_blocked(m.T if of_transpose else m, threads=threads)
    if info:
        raise np.linalg.LinAlgError("Singular matrix")
    return _blocked.lu_solve_blocked(lu, piv, np.eye(len(m), dtype=m.dtype), of_transpose, threads)


def eigh(a: np.ndarray, upper: bool) -> tuple[np.ndarray, np.ndarray]:
    if _kernel_order(a, _EIGH_KERNEL_MAX_ORDER):
        return _remembered(("eigh", upper), a, lambda: _eigh_kernel(a, upper))
    return _remembered(("eigh", upper), a, lambda: per_matrix(
        a, lambda m: _eigh_split(m, upper) or scipy_linalg.eigh(m, lower=not upper, check_finite=False, driver="evd"),
        lambda x: np.linalg.eigh(x, UPLO="U" if upper else "L")))


def _split_shape(m: np.ndarray) -> bool:
    """Whether a matrix may go to numdiff.kernels.linalg_split: square float32/64 of order SPLIT_MIN_ORDER or more."""
    return m.shape[-1] >= SPLIT_MIN_ORDER and m.shape[0] == m.shape[1] and m.dtype in (np.float32, np.float64)


def _split_route(m: np.ndarray, largest: float) -> bool:
    """Whether `m` (of :func:`_split_shape`) goes to numdiff.kernels.linalg_split: `largest`, the largest
    |entry| of the part the driver reads, where syevd and gesdd do not rescale first (NaN and inf fail
    this and stay on the driver, which reports them as it does)."""
    small = np.sqrt(np.finfo(m.dtype).tiny) / np.finfo(m.dtype).eps
    return bool(small <= largest <= 1 / small)


def _eigh_split(m: np.ndarray, upper: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """syevd's steps, the back-transform split over numdiff's threads; None where syevd should run
    (_split_route, or stedc failed)."""
    if not _split_shape(m) or not _split_route(m, _split.triangle_largest(m, upper)):
        return None
    w, v, info = _split.eigh_split(m, upper, max(1, _numba.get_num_threads()))
    return None if info else (w, v)


def _svd_split(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """gesdd's steps for a square matrix, both back-transforms split over numdiff's threads; None where
    gesdd should run (_split_route, or bdsdc failed)."""
    if not _split_shape(m) or not _split_route(m, np.abs(m).max()):
        return None
    u, s, vh, info = _split.svd_split(m, max(1, _numba.get_num_threads()))
    return None if info else (u, s, vh)


def _eigh_kernel(a: np.ndarray, upper: bool) -> tuple[np.ndarray, np.ndarray]:
    n = a.shape[-1]
    stack = np.ascontiguousarray(a).reshape(-1, n, n)
    values = np.empty(stack.shape[:2], dtype=a.dtype)
    vectors = np.empty_like(stack)
    _small.eigh_jacobi_batched(stack, upper, values, vectors)
    return values.reshape(a.shape[:-1]), vectors.reshape(a.shape)


def _svd_kernel(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The thin SVD by the one-sided Jacobi kernel; a wide A through its transpose (A^T = V S U^T).
    Matrices with a tiny singular value (whose U the kernel cannot give accurately) go to LAPACK."""
    m, n = a.shape[-2:]
    wide = m < n
    stack = np.ascontiguousarray(np.swapaxes(a, -1, -2) if wide else a).reshape((-1,) + ((n, m) if wide else (m, n)))
    k = min(m, n)
    u = np.empty_like(stack)
    values = np.empty((len(stack), k), dtype=a.dtype)
    vh = np.empty((len(stack), k, k), dtype=a.dtype)
    redo = _small.svd_jacobi_batched(stack, u, values, vh)
    if redo.any():
        u[redo], values[redo], vh[redo] = np.linalg.svd(stack[redo], full_matrices=False)
    if wide:
        u, vh = np.swapaxes(vh, -1, -2), np.swapaxes(u, -1, -2)
    batch = a.shape[:-2]
    return u.reshape(batch + (m, k)), values.reshape(batch + (k,)), vh.reshape(batch + (k, n))


def svd(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if _kernel_order(a, _SVD_KERNEL_MAX_ORDER) and a.shape[-2] <= _SVD_KERNEL_MAX_ORDER and a.shape[-2] > 0:
        return _remembered(("svd",), a, lambda: _svd_kernel(a))
    return _remembered(("svd",), a, lambda: per_matrix(
        a, lambda m: _svd_split(m) or scipy_linalg.svd(m, full_matrices=False, check_finite=False),
        lambda x: np.linalg.svd(x, full_matrices=False)))


def qr(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _remembered(("qr",), a, lambda: per_matrix(
        a, lambda m: scipy_linalg.qr(m, mode="economic", check_finite=False),
        lambda x: np.linalg.qr(x, mode="reduced")))


def slogdet(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, LUFactors | None]:
    """(sign, log|det|, A's LU factors when A is a single matrix, else None)."""
    return _remembered(("slogdet",), a, lambda: _slogdet(a))


def _slogdet(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, LUFactors | None]:
    if _kernel_order(a, _LU_KERNEL_MAX_ORDER):
        n = a.shape[-1]
        lu = np.array(a.reshape(-1, n, n), order="C")
        piv = np.empty(lu.shape[:2], dtype=np.int32)
        sign, logabs = np.empty(len(lu), dtype=a.dtype), np.empty(len(lu), dtype=a.dtype)
        info = _small.slogdet_batched(lu, piv, sign, logabs)
        batch = a.shape[:-2]
        return sign.reshape(batch), logabs.reshape(batch), None if info.any() else (lu, piv)
    if a.ndim != 2:
        sign, logabs = per_matrix(a, lambda m: _slogdet(m)[:2], np.linalg.slogdet)
        return sign, logabs, None
    factors = _lu_factor(a)
    lu, piv = factors[:2]  # of A or of A^T: the same determinant
    diag = np.diagonal(lu)
    swaps = np.count_nonzero(piv != np.arange(len(piv)))
    sign = (-1.0) ** swaps * np.prod(np.sign(diag))
    with np.errstate(divide="ignore"):
        return np.asarray(sign, a.dtype), np.asarray(np.sum(np.log(np.abs(diag))), a.dtype), factors
