"""The parallel loop of numdiff.kernels.layout_copy's transposing copies (CPU, Numba), in a module of
its own so that importing layout_copy (every reshape's module) does not load Numba."""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._background import defer_to_helper
from numdiff.kernels._parallel import contiguous_run
from numdiff.kernels._self_healing_cache import njit

__all__ = ["copy_rows"]

TILE = 16
"""Rows and columns of a tile of the copy (16 float32 columns: one 64-byte line of the output)."""


@njit(cache=True, nogil=True, parallel=True)
def copy_rows(src, shape, strides, dst, parts):
    """``dst`` <- the 4-D view of `shape` with element `strides` (all >= 0) into the flat `src`,
    in row-major order; dst flat, C-contiguous. Meant for a transposing copy (strides[3] > 1).

    Loop nest: prange over `parts` equal contiguous runs of the (d0, d1, d2) rows
    (numdiff.kernels._parallel.contiguous_run); a run goes in chunks of up to :data:`TILE` rows of
    one (d0, d1) plane, a chunk in tiles of :data:`TILE` columns, each tile's rows one after
    another, so the source lines a tile reads stay in the L1 cache while its rows are written.
    Flat arrays and index arithmetic, not row views: a view made in the loop adds to the array's
    reference count, one cache line that both threads write (a row-view version took 3x NumPy's
    CPU time). Offsets are unsigned, from shapes and strides checked in Python. No extra memory."""
    d0, d1, d2, d3 = shape
    s0, s1, s2, s3 = strides
    rows = d0 * d1 * d2
    width, step, across = np.uint64(d3), np.uint64(s2), np.uint64(s3)
    for t in prange(parts):
        start, stop = contiguous_run(rows, parts, t)
        r = start
        while r < stop:
            i2 = r % d2
            i1 = (r // d2) % d1
            i0 = r // (d1 * d2)
            chunk = min(TILE, stop - r, d2 - i2)
            # Unsigned offsets: Numba wraps a negative signed index around, a branch per element
            # (a contiguous 2 MiB copy in rows: 196 us signed, 46 unsigned, NumPy 40).
            first, row = np.uint64(i0 * s0 + i1 * s1 + i2 * s2), np.uint64(r)
            for j0 in range(0, d3, TILE):
                j1 = np.uint64(min(d3, j0 + TILE))
                for k in range(np.uint64(chunk)):
                    source, target = first + k * step, (row + k) * width
                    for j in range(np.uint64(j0), j1):
                        dst[target + j] = src[source + j * across]
            r += chunk


def _copy_rows_on_caller(src: np.ndarray, shape: tuple, strides: tuple, dst: np.ndarray, parts: int) -> None:
    """:func:`copy_rows` on the calling thread (NumPy's copy), while a helper process compiles it."""
    size = src.itemsize
    dst.reshape(shape)[...] = np.lib.stride_tricks.as_strided(src, shape, tuple(s * size for s in strides))


defer_to_helper(copy_rows, _copy_rows_on_caller)
