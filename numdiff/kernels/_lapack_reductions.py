"""LAPACK's reductions and tridiagonal / bidiagonal solvers called by address from Numba code, for
numdiff.kernels.linalg_split: ``sytrd`` (symmetric to tridiagonal), ``stedc`` (tridiagonal eigensolver,
divide and conquer), ``gebrd`` (general to bidiagonal), ``bdsdc`` (bidiagonal SVD, divide and conquer).

Matrices are column-major, passed as their row-major transposes (``at[j, i] = A[i, j]``) with leading
dimension n; each wrapper queries its workspace first and returns LAPACK's info. SciPy's routines
(numdiff.kernels._blas_library.register_factor_symbols), each called from one thread at a time on
arrays of its own: none of them reads another call's data.
"""

from __future__ import annotations

import numpy as np
from numba import types

from numdiff.kernels._blas_library import FACTOR_SYMBOLS, register_factor_symbols
from numdiff.kernels._gemm_body import _data_ptr
from numdiff.kernels._self_healing_cache import njit

__all__ = ["bdsdc", "gebrd", "stedc", "sytrd"]


def __dir__() -> list[str]:
    return sorted(__all__)


register_factor_symbols()  # before any kernel below is compiled or loaded from the cache
_VOID = types.voidptr


def _external(routine: str, arguments: int) -> tuple:
    return tuple(types.ExternalFunction(FACTOR_SYMBOLS[f"{k}{routine}"], types.void(*(_VOID,) * arguments))
                 for k in "sd")


_SSYTRD, _DSYTRD = _external("sytrd", 10)
_SSTEDC, _DSTEDC = _external("stedc", 11)
_SGEBRD, _DGEBRD = _external("gebrd", 11)
_SBDSDC, _DBDSDC = _external("bdsdc", 14)


@njit(cache=True, nogil=True, inline="always")
def _p(x, i):
    """The address of x[i], as Fortran takes its scalars."""
    return _data_ptr(x[i:i + 1])


@njit(cache=True, nogil=True)
def _sytrd_call(chars, at, d, e, tau, work, ints):
    """ints = [n, lda, lwork, info]."""
    if at.itemsize == 4:
        _SSYTRD(_p(chars, 0), _p(ints, 0), _data_ptr(at), _p(ints, 1), _data_ptr(d), _data_ptr(e), _data_ptr(tau),
                _data_ptr(work), _p(ints, 2), _p(ints, 3))
    else:
        _DSYTRD(_p(chars, 0), _p(ints, 0), _data_ptr(at), _p(ints, 1), _data_ptr(d), _data_ptr(e), _data_ptr(tau),
                _data_ptr(work), _p(ints, 2), _p(ints, 3))


@njit(cache=True, nogil=True)
def sytrd(at, d, e, tau):
    """A = Q T Q^T from A's lower triangle, in place: d (n,) and e (n - 1,) T's diagonals, the
    reflectors below A's subdiagonal with their tau (n - 1,); returns info."""
    n = at.shape[0]
    chars = np.empty(1, np.uint8)
    chars[0] = ord("L")
    ints = np.empty(4, np.int32)
    ints[0], ints[1], ints[2], ints[3] = n, n, -1, 0
    query = np.zeros(1, at.dtype)
    _sytrd_call(chars, at, d, e, tau, query, ints)
    ints[2] = max(1, int(query[0]))
    _sytrd_call(chars, at, d, e, tau, np.empty(ints[2], at.dtype), ints)
    return ints[3]


@njit(cache=True, nogil=True)
def _stedc_call(chars, d, e, zt, work, iwork, ints):
    """ints = [n, ldz, lwork, liwork, info]."""
    if d.itemsize == 4:
        _SSTEDC(_p(chars, 0), _p(ints, 0), _data_ptr(d), _data_ptr(e), _data_ptr(zt), _p(ints, 1), _data_ptr(work),
                _p(ints, 2), _data_ptr(iwork), _p(ints, 3), _p(ints, 4))
    else:
        _DSTEDC(_p(chars, 0), _p(ints, 0), _data_ptr(d), _data_ptr(e), _data_ptr(zt), _p(ints, 1), _data_ptr(work),
                _p(ints, 2), _data_ptr(iwork), _p(ints, 3), _p(ints, 4))


@njit(cache=True, nogil=True)
def stedc(d, e, zt):
    """T = Z diag(w) Z^T of the symmetric tridiagonal (d, e) ("I": Z of T itself): w ascending into d,
    Z column-major into `zt` (n, n); returns info."""
    n = d.shape[0]
    chars = np.empty(1, np.uint8)
    chars[0] = ord("I")
    ints = np.empty(5, np.int32)
    ints[0], ints[1], ints[2], ints[3], ints[4] = n, n, -1, -1, 0
    query = np.zeros(1, d.dtype)
    iquery = np.zeros(1, np.int32)
    _stedc_call(chars, d, e, zt, query, iquery, ints)
    ints[2], ints[3] = max(1, int(query[0])), max(1, iquery[0])
    _stedc_call(chars, d, e, zt, np.empty(ints[2], d.dtype), np.empty(ints[3], np.int32), ints)
    return ints[4]


@njit(cache=True, nogil=True)
def _gebrd_call(at, d, e, tauq, taup, work, ints):
    """ints = [m, n, lda, lwork, info]."""
    if at.itemsize == 4:
        _SGEBRD(_p(ints, 0), _p(ints, 1), _data_ptr(at), _p(ints, 2), _data_ptr(d), _data_ptr(e), _data_ptr(tauq),
                _data_ptr(taup), _data_ptr(work), _p(ints, 3), _p(ints, 4))
    else:
        _DGEBRD(_p(ints, 0), _p(ints, 1), _data_ptr(at), _p(ints, 2), _data_ptr(d), _data_ptr(e), _data_ptr(tauq),
                _data_ptr(taup), _data_ptr(work), _p(ints, 3), _p(ints, 4))


@njit(cache=True, nogil=True)
def gebrd(at, d, e, tauq, taup):
    """A = Q B P^T of a square A, in place: B upper bidiagonal (d (n,), e (n - 1,)), Q's reflectors
    below A's diagonal (tauq (n,)), P's right of its superdiagonal (taup (n,)); returns info."""
    n = at.shape[0]
    ints = np.empty(5, np.int32)
    ints[0], ints[1], ints[2], ints[3], ints[4] = n, n, n, -1, 0
    query = np.zeros(1, at.dtype)
    _gebrd_call(at, d, e, tauq, taup, query, ints)
    ints[3] = max(1, int(query[0]))
    _gebrd_call(at, d, e, tauq, taup, np.empty(ints[3], at.dtype), ints)
    return ints[4]


@njit(cache=True, nogil=True)
def bdsdc(d, e, ut, vtt):
    """B = U_B diag(s) V_B^T of the upper bidiagonal (d, e) ("U", "I"): s descending into d, U_B and
    V_B^T column-major into `ut` and `vtt` (n, n); returns info."""
    n = d.shape[0]
    chars = np.empty(2, np.uint8)
    chars[0], chars[1] = ord("U"), ord("I")
    ints = np.empty(4, np.int32)
    ints[0], ints[1], ints[2], ints[3] = n, n, n, 0
    work = np.empty(3 * n * n + 4 * n, d.dtype)
    iwork = np.empty(8 * n, np.int32)
    unused = np.zeros(1, d.dtype)
    unused_i = np.zeros(1, np.int32)
    if d.itemsize == 4:
        _SBDSDC(_p(chars, 0), _p(chars, 1), _p(ints, 0), _data_ptr(d), _data_ptr(e), _data_ptr(ut), _p(ints, 1),
                _data_ptr(vtt), _p(ints, 2), _data_ptr(unused), _data_ptr(unused_i), _data_ptr(work),
                _data_ptr(iwork), _p(ints, 3))
    else:
        _DBDSDC(_p(chars, 0), _p(chars, 1), _p(ints, 0), _data_ptr(d), _data_ptr(e), _data_ptr(ut), _p(ints, 1),
                _data_ptr(vtt), _p(ints, 2), _data_ptr(unused), _data_ptr(unused_i), _data_ptr(work),
                _data_ptr(iwork), _p(ints, 3))
    return ints[3]
