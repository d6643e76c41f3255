"""Gradient constants of composed reductions computed on the host: std's scale and zero mask,
logsumexp's shift. They are detached, so an eager call on a host array may compute them with NumPy
(one call each) instead of recording the ops that compute them; under a transform or a compile
trace the ops run, and tests/ops/test_reduction_host_constants.py checks both give the same bits."""

from __future__ import annotations

import numpy as np

from numdiff.autograd.transform_state import anywhere
from numdiff.backend import is_host
from numdiff.tensor import Tensor


def eager_host_data(t: Tensor) -> np.ndarray | None:
    """`t`'s array when it is a float host array and no transform or compile trace is active (in
    any thread), so that a composition may compute its gradient constants (a detached shift or
    scale, a mask) with NumPy instead of recording ops; else None (the ops run, and are traced)."""
    if anywhere.levels:
        return None
    data = t._data
    return data if is_host(data) and data.dtype.kind == "f" else None


def std_scale(centred: np.ndarray, dims: tuple, floor: float) -> np.ndarray:
    """std's scale on the host: the largest |deviation| of each group (each element's own with no
    dims, 1 for no elements), non-finite ones as 1, at least `floor`; what the op path computes."""
    magnitude = np.abs(centred)
    if not dims:
        scale = magnitude
    elif centred.size == 0:
        scale = np.sum(magnitude, axis=dims, keepdims=True)
    else:
        scale = np.max(magnitude, axis=dims, keepdims=True)
    one, least = np.ones((), scale.dtype), np.asarray(floor, scale.dtype)
    return np.asarray(np.where(~np.isfinite(scale), one, np.where(scale < least, least, scale)))
