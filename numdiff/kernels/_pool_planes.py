"""Layout helpers of the CPU pooling kernels (pool, avg_pool): arrays as planes, and each tap
column's valid output range. The window arithmetic itself is in :mod:`numdiff._ground.pool_geometry`.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._im2col import valid_out_range
from numdiff.kernels._self_healing_cache import njit


@njit(cache=True, nogil=True)
def column_taps(kw, dw, sw, pw, width, ow_size):
    """The tap columns j0 <= j < j0 + len(lo) that some output reads inside the image, and for each
    the output range [lo, hi) whose tap is inside. Computed once per call so that the per-row
    loops carry no range arithmetic.

    Only those taps are listed: a pooling window may be far wider than the image (kernel 2**31 - 1
    with padding 2**30 over 5 columns is valid) but its outputs span at most the padded image, so
    at most about 2*width/dw taps ever land inside it.
    """
    reach = (ow_size - 1) * sw  # the outputs' span of column offsets
    j0 = 0 if pw - reach <= 0 else (pw - reach + dw - 1) // dw
    j1 = min(kw, (pw + width - 1) // dw + 1)
    count = max(0, j1 - j0)
    lo = np.empty(count, np.int64)
    hi = np.empty(count, np.int64)
    for t in range(count):
        lo[t], hi[t] = valid_out_range((j0 + t) * dw - pw, sw, width, ow_size)
    return j0, lo, hi


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
