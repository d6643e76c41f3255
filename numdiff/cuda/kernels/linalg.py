"""Batched small-matrix linear algebra on CUDA: the twins of numdiff.kernels.triangular.

The per-matrix loops are numdiff.kernels._linalg_cores', compiled here with
``cuda.jit(device=True)``. One thread per matrix (Cholesky, LU solve) or per (matrix, right-hand
side column) (triangular solves): these are the small-matrix batches where one thread's O(n^3)
loop is cheaper than a launch per matrix. Grid: ceil(work items / THREADS_PER_BLOCK) blocks.
Arrays are C-contiguous CudaArrays of one float dtype; the launchers check that before the launch.
"""

from __future__ import annotations

import math
from typing import Any

from numba import cuda

from numdiff.kernels._linalg_cores import (
    cholesky_backward_core,
    cholesky_core,
    lower_solve_core,
    lu_solve_core,
    upper_solve_core,
)

__all__ = ["cholesky_backward_batched", "cholesky_batched", "lu_solve_batched", "triangular_solve"]

THREADS_PER_BLOCK = 64

_cholesky = cuda.jit(device=True)(cholesky_core)
_cholesky_backward = cuda.jit(device=True)(cholesky_backward_core)
_lower = cuda.jit(device=True)(lower_solve_core)
_upper = cuda.jit(device=True)(upper_solve_core)
_lu = cuda.jit(device=True)(lu_solve_core)


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
