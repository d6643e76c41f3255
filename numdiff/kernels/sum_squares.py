"""The sum of squares of a float array in one pass (CPU, Numba): clip_grad_norm_'s 2-norms.

``(g * g).sum()`` writes a squared copy of the gradient and reads it back: two passes and an
allocation, 120 us on a 5000 x 64 float32 embedding gradient, where one read suffices.

- ``sum_of_squares(x)``: the sum of ``x[i] * x[i]`` over a float32/float64 array of any shape and
  layout (made C-contiguous first), accumulated in float64. Loop nest: one loop over the flat
  elements; ``fastmath={"reassoc"}`` lets LLVM keep several partial sums in vector lanes (the
  order of the additions is the compiled loop's, fixed for a build, not the index order).
  Extra memory: none for a contiguous array.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._checks import FLOAT_DTYPES
from numdiff.kernels._self_healing_cache import njit

__all__ = ["sum_of_squares"]


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _sum_of_squares(x):
    total = 0.0
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        total += v * v
    return total


def sum_of_squares(x: np.ndarray) -> float:
    """The sum of the squared elements of `x`, in float64.

    >>> sum_of_squares(np.array([[3.0], [4.0]], dtype=np.float32))
    25.0
    """
    if type(x) is not np.ndarray or x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"sum_of_squares: x must be a float32 or float64 numpy.ndarray, got {getattr(x, 'dtype', type(x).__name__)}")
    return float(_sum_of_squares(np.ascontiguousarray(x).reshape(-1)))
