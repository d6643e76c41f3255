"""The pooling window arithmetic of numdiff._ground.pool_geometry, compiled as CUDA device
functions: the same Python functions the CPU kernels compile with ``njit``, so both targets
agree on every window, divisor and argmax start by construction."""

from __future__ import annotations

from numba import cuda

from numdiff._ground import pool_geometry as geometry

tap_range = cuda.jit(device=True)(geometry.tap_range)
avg_window = cuda.jit(device=True)(geometry.avg_window)
avg_divisor = cuda.jit(device=True)(geometry.avg_divisor)
window_outputs = cuda.jit(device=True)(geometry.window_outputs)
adaptive_window = cuda.jit(device=True)(geometry.adaptive_window)
adaptive_outputs = cuda.jit(device=True)(geometry.adaptive_outputs)
