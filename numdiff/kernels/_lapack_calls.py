"""LAPACK and BLAS routines called by address from Numba code, on column-major matrices stored as
their row-major transposes (``at[j, i] = A[i, j]``), for numdiff.kernels.linalg_blocked.

SciPy's ``getrf``, ``potrf``, ``trsm`` and ``trmm`` (both precisions) are registered with LLVM by
numdiff.kernels._blas_library.register_factor_symbols; each wrapper here passes sizes and flags
by pointer as Fortran expects, and the address of a sub-block as ``at_address(at, row, col)``.
"""

from __future__ import annotations

import numpy as np
from numba import types

from numdiff.kernels._blas_library import FACTOR_SYMBOLS, register_factor_symbols
from numdiff.kernels._gemm_body import _data_ptr
from numdiff.kernels._self_healing_cache import njit

__all__ = ["at_address", "blas_flags", "getrf", "potrf", "swap_rows", "trmm", "trsm"]


def __dir__() -> list[str]:
    return sorted(__all__)


register_factor_symbols()  # before any kernel below is compiled or loaded from the cache
_VOID = types.voidptr
_GETRF = {k: types.ExternalFunction(FACTOR_SYMBOLS[f"{k}getrf"], types.void(*(_VOID,) * 6)) for k in "sd"}
_POTRF = {k: types.ExternalFunction(FACTOR_SYMBOLS[f"{k}potrf"], types.void(*(_VOID,) * 5)) for k in "sd"}
_TRSM = {k: types.ExternalFunction(FACTOR_SYMBOLS[f"{k}trsm"], types.void(*(_VOID,) * 11)) for k in "sd"}
_TRMM = {k: types.ExternalFunction(FACTOR_SYMBOLS[f"{k}trmm"], types.void(*(_VOID,) * 11)) for k in "sd"}
_SGETRF, _DGETRF = _GETRF["s"], _GETRF["d"]
_SPOTRF, _DPOTRF = _POTRF["s"], _POTRF["d"]
_STRSM, _DTRSM = _TRSM["s"], _TRSM["d"]
_STRMM, _DTRMM = _TRMM["s"], _TRMM["d"]


@njit(cache=True, nogil=True, inline="always")
def at_address(at, row, col):
    """The address of A[row, col], A column-major and stored as its row-major transpose `at`."""
    return _data_ptr(at[col:, row:])


@njit(cache=True, nogil=True)
def getrf(at, k, rows, cols, ipiv):
    """getrf on the rows x cols block of A at (k, k); ipiv (cols,) gets 1-based swaps; returns info."""
    ints = np.empty(4, np.int32)
    ints[0], ints[1], ints[2], ints[3] = rows, cols, at.shape[1], 0
    m_, n_, ld_, info_ = _data_ptr(ints[0:1]), _data_ptr(ints[1:2]), _data_ptr(ints[2:3]), _data_ptr(ints[3:4])
    if at.itemsize == 4:
        _SGETRF(m_, n_, at_address(at, k, k), ld_, _data_ptr(ipiv), info_)
    else:
        _DGETRF(m_, n_, at_address(at, k, k), ld_, _data_ptr(ipiv), info_)
    return ints[3]


@njit(cache=True, nogil=True)
def potrf(at, k, order):
    """potrf (lower) on the order x order block of A at (k, k); returns info."""
    ints = np.empty(3, np.int32)
    ints[0], ints[1], ints[2] = order, at.shape[1], 0
    uplo = np.empty(1, np.uint8)
    uplo[0] = ord("L")
    if at.itemsize == 4:
        _SPOTRF(_data_ptr(uplo), _data_ptr(ints[0:1]), at_address(at, k, k), _data_ptr(ints[1:2]), _data_ptr(ints[2:3]))
    else:
        _DPOTRF(_data_ptr(uplo), _data_ptr(ints[0:1]), at_address(at, k, k), _data_ptr(ints[1:2]), _data_ptr(ints[2:3]))
    return ints[2]


@njit(cache=True, nogil=True)
def trsm(flags, rows, cols, t_at, t_row, t_col, at, row, col):
    """BLAS trsm, alpha 1, in place on the rows x cols block of B at (row, col) (B stored as `at`):
    B = op(T)^-1 B (side "L") or B op(T)^-1 ("R"), with the triangle T at (t_row, t_col) of `t_at`;
    flags: side, uplo, transa, diag (:func:`blas_flags`)."""
    _triangular(flags, rows, cols, t_at, t_row, t_col, at, row, col, True)


@njit(cache=True, nogil=True)
def trmm(flags, rows, cols, t_at, t_row, t_col, at, row, col):
    """BLAS trmm, alpha 1, in place: B = op(T) B (side "L") or B op(T) ("R"), arguments as :func:`trsm`'s."""
    _triangular(flags, rows, cols, t_at, t_row, t_col, at, row, col, False)


@njit(cache=True, nogil=True, inline="always")
def _triangular(flags, rows, cols, t_at, t_row, t_col, at, row, col, solve):
    ints = np.empty(4, np.int32)
    ints[0], ints[1], ints[2], ints[3] = rows, cols, t_at.shape[1], at.shape[1]
    alpha = np.ones(1, at.dtype)
    side, uplo, trans, diag = _data_ptr(flags), _data_ptr(flags[1:2]), _data_ptr(flags[2:3]), _data_ptr(flags[3:4])
    m_, n_, lda, ldb = _data_ptr(ints[0:1]), _data_ptr(ints[1:2]), _data_ptr(ints[2:3]), _data_ptr(ints[3:4])
    t, b = at_address(t_at, t_row, t_col), at_address(at, row, col)
    if at.itemsize == 4:
        if solve:
            _STRSM(side, uplo, trans, diag, m_, n_, _data_ptr(alpha), t, lda, b, ldb)
        else:
            _STRMM(side, uplo, trans, diag, m_, n_, _data_ptr(alpha), t, lda, b, ldb)
    elif solve:
        _DTRSM(side, uplo, trans, diag, m_, n_, _data_ptr(alpha), t, lda, b, ldb)
    else:
        _DTRMM(side, uplo, trans, diag, m_, n_, _data_ptr(alpha), t, lda, b, ldb)


@njit(cache=True, nogil=True, inline="always")
def blas_flags(side, uplo, trans, diag):
    """side, uplo, trans and diag as the Fortran characters trsm and trmm take."""
    chars = np.empty(4, np.uint8)
    chars[0], chars[1], chars[2], chars[3] = ord(side), ord(uplo), ord(trans), ord(diag)
    return chars


@njit(cache=True, nogil=True)
def swap_rows(at, piv, k, b, first, stop):
    """The swaps piv[k:k+b] on A's rows, in columns first:stop."""
    for c in range(first, stop):
        column = at[c]
        for i in range(k, k + b):
            p = piv[i]
            if p != i:
                column[i], column[p] = column[p], column[i]
