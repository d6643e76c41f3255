"""Reduction kernels: sum, prod, max, min over the trailing axes of a (permuted) view, any length.

The caller orders the axes so the kept ones come first; then output row `r` reduces the `n_red`
consecutive C-order positions ``r * n_red ... (r + 1) * n_red - 1`` of the view. Pass 1 splits each
row into `parts` chunks, one block per (row, chunk): threads stride over the chunk, then fold their
partials in shared memory (tree, blockDim a power of two). If parts > 1, pass 2 reduces the
(rows, parts) partials the same way with parts = 1, so rows of any length use many blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import cuda, from_dtype

from numdiff.cuda.kernels._index import strided_offset

SHARED = 256  # the largest block a reduction uses; its shared scratch has this many slots
_CHUNK_PER_THREAD = 8


@cuda.jit(device=True)
def _add(a, b):
    return a + b


@cuda.jit(device=True)
def _mul(a, b):
    return a * b


@cuda.jit(device=True)
def _max(a, b):
    return a if (a > b or a != a) else b


@cuda.jit(device=True)
def _min(a, b):
    return a if (a < b or a != a) else b


COMBINE: dict[str, Callable] = {"sum": _add, "prod": _mul, "max": _max, "min": _min}


def identity(op: str, dtype: np.dtype):
    if op == "sum":
        return dtype.type(0)
    if op == "prod":
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(-np.inf if op == "max" else np.inf)
    if dtype.kind == "b":
        return dtype.type(op == "min")
    info = np.iinfo(dtype)
    return dtype.type(info.min if op == "max" else info.max)


def _make_kernel(op: str, dtype: np.dtype):
    combine = COMBINE[op]
    scratch_type = from_dtype(dtype)
    start_value = identity(op, dtype)

    @cuda.jit
    def reduce_rows(out, src, src_meta, shape, n_red, parts):
        """out[row * parts + part] = fold of chunk `part` of row `row`; one block per (row, part)."""
        scratch = cuda.shared.array(SHARED, scratch_type)
        row = cuda.blockIdx.x // parts
        part = cuda.blockIdx.x % parts
        tid = cuda.threadIdx.x
        chunk = (n_red + parts - 1) // parts
        begin = part * chunk
        end = min(begin + chunk, n_red)
        acc = start_value
        for r in range(begin + tid, end, cuda.blockDim.x):
            acc = combine(acc, src[strided_offset(row * n_red + r, shape, src_meta)])
        scratch[tid] = acc
        cuda.syncthreads()
        width = cuda.blockDim.x // 2
        while width > 0:
            if tid < width:
                scratch[tid] = combine(scratch[tid], scratch[tid + width])
            cuda.syncthreads()
            width //= 2
        if tid == 0:
            out[cuda.blockIdx.x] = scratch[0]

    return reduce_rows


_KERNELS: dict = {}


def _kernel(op: str, dtype: np.dtype):
    key = (op, dtype)
    if key not in _KERNELS:
        _KERNELS[key] = _make_kernel(op, dtype)
    return _KERNELS[key]


def _threads_for(n_red: int) -> int:
    return min(SHARED, 1 << max(0, math.ceil(math.log2(max(n_red, 1)))))


def launch_reduce(op: str, out, view, n_out: int, n_red: int) -> None:
    """out (contiguous CudaArray, n_out elements, accumulator dtype) <- `op` over rows of `view`.

    `view` already has the reduced axes last and the accumulator dtype; n_red >= 1.
    Grid: n_out * parts blocks of a power-of-two size <= 256.
    """
    threads = _threads_for(n_red)
    parts = max(1, min(64, math.ceil(n_red / (threads * _CHUNK_PER_THREAD))))
    kernel = _kernel(op, out.dtype)
    if parts == 1:
        kernel[n_out, threads](
            out._buffer, view._buffer, view.meta(view.shape), view.shape_vector(), n_red, 1
        )
        return
    partial = type(out).empty((n_out, parts), out.dtype, out.device)
    kernel[n_out * parts, threads](
        partial._buffer, view._buffer, view.meta(view.shape), view.shape_vector(), n_red, parts
    )
    kernel[n_out, _threads_for(parts)](
        out._buffer, partial._buffer, partial.meta(partial.shape), partial.shape_vector(), parts, 1
    )


@cuda.jit
def arg_extreme_rows(out, src, src_meta, shape, n_red, n_out, find_max):
    """out[row] = index of the first max (min) of row `row`; one thread per row, NaN wins first."""
    for row in range(cuda.grid(1), n_out, cuda.gridsize(1)):
        best = src[strided_offset(row * n_red, shape, src_meta)]
        best_at = 0
        for r in range(1, n_red):
            v = src[strided_offset(row * n_red + r, shape, src_meta)]
            if best != best:
                break
            better = v > best if find_max else v < best
            if better or v != v:
                best = v
                best_at = r
        out[row] = best_at


def launch_arg_extreme(out, view, n_out: int, n_red: int, find_max: bool) -> None:
    """out (contiguous int64, n_out) <- argmax/argmin over the rows of `view` (reduced axes last)."""
    from numdiff.cuda.kernels._index import grid_1d

    blocks, threads = grid_1d(n_out, 128)
    arg_extreme_rows[blocks, threads](
        out._buffer, view._buffer, view.meta(view.shape), view.shape_vector(), n_red, n_out, find_max
    )


@cuda.jit
def cumprod_rows(out, src, src_meta, shape, n_red, n_out):
    """out[row, r] = prod(src[row, :r + 1]); one thread per row scans it in order."""
    for row in range(cuda.grid(1), n_out, cuda.gridsize(1)):
        acc = src[strided_offset(row * n_red, shape, src_meta)]
        out[row * n_red] = acc
        for r in range(1, n_red):
            acc = acc * src[strided_offset(row * n_red + r, shape, src_meta)]
            out[row * n_red + r] = acc


@cuda.jit
def cumsum_rows(out, src, src_meta, shape, n_red, n_out):
    """out[row, r] = sum(src[row, :r + 1]); one thread per row scans it in order."""
    for row in range(cuda.grid(1), n_out, cuda.gridsize(1)):
        acc = src[strided_offset(row * n_red, shape, src_meta)]
        out[row * n_red] = acc
        for r in range(1, n_red):
            acc = acc + src[strided_offset(row * n_red + r, shape, src_meta)]
            out[row * n_red + r] = acc


def launch_cumprod(out, view, n_out: int, n_red: int) -> None:
    """out (contiguous, view's shape) <- running products along the last axis of `view`."""
    _launch_scan(cumprod_rows, out, view, n_out, n_red)


def launch_cumsum(out, view, n_out: int, n_red: int) -> None:
    """out (contiguous, view's shape) <- running sums along the last axis of `view`."""
    _launch_scan(cumsum_rows, out, view, n_out, n_red)


def _launch_scan(kernel, out, view, n_out: int, n_red: int) -> None:
    from numdiff.cuda.kernels._index import grid_1d

    blocks, threads = grid_1d(n_out, 128)
    kernel[blocks, threads](out._buffer, view._buffer, view.meta(view.shape), view.shape_vector(), n_red, n_out)
