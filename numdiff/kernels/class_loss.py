"""Cross entropy of (N, C) logits against class indices, forward and first-order gradient in one
pass (CPU, Numba). numdiff.ops.class_loss calls it for the common case (no class weights, no
label smoothing, a 'mean' or 'sum' reduction); the general case stays in NumPy there.

Per row i with target t_i (ignored when t_i == ignore_index):

* ``log_probs[i, c] = x[i, c] - max_i - log(sum_c exp(x[i, c] - max_i))``
* ``coeff[i, c] = -1/D`` at ``c == t_i`` (0 elsewhere, and a whole row of 0 for an ignored entry),
  with ``D`` the count of kept entries for 'mean' (left at 1 when it is 0) and 1 for 'sum'
* ``loss = sum_i -log_probs[i, t_i] / D`` (NaN for 'mean' when every entry is ignored)
* ``coeff_sum[i, 0] = sum_c coeff[i, c]``, ``first_order[i, c] = coeff[i, c] - softmax[i, c] *
  coeff_sum[i, 0]`` (the input gradient for an upstream gradient of 1)

Loop nest: for row; for class (max, then exp and sum, then the outputs). Sums run in float64.
Measured on the digits loss (32x10 float32, the op's whole forward): 10 us against 28 us for
the NumPy form, whose time is the Python around some twenty small NumPy calls.
"""

from __future__ import annotations

import math

import numpy as np

from numdiff.kernels._checks import check_float_arrays, check_shape
from numdiff.kernels._self_healing_cache import njit

__all__ = ["cross_entropy_rows"]


@njit(cache=True, nogil=True)
def _cross_entropy_core(x, target, ignore_index, mean, coeff, coeff_sum, first_order):
    n, classes = x.shape
    kept = 0
    for i in range(n):
        t = target[i]
        if t != ignore_index:
            if t < 0 or t >= classes:
                return -1.0, i  # reported by the caller, which knows the shapes
            kept += 1
    scale = 1.0 / kept if mean and kept > 0 else 1.0
    total = 0.0
    for i in range(n):
        t = target[i]
        row_max = -np.inf
        for c in range(classes):
            v = x[i, c]
            if v > row_max or v != v:
                row_max = v
        sum_exp = 0.0
        for c in range(classes):
            sum_exp += math.exp(x[i, c] - row_max)
        log_sum = math.log(sum_exp)
        weight = 0.0 if t == ignore_index else scale
        safe = 0 if t == ignore_index else t
        if weight != 0.0:
            total += weight * (log_sum - (x[i, safe] - row_max))
        for c in range(classes):
            coeff[i, c] = 0.0
        coeff[i, safe] = -weight
        coeff_sum[i, 0] = -weight
        for c in range(classes):
            first_order[i, c] = coeff[i, c] + math.exp(x[i, c] - row_max) / sum_exp * weight
    if mean and kept == 0:
        return np.nan, -1
    return total, -1


def cross_entropy_rows(
    x: np.ndarray,
    target: np.ndarray,
    ignore_index: int,
    mean: bool,
    coeff: np.ndarray,
    coeff_sum: np.ndarray,
    first_order: np.ndarray,
) -> float:
    """The loss (see the module docstring); fills coeff (N, C), coeff_sum (N, 1) and first_order
    (N, C). x float32/float64 (N, C) with C >= 1, target int64 (N,).

    >>> x = np.zeros((2, 3)); coeff, s, g = np.empty((2, 3)), np.empty((2, 1)), np.empty((2, 3))
    >>> round(cross_entropy_rows(x, np.array([0, 2]), -100, True, coeff, s, g), 6), g[0]
    (1.098612, array([-0.33333333,  0.16666667,  0.16666667]))
    """
    op = "cross_entropy_rows"
    check_float_arrays(op, x=x, coeff=coeff, first_order=first_order, coeff_sum=coeff_sum)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"{op}: x must be (N, C) with C >= 1, got {x.shape}")
    n, classes = x.shape
    if not isinstance(target, np.ndarray) or target.dtype != np.int64 or target.shape != (n,):
        got = f"{target.dtype} {target.shape}" if isinstance(target, np.ndarray) else type(target).__name__
        raise TypeError(f"{op}: target must be an int64 array of shape ({n},), got {got}")
    check_shape(op, "coeff", coeff, (n, classes))
    check_shape(op, "coeff_sum", coeff_sum, (n, 1))
    check_shape(op, "first_order", first_order, (n, classes))
    loss, bad_row = _cross_entropy_core(x, target, int(ignore_index), bool(mean), coeff, coeff_sum, first_order)
    if bad_row >= 0:
        raise IndexError(
            f"{op}: target {int(target[bad_row])} at entry {bad_row} is out of range for {classes} classes"
        )
    return loss
