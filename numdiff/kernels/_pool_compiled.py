"""The pooling window arithmetic of numdiff._ground.pool_geometry, compiled for the CPU: the same
Python functions numdiff.cuda.kernels._pool_device compiles for CUDA, inlined into the CPU kernels
(``njit(inline="always")``), so both targets agree on every window, divisor and index."""

from __future__ import annotations

from numdiff._ground import pool_geometry as geometry
from numdiff.kernels._self_healing_cache import njit

_inlined = njit(cache=True, nogil=True, inline="always")
tap_range_cpu = _inlined(geometry.tap_range)
avg_window_cpu = _inlined(geometry.avg_window)
avg_divisor_cpu = _inlined(geometry.avg_divisor)
adaptive_window_cpu = _inlined(geometry.adaptive_window)
