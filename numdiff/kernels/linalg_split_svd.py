"""The thin SVD of one square matrix as LAPACK's gesdd computes it, with its two back-transforms run
side by side on numdiff's threads.

    svd_square(a, threads) -> (u, s, vt, info), A = U diag(s) V^T, s descending:
        gebrd:  A = Q B P^T, B upper bidiagonal                  (LAPACK, calling thread; ~ 8 n^3 / 3
                                                                  flops, half of them BLAS-2)
        bdsdc:  B = U_B diag(s) V_B^T by divide and conquer       (LAPACK, calling thread)
        ormbr:  U = Q U_B on one half of the threads (blocks of U's columns),
                V^T = V_B^T P^T on the other (blocks of V^T's rows)           (in parallel, ~ 2 n^3 each)

gesdd's own steps for a square A (its path 5: DLASET, DBDSDC, two DORMBR), with the same
reflectors, so U, s and V^T agree with gesdd's to rounding (signs included). OpenBLAS's gesdd at one
thread runs the two ormbr one after the other; at two OpenBLAS threads its BLAS-2 steps spin on a
loaded machine (numdiff.ops._lapack's doc). u and vt are (n, n) Fortran order, s (n,); info is
bdsdc's (0, or > 0 when it did not converge: then u, s and vt are not defined). gesdd scales an
A whose largest entry is below sqrt(safe minimum) / eps or above its inverse; callers keep such
matrices (and NaN) on gesdd (numdiff.ops._lapack.svd).
"""

from __future__ import annotations

import numpy as np
from numba import prange, types

from numdiff.kernels._blas import _data_ptr, prepare_blas
from numdiff.kernels._blas_library import FACTOR_SYMBOLS, register_factor_symbols
from numdiff.kernels._lapack_calls import at_address
from numdiff.kernels._self_healing_cache import njit

__all__ = ["svd_square"]


def __dir__() -> list[str]:
    return sorted(__all__)


register_factor_symbols()  # before any kernel below is compiled or loaded from the cache
_VOID = types.voidptr
_SGEBRD, _DGEBRD = (types.ExternalFunction(FACTOR_SYMBOLS[f"{k}gebrd"], types.void(*(_VOID,) * 11)) for k in "sd")
_SBDSDC, _DBDSDC = (types.ExternalFunction(FACTOR_SYMBOLS[f"{k}bdsdc"], types.void(*(_VOID,) * 14)) for k in "sd")
_SORMBR, _DORMBR = (types.ExternalFunction(FACTOR_SYMBOLS[f"{k}ormbr"], types.void(*(_VOID,) * 14)) for k in "sd")


@njit(cache=True, nogil=True, inline="always")
def _p(x, i):
    """The address of x[i] (an int32 or float array), as Fortran takes its scalars."""
    return _data_ptr(x[i:i + 1])


@njit(cache=True, nogil=True)
def _gebrd_call(at, d, e, tauq, taup, work, ints):
    """gebrd on A (stored as `at`), ints = [n, n, lda, lwork, info]."""
    if at.itemsize == 4:
        _SGEBRD(_p(ints, 0), _p(ints, 1), _data_ptr(at), _p(ints, 2), _data_ptr(d), _data_ptr(e), _data_ptr(tauq),
                _data_ptr(taup), _data_ptr(work), _p(ints, 3), _p(ints, 4))
    else:
        _DGEBRD(_p(ints, 0), _p(ints, 1), _data_ptr(at), _p(ints, 2), _data_ptr(d), _data_ptr(e), _data_ptr(tauq),
                _data_ptr(taup), _data_ptr(work), _p(ints, 3), _p(ints, 4))


@njit(cache=True, nogil=True)
def _gebrd(at, d, e, tauq, taup):
    n = at.shape[0]
    ints = np.empty(5, np.int32)
    ints[0], ints[1], ints[2], ints[3], ints[4] = n, n, n, -1, 0
    query = np.zeros(1, at.dtype)
    _gebrd_call(at, d, e, tauq, taup, query, ints)  # workspace query
    ints[3] = max(1, int(query[0]))
    _gebrd_call(at, d, e, tauq, taup, np.empty(ints[3], at.dtype), ints)
    return ints[4]


@njit(cache=True, nogil=True)
def _bdsdc(d, e, ut, vtt):
    """bdsdc ("U", "I") on the upper bidiagonal (d, e): U_B into `ut`, V_B^T into `vtt`; returns info."""
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


@njit(cache=True, nogil=True)
def _ormbr_call(chars, ints, at, tau, c, work):
    """ormbr, chars = [vect, side, trans], ints = [m, n, k, lda, ldc, lwork, info]."""
    if at.itemsize == 4:
        _SORMBR(_p(chars, 0), _p(chars, 1), _p(chars, 2), _p(ints, 0), _p(ints, 1), _p(ints, 2), _data_ptr(at),
                _p(ints, 3), _data_ptr(tau), c, _p(ints, 4), _data_ptr(work), _p(ints, 5), _p(ints, 6))
    else:
        _DORMBR(_p(chars, 0), _p(chars, 1), _p(chars, 2), _p(ints, 0), _p(ints, 1), _p(ints, 2), _data_ptr(at),
                _p(ints, 3), _data_ptr(tau), c, _p(ints, 4), _data_ptr(work), _p(ints, 5), _p(ints, 6))


@njit(cache=True, nogil=True)
def _ormbr(left, at, tau, ct, first, stop):
    """U[:, first:stop] = Q U_B[:, first:stop] (`left`), or V^T[first:stop] = V_B^T[first:stop] P^T,
    in place on C stored as `ct`."""
    if stop <= first:
        return
    n = at.shape[0]
    chars = np.empty(3, np.uint8)
    chars[0], chars[1], chars[2] = (ord("Q"), ord("L"), ord("N")) if left else (ord("P"), ord("R"), ord("T"))
    ints = np.empty(7, np.int32)
    ints[0], ints[1] = (n, stop - first) if left else (stop - first, n)
    ints[2], ints[3], ints[4], ints[5], ints[6] = n, n, n, -1, 0
    c = at_address(ct, 0, first) if left else at_address(ct, first, 0)
    query = np.zeros(1, at.dtype)
    _ormbr_call(chars, ints, at, tau, c, query)
    ints[5] = max(1, int(query[0]))
    _ormbr_call(chars, ints, at, tau, c, np.empty(ints[5], at.dtype))


@njit(cache=True, nogil=True, parallel=True)
def _back_transforms(at, tauq, taup, ut, vtt, parts):
    """Both ormbr: U's column blocks on the first half of the threads, V^T's row blocks on the rest."""
    n = at.shape[0]
    left_parts = max(1, parts // 2)
    right_parts = max(1, parts - left_parts)
    for t in prange(left_parts + right_parts):
        if t < left_parts:
            _ormbr(True, at, tauq, ut, t * n // left_parts, (t + 1) * n // left_parts)
        else:
            r = t - left_parts
            _ormbr(False, at, taup, vtt, r * n // right_parts, (r + 1) * n // right_parts)


@njit(cache=True, nogil=True)
def _svd_t(at, ut, vtt, d, parts):
    n = at.shape[0]
    e = np.zeros(max(1, n), at.dtype)
    tauq, taup = np.empty(n, at.dtype), np.empty(n, at.dtype)
    _gebrd(at, d, e, tauq, taup)
    info = _bdsdc(d, e, ut, vtt)
    if info == 0:
        _back_transforms(at, tauq, taup, ut, vtt, parts)
    return info


def svd_square(a: np.ndarray, threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(U, s, V^T, info) of a square float32/float64 matrix (see the module doc).

    >>> u, s, vt, info = svd_square(np.array([[3.0, 0.0], [4.0, 5.0]]))
    >>> s.round(4).tolist(), info, np.allclose(u @ np.diag(s) @ vt, [[3.0, 0.0], [4.0, 5.0]])
    ([6.7082, 2.2361], 0, True)
    """
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"svd_square: expected one square matrix, got shape {a.shape}")
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"svd_square: expected float32 or float64, got {a.dtype}")
    if threads < 1:
        raise ValueError(f"svd_square: threads must be at least 1, got {threads}")
    prepare_blas()
    n = a.shape[0]
    work = np.array(a, order="F")  # gebrd overwrites it with the reflectors
    u, vt = np.zeros((n, n), a.dtype, order="F"), np.zeros((n, n), a.dtype, order="F")
    s = np.empty(n, a.dtype)
    info = _svd_t(work.T, u.T, vt.T, s, threads) if n else 0
    return u, s, vt, int(info)
