"""Layout helpers of the CPU pooling kernels (pool, avg_pool): arrays as planes, and each tap
column's valid output range. The window arithmetic itself is in :mod:`numdiff.kernels._pool_geometry`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from numdiff.kernels._im2col import valid_out_range


@njit(cache=True, nogil=True)
def column_taps(kw, dw, sw, pw, width, ow_size):
    """Per tap column j: the output range [lo, hi) whose tap j is inside the image.
    Computed once per call so that the per-row loops carry no range arithmetic."""
    lo = np.empty(kw, np.int64)
    hi = np.empty(kw, np.int64)
    for j in range(kw):
        lo[j], hi[j] = valid_out_range(j * dw - pw, sw, width, ow_size)
    return lo, hi


def planes(a: np.ndarray) -> np.ndarray:
    """(N, C, H, W) viewed as (N*C, H, W) planes.

    >>> planes(np.zeros((2, 3, 4, 5))).shape
    (6, 4, 5)
    """
    return a.reshape(a.shape[0] * a.shape[1], a.shape[2], a.shape[3])


def flat_planes(a: np.ndarray) -> np.ndarray:
    """(N, C, ...) viewed as (N*C, prod(...)) flat planes (explicit sizes: N*C may be 0).

    >>> flat_planes(np.zeros((0, 3, 4, 5))).shape
    (0, 20)
    """
    plane = 1
    for s in a.shape[2:]:
        plane *= s
    return a.reshape(a.shape[0] * a.shape[1], plane)
