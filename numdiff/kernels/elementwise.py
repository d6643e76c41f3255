"""Elementwise kernels NumPy has no ufunc for (erf), compiled lazily per dtype."""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from numdiff.kernels._self_healing_cache import njit


@njit(cache=True, parallel=True)
def erf_forward(x, out):
    """out[i] = erf(x[i]) over flat contiguous arrays; iterations split across threads."""
    for i in prange(x.size):
        out[i] = math.erf(x[i])


def erf(x: np.ndarray) -> np.ndarray:
    """The error function of an array of float32 or float64, in the input's dtype."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    erf_forward(flat, out)
    return out.reshape(x.shape)
