"""Index arithmetic shared by every CUDA kernel, written once as plain Python.

`strided_offset` is compiled as a CUDA device function here, and is the same arithmetic
numdiff.cuda.array uses on the host (`CudaArray._offsets`) to turn an index into buffer offsets.
"""

from __future__ import annotations

import math

from numba import cuda


def strided_offset_py(linear, shape, meta):
    """Buffer offset of the element at C-order position `linear` of `shape` (meta = offset, strides)."""
    offset = meta[0]
    for d in range(shape.size - 1, -1, -1):
        n = shape[d]
        offset += (linear % n) * meta[d + 1]
        linear //= n
    return offset


strided_offset = cuda.jit(device=True)(strided_offset_py)

# Blocks beyond this count loop (grid-stride), so any length works with a bounded grid.
MAX_BLOCKS = 1024
THREADS = 256


def grid_1d(n: int, threads: int = THREADS) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over `n` items; small `n` gets a small block."""
    threads = max(1, min(threads, n))
    return max(1, min(MAX_BLOCKS, math.ceil(n / threads))), threads
