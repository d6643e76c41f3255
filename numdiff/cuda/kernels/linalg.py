"""Batched small-matrix linear algebra on CUDA: the twins of numdiff.kernels.triangular and of
numdiff.kernels.linalg_small's LU kernels (lu_factor_batched, lu_substitute_batched, slogdet_batched).

The per-matrix loops are numdiff.kernels._linalg_cores', compiled here with
``cuda.jit(device=True)``. One thread per matrix (Cholesky, LU solve) or per (matrix, right-hand
side column) (triangular solves; the LU factorization, substitution and slogdet go one thread per
matrix): these are the small-matrix batches where one thread's O(n^3)
loop is cheaper than a launch per matrix. Grid: ceil(work items / THREADS_PER_BLOCK) blocks.
Arrays are C-contiguous CudaArrays of one float dtype; the launchers check that before the launch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda

from numdiff.cuda.array import CudaArray
from numdiff.kernels._linalg_cores import (
    cholesky_backward_core,
    cholesky_core,
    lower_solve_core,
    lu_factor_core,
    lu_solve_core,
    lu_substitute_core,
    slogdet_core,
    upper_solve_core,
)

__all__ = ["cholesky_backward_batched", "cholesky_batched", "lu_factor_batched", "lu_solve_batched",
           "lu_substitute_batched", "slogdet_batched", "triangular_solve"]

THREADS_PER_BLOCK = 64

_cholesky = cuda.jit(device=True)(cholesky_core)
_cholesky_backward = cuda.jit(device=True)(cholesky_backward_core)
_lower = cuda.jit(device=True)(lower_solve_core)
_upper = cuda.jit(device=True)(upper_solve_core)
_lu = cuda.jit(device=True)(lu_solve_core)
_factor = cuda.jit(device=True)(lu_factor_core)
_substitute = cuda.jit(device=True)(lu_substitute_core)
_slogdet = cuda.jit(device=True)(slogdet_core)


@cuda.jit
def _triangular_kernel(a, b, out, upper, unit):
    item = cuda.grid(1)
    columns = b.shape[2]
    if item < b.shape[0] * columns:
        p, j = item // columns, item % columns
        if upper:
            _upper(a, b, out, p, j, unit)
        else:
            _lower(a, b, out, p, j, unit)


@cuda.jit
def _cholesky_kernel(a, out, info):
    p = cuda.grid(1)
    if p < a.shape[0]:
        info[p] = _cholesky(a, out, p)


@cuda.jit
def _cholesky_backward_kernel(low, grad, out):
    p = cuda.grid(1)
    if p < low.shape[0]:
        _cholesky_backward(low, grad, out, p)


@cuda.jit
def _lu_kernel(work, x, info):
    p = cuda.grid(1)
    if p < work.shape[0]:
        info[p] = _lu(work, x, p)


@cuda.jit
def _lu_factor_kernel(lu, piv, info):
    p = cuda.grid(1)
    if p < lu.shape[0]:
        info[p] = _factor(lu, piv, p)


@cuda.jit
def _lu_substitute_kernel(lu, piv, x, transposed):
    p = cuda.grid(1)
    if p < x.shape[0]:
        _substitute(lu, piv, x, p, transposed)


@cuda.jit
def _slogdet_kernel(lu, piv, sign, logabs, info):
    p = cuda.grid(1)
    if p < lu.shape[0]:
        info[p] = _factor(lu, piv, p)
        _slogdet(lu, piv, info[p], sign, logabs, p)


def _numba(op: str, *arrays: Any) -> list:
    first = arrays[0]
    for x in arrays:
        if x.dtype != first.dtype or first.dtype.kind != "f":
            raise TypeError(f"{op}: expected one float dtype, got {[y.dtype for y in arrays]}")
        if x.device != first.device:
            raise ValueError(f"{op}: arrays on {[str(y.device) for y in arrays]}")
        if not x.flags.c_contiguous:
            raise ValueError(f"{op}: arrays must be C-contiguous")
    return [x.as_numba() for x in arrays]


def _blocks(items: int) -> int:
    return max(1, math.ceil(items / THREADS_PER_BLOCK))


def triangular_solve(a: Any, b: Any, out: Any, upper: bool, unit: bool) -> Any:
    """out[p] = a[p]^-1 b[p] for triangular a[p] (as the CPU launcher)."""
    if a.ndim != 3 or b.shape != out.shape or b.shape[:2] != a.shape[:2]:
        raise ValueError(f"triangular_solve: shapes {a.shape}, {b.shape} -> {out.shape} do not agree")
    na, nb, nout = _numba("triangular_solve", a, b, out)
    if out.size:
        _triangular_kernel[_blocks(b.shape[0] * b.shape[2]), THREADS_PER_BLOCK](na, nb, nout, bool(upper), bool(unit))
    return out


def cholesky_batched(a: Any, out: Any, info: Any) -> Any:
    """out[p] = the lower Cholesky factor of a[p]; info[p] = 0 or the failing order (as the CPU launcher)."""
    if a.ndim != 3 or a.shape != out.shape:
        raise ValueError(f"cholesky_batched: shapes {a.shape} -> {out.shape} do not agree")
    na, nout = _numba("cholesky_batched", a, out)
    if a.shape[0]:
        _cholesky_kernel[_blocks(a.shape[0]), THREADS_PER_BLOCK](na, nout, info.as_numba())
    return out


def cholesky_backward_batched(low: Any, grad: Any, out: Any) -> Any:
    """out[p] = the gradient with respect to A[p] of L[p] = cholesky(A[p]) (as the CPU launcher)."""
    if low.ndim != 3 or not low.shape == grad.shape == out.shape:
        raise ValueError(f"cholesky_backward_batched: shapes {low.shape}, {grad.shape} -> {out.shape} do not agree")
    nl, ng, nout = _numba("cholesky_backward_batched", low, grad, out)
    if low.shape[0]:
        _cholesky_backward_kernel[_blocks(low.shape[0]), THREADS_PER_BLOCK](nl, ng, nout)
    return out


def lu_solve_batched(a: Any, b: Any, out: Any, info: Any) -> Any:
    """out[p] = a[p]^-1 b[p] by partial pivoting; info[p] = 0 or the zero pivot (as the CPU launcher)."""
    if a.ndim != 3 or b.shape != out.shape or b.shape[:2] != a.shape[:2]:
        raise ValueError(f"lu_solve_batched: shapes {a.shape}, {b.shape} -> {out.shape} do not agree")
    work = a.copy()
    out[...] = b
    nw, nout = _numba("lu_solve_batched", work, out)
    if a.shape[0]:
        _lu_kernel[_blocks(a.shape[0]), THREADS_PER_BLOCK](nw, nout, info.as_numba())
    return out


def _pivots(op: str, lu: Any, piv: Any) -> Any:
    if lu.ndim != 3 or lu.shape[1] != lu.shape[2]:
        raise ValueError(f"{op}: expected a (batch, n, n) stack, got {lu.shape}")
    if piv.dtype != np.int32 or tuple(piv.shape) != tuple(lu.shape[:2]) or not piv.flags.c_contiguous:
        raise ValueError(f"{op}: piv must be contiguous int32 of shape {lu.shape[:2]}, got {piv.dtype} {piv.shape}")
    if piv.device != lu.device:
        raise ValueError(f"{op}: lu on {lu.device}, piv on {piv.device}")
    return piv.as_numba()


def lu_factor_batched(lu: Any, piv: Any) -> Any:
    """Factor each lu[p] = P L U in place, piv[p] 0-based swaps; returns info (int32, on lu's device)
    (as the CPU launcher)."""
    npiv = _pivots("lu_factor_batched", lu, piv)
    (nlu,) = _numba("lu_factor_batched", lu)
    info = CudaArray.from_numpy(np.zeros(lu.shape[0], np.int32), lu.device)
    if lu.shape[0]:
        _lu_factor_kernel[_blocks(lu.shape[0]), THREADS_PER_BLOCK](nlu, npiv, info.as_numba())
    return info


def lu_substitute_batched(lu: Any, piv: Any, x: Any, transposed: bool) -> Any:
    """x[p] <- A[p]^-1 x[p] (A[p]^-T x[p] when `transposed`) from lu_factor_batched's factors (as the CPU launcher)."""
    npiv = _pivots("lu_substitute_batched", lu, piv)
    if x.ndim != 3 or tuple(x.shape[:2]) != tuple(lu.shape[:2]):
        raise ValueError(f"lu_substitute_batched: x must be (batch, {lu.shape[1]}, k), got {x.shape}")
    nlu, nx = _numba("lu_substitute_batched", lu, x)
    if x.shape[0]:
        _lu_substitute_kernel[_blocks(x.shape[0]), THREADS_PER_BLOCK](nlu, npiv, nx, bool(transposed))
    return x


def slogdet_batched(lu: Any, piv: Any, sign: Any, logabs: Any) -> Any:
    """lu_factor_batched, then sign[p] and logabs[p] = log|det A[p]|; returns info (as the CPU launcher)."""
    npiv = _pivots("slogdet_batched", lu, piv)
    if tuple(sign.shape) != tuple(lu.shape[:1]) or tuple(logabs.shape) != tuple(sign.shape):
        raise ValueError(f"slogdet_batched: sign and logabs must have shape {lu.shape[:1]}, got {sign.shape}, "
                         f"{logabs.shape}")
    nlu, nsign, nlog = _numba("slogdet_batched", lu, sign, logabs)
    info = CudaArray.from_numpy(np.zeros(lu.shape[0], np.int32), lu.device)
    if lu.shape[0]:
        _slogdet_kernel[_blocks(lu.shape[0]), THREADS_PER_BLOCK](nlu, npiv, nsign, nlog, info.as_numba())
    return info
