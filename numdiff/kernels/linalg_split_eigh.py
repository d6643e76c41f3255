"""The eigendecomposition of one symmetric matrix as LAPACK's syevd computes it, with its
back-transform split over numdiff's threads.

    eigh_split(a, upper, threads) -> (w, v, info), A = V diag(w) V^T, w ascending:
        sytrd:  A = Q T Q^T, T tridiagonal, from A's lower (upper) triangle   (LAPACK, calling thread;
                                                                              half of it BLAS-2 symv)
        stedc:  T = Z diag(w) Z^T by divide and conquer                       (LAPACK, calling thread)
        ormtr:  V = Q Z, a block of Z's columns per thread                    (in parallel, ~ 2 n^3)

syevd's own steps (DSYTRD, DSTEDC with COMPZ = "I", DORMTR), so w and V agree with syevd's to
rounding, signs included; OpenBLAS's syevd at one thread runs the back-transform on one core, and
at two OpenBLAS threads its BLAS-2 steps spin on a loaded machine (numdiff.ops._lapack's doc).
v is (n, n) Fortran order; info is stedc's (0, or > 0 when it failed: then w and v are not
defined). syevd scales an A whose largest entry lies outside [sqrt(safe minimum / eps), its
inverse]; callers keep such matrices on syevd (numdiff.ops._lapack.eigh).
"""

from __future__ import annotations

import numpy as np
from numba import prange, types

from numdiff.kernels._blas import _data_ptr, prepare_blas
from numdiff.kernels._blas_library import FACTOR_SYMBOLS, register_factor_symbols
from numdiff.kernels._lapack_calls import at_address
from numdiff.kernels._self_healing_cache import njit

__all__ = ["eigh_split"]


def __dir__() -> list[str]:
    return sorted(__all__)


register_factor_symbols()  # before any kernel below is compiled or loaded from the cache
_VOID = types.voidptr
_SSYTRD, _DSYTRD = (types.ExternalFunction(FACTOR_SYMBOLS[f"{k}sytrd"], types.void(*(_VOID,) * 10)) for k in "sd")
_SSTEDC, _DSTEDC = (types.ExternalFunction(FACTOR_SYMBOLS[f"{k}stedc"], types.void(*(_VOID,) * 11)) for k in "sd")
_SORMTR, _DORMTR = (types.ExternalFunction(FACTOR_SYMBOLS[f"{k}ormtr"], types.void(*(_VOID,) * 13)) for k in "sd")


@njit(cache=True, nogil=True, inline="always")
def _p(x, i):
    """The address of x[i], as Fortran takes its scalars."""
    return _data_ptr(x[i:i + 1])


@njit(cache=True, nogil=True)
def _sytrd_call(uplo, at, d, e, tau, work, ints):
    """sytrd, ints = [n, lda, lwork, info]."""
    if at.itemsize == 4:
        _SSYTRD(_p(uplo, 0), _p(ints, 0), _data_ptr(at), _p(ints, 1), _data_ptr(d), _data_ptr(e), _data_ptr(tau),
                _data_ptr(work), _p(ints, 2), _p(ints, 3))
    else:
        _DSYTRD(_p(uplo, 0), _p(ints, 0), _data_ptr(at), _p(ints, 1), _data_ptr(d), _data_ptr(e), _data_ptr(tau),
                _data_ptr(work), _p(ints, 2), _p(ints, 3))


@njit(cache=True, nogil=True)
def _stedc_call(d, e, zt, work, iwork, ints):
    """stedc ("I"), ints = [compz, n, ldz, lwork, liwork, info]."""
    if d.itemsize == 4:
        _SSTEDC(_p(ints, 0), _p(ints, 1), _data_ptr(d), _data_ptr(e), _data_ptr(zt), _p(ints, 2), _data_ptr(work),
                _p(ints, 3), _data_ptr(iwork), _p(ints, 4), _p(ints, 5))
    else:
        _DSTEDC(_p(ints, 0), _p(ints, 1), _data_ptr(d), _data_ptr(e), _data_ptr(zt), _p(ints, 2), _data_ptr(work),
                _p(ints, 3), _data_ptr(iwork), _p(ints, 4), _p(ints, 5))


@njit(cache=True, nogil=True)
def _ormtr_call(chars, ints, at, tau, c, work):
    """ormtr, chars = [side, uplo, trans], ints = [m, n, lda, ldc, lwork, info]."""
    if at.itemsize == 4:
        _SORMTR(_p(chars, 0), _p(chars, 1), _p(chars, 2), _p(ints, 0), _p(ints, 1), _data_ptr(at), _p(ints, 2),
                _data_ptr(tau), c, _p(ints, 3), _data_ptr(work), _p(ints, 4), _p(ints, 5))
    else:
        _DORMTR(_p(chars, 0), _p(chars, 1), _p(chars, 2), _p(ints, 0), _p(ints, 1), _data_ptr(at), _p(ints, 2),
                _data_ptr(tau), c, _p(ints, 3), _data_ptr(work), _p(ints, 4), _p(ints, 5))


@njit(cache=True, nogil=True)
def _ormtr(uplo, at, tau, zt, first, stop):
    """V[:, first:stop] = Q Z[:, first:stop], in place on Z stored as `zt`."""
    if stop <= first:
        return
    n = at.shape[0]
    chars = np.empty(3, np.uint8)
    chars[0], chars[1], chars[2] = ord("L"), uplo[0], ord("N")
    ints = np.empty(6, np.int32)
    ints[0], ints[1], ints[2], ints[3], ints[4], ints[5] = n, stop - first, n, n, -1, 0
    query = np.zeros(1, at.dtype)
    c = at_address(zt, 0, first)
    _ormtr_call(chars, ints, at, tau, c, query)
    ints[4] = max(1, int(query[0]))
    _ormtr_call(chars, ints, at, tau, c, np.empty(ints[4], at.dtype))


@njit(cache=True, nogil=True, parallel=True)
def _back_transform(uplo, at, tau, zt, parts):
    n = at.shape[0]
    for t in prange(parts):
        _ormtr(uplo, at, tau, zt, t * n // parts, (t + 1) * n // parts)


@njit(cache=True, nogil=True)
def _eigh_t(at, upper, w, zt, parts):
    n = at.shape[0]
    uplo = np.empty(1, np.uint8)
    uplo[0] = ord("U") if upper else ord("L")
    e, tau = np.zeros(max(1, n), at.dtype), np.zeros(max(1, n), at.dtype)
    ints = np.empty(6, np.int32)
    ints[0], ints[1], ints[2], ints[3] = n, n, -1, 0
    query = np.zeros(1, at.dtype)
    _sytrd_call(uplo, at, w, e, tau, query, ints)  # workspace query
    ints[2] = max(1, int(query[0]))
    _sytrd_call(uplo, at, w, e, tau, np.empty(ints[2], at.dtype), ints)
    ints[0], ints[1], ints[2], ints[3], ints[4], ints[5] = ord("I"), n, n, -1, -1, 0
    iquery = np.zeros(1, np.int32)
    _stedc_call(w, e, zt, query, iquery, ints)  # workspace query
    ints[3], ints[4] = max(1, int(query[0])), max(1, iquery[0])
    _stedc_call(w, e, zt, np.empty(ints[3], at.dtype), np.empty(ints[4], np.int32), ints)
    if ints[5] == 0:
        _back_transform(uplo, at, tau, zt, parts)
    return ints[5]


def eigh_split(a: np.ndarray, upper: bool = False, threads: int = 1) -> tuple[np.ndarray, np.ndarray, int]:
    """(w, V, info) of a symmetric float32/float64 matrix, read from its upper (else lower) triangle
    (see the module doc).

    >>> w, v, info = eigh_split(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w.round(4).tolist(), info, np.allclose(v * w @ v.T, [[2.0, 1.0], [1.0, 2.0]])
    ([1.0, 3.0], 0, True)
    """
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"eigh_split: expected one square matrix, got shape {a.shape}")
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"eigh_split: expected float32 or float64, got {a.dtype}")
    if threads < 1:
        raise ValueError(f"eigh_split: threads must be at least 1, got {threads}")
    prepare_blas()
    n = a.shape[0]
    work = np.array(a, order="F")  # sytrd overwrites it with the reflectors
    v = np.zeros((n, n), a.dtype, order="F")
    w = np.empty(n, a.dtype)
    info = _eigh_t(work.T, upper, w, v.T, threads) if n else 0
    return w, v, int(info)
