"""Cross entropy of (N, C) logits at integer class targets, forward and first-order gradient in
one compiled pass (CPU, Numba).

The op (numdiff.ops.class_loss.CrossEntropy) takes this path for a classifier's usual loss: 2-D
float32/float64 logits, no class weights, no label smoothing. With ``lse_i = m_i + log(sum_c
exp(x[i, c] - m_i))`` (``m_i`` the row's maximum) and ``D`` the 'mean' divisor (the number of
entries whose target is not ignore_index; 1 for 'sum' and 'none'):

    per_entry[i]   = -(x[i, t_i] - lse_i)                    (0 where t_i == ignore_index)
    coeff[i, c]    = -w_i / D at c == t_i, else 0            (w_i = 0 where ignored, else 1)
    coeff_sum[i]   = -w_i / D
    first_order    = coeff - softmax(x) * coeff_sum          (d loss / d x, before the upstream grad)

These are the values the general NumPy form computes (ops/class_loss.py explains them); it
spent some twenty NumPy calls on them, and reductions along a short class axis are slow in
NumPy, so for a (256, 10) batch the loss took 45 us against 3 here. D = 0 (every entry ignored)
leaves the coefficients at 0; the caller then divides the loss 0 by 0 to NaN, as PyTorch.

Loop nest: targets once (validated and counted, for D), then rows i (serial: the work is N*C,
tiny next to a parallel region's start-up) with classes c three times: the maximum, the
exponentials (kept in first_order) and their sum, then the outputs. One exp per element, in the
logits' precision (a second exp per element, or float64 exps, doubled the time), from
numdiff.kernels._vecmath so that the loop vectorises (error_model="numpy"); sums in float64 with
four running sums, rounded once on store. (700, 1000) float32, one thread: 5.1 ms with the C
library's exp and one running sum, 1.7 ms so (PyTorch's forward and backward: 2.7-3.1 ms). The
maximum in eight running maxima (softmax's: one running maximum is a chain of compares that LLVM
does not vectorise, 0.83 of these 1.7 ms at (560, 1000)) and the loop in 512-bit vectors (its exp
is compute-bound: 0.69 -> 0.39 ms) took (560, 1000) from 2.39 to 1.26-1.60 ms (thread CPU time,
loaded machine, 2026-12-07; PyTorch's forward and backward 2.4); the values are the same bits.
Extra memory: none. Targets are checked inside the first pass
and an out-of-range one is reported by its row before anything is written (the functional
checks them earlier with a fuller message; this guards direct calls of the op).
"""

from __future__ import annotations

import math

import numpy as np

from numdiff.kernels import _vecmath
from numdiff.kernels._checks import check_float_arrays, check_index_array, check_shape
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath64 import wide_vectors
from numdiff.kernels.softmax import _row_max  # eight running maxima: one chain of compares is not vectorised

__all__ = ["cross_entropy_rows", "nll_loss_rows"]


@njit(cache=True, nogil=True, error_model="numpy")
def _row_sum64(row):
    """sum(row) in float64 with four running sums (one chain of dependent adds ran 4x slower)."""
    s0 = s1 = s2 = s3 = 0.0
    n4 = row.shape[0] - row.shape[0] % 4
    for c in range(0, n4, 4):
        s0 += row[c]
        s1 += row[c + 1]
        s2 += row[c + 2]
        s3 += row[c + 3]
    for c in range(n4, row.shape[0]):
        s0 += row[c]
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True, inline="always")
def _kept_targets(target, ignore_index, classes):
    """(entries not ignored, -1), or (0, the first row whose target is outside [0, classes))."""
    kept = 0
    for i in range(target.shape[0]):
        t = target[i]
        if t != ignore_index:
            if t < 0 or t >= classes:
                return 0, i
            kept += 1
    return kept, -1


@njit(cache=True, nogil=True, error_model="numpy")
def _cross_entropy_rows(x, target, ignore_index, mean, per_entry, coeff, coeff_sum, first_order):
    """Returns (kept entries, sum of per_entry in float64, -1), or (0, 0.0, the first row whose
    target is out of range)."""
    wide_vectors()  # see the module docstring
    n, classes = x.shape
    kept, bad = _kept_targets(target, ignore_index, classes)
    if bad >= 0:
        return 0, 0.0, bad
    divisor = float(kept) if mean and kept > 0 else 1.0
    total = 0.0
    for i in range(n):
        row = x[i]
        exps = first_order[i]
        m = _row_max(row)
        for c in range(classes):
            exps[c] = _vecmath.exp(row[c] - m)  # in x's precision, vectorised
        s = _row_sum64(exps)
        t = target[i]
        weight = 0.0 if t == ignore_index else 1.0
        scale = -weight / divisor
        coeff_sum[i, 0] = scale
        factor = -scale / s  # softmax(x)[i, c] * -scale = exp(x[i, c] - m) * factor
        coeff[i, :] = 0.0
        for c in range(classes):
            exps[c] *= factor
        if weight != 0.0:
            loss = -(row[t] - m - math.log(s))
            per_entry[i] = loss
            total += loss
            coeff[i, t] = scale
            exps[t] += scale
        else:
            per_entry[i] = 0.0
    return kept, total, -1


@njit(cache=True, nogil=True, error_model="numpy")
def _nll_loss_rows(log_probs, target, ignore_index, mean, per_entry, coeff):
    """Returns (kept entries, sum of per_entry in float64, -1), or (0, 0.0, the first row whose
    target is out of range)."""
    n, classes = log_probs.shape
    kept, bad = _kept_targets(target, ignore_index, classes)
    if bad >= 0:
        return 0, 0.0, bad
    scale = -1.0 / (float(kept) if mean and kept > 0 else 1.0)
    total = 0.0
    for i in range(n):
        coeff[i, :] = 0.0
        t = target[i]
        if t == ignore_index:
            per_entry[i] = 0.0
        else:
            loss = -log_probs[i, t]
            per_entry[i] = loss
            total += loss
            coeff[i, t] = scale
    return kept, total, -1


def nll_loss_rows(
    log_probs: np.ndarray, target: np.ndarray, ignore_index: int, mean: bool
) -> tuple[np.ndarray, float, int, np.ndarray]:
    """(per_entry (N,), its sum (a float64 sum, rounded once), kept count, coeff (N, C)) of the
    negative log likelihood of log-probabilities (N, C) at int64 targets (N,), without class
    weights: ``per_entry[i] = -log_probs[i, t_i]`` and ``coeff[i, t_i] = -1 / D``, 0 where t_i is
    ignore_index (D: the kept count for 'mean', else 1). One pass over the targets to check and
    count them, one to write; numdiff.ops.class_loss.NllLoss spent a dozen NumPy calls on these.

    >>> per_entry, total, kept, coeff = nll_loss_rows(np.log(np.full((2, 2), 0.5)), np.array([0, -100]), -100, True)
    >>> per_entry.round(4).tolist(), round(total, 4), kept, coeff.tolist()
    ([0.6931, 0.0], 0.6931, 1, [[-1.0, 0.0], [0.0, 0.0]])
    """
    check_float_arrays("nll_loss_rows", log_probs=log_probs)
    check_index_array("nll_loss_rows", "target", target)
    if log_probs.ndim != 2 or log_probs.shape[1] < 1:
        raise ValueError(f"nll_loss_rows: log_probs must be (N, C) with C >= 1, got shape {log_probs.shape}")
    if target.shape != log_probs.shape[:1]:  # check_shape only to raise: the call costs more than the kernel's row
        check_shape("nll_loss_rows", "target", target, (log_probs.shape[0],))
    per_entry = np.empty(log_probs.shape[0], log_probs.dtype)
    coeff = np.empty(log_probs.shape, log_probs.dtype)
    kept, total, bad_row = _nll_loss_rows(log_probs, target, ignore_index, mean, per_entry, coeff)
    if bad_row >= 0:
        raise IndexError(
            f"nll_loss: target {int(target[bad_row])} (entry {bad_row}) is out of bounds: class "
            f"indices must be in [0, {log_probs.shape[1] - 1}] (or equal ignore_index={ignore_index})"
        )
    return per_entry, total, kept, coeff


def cross_entropy_rows(
    x: np.ndarray, target: np.ndarray, ignore_index: int, mean: bool
) -> tuple[np.ndarray, float, int, np.ndarray, np.ndarray, np.ndarray]:
    """(per_entry (N,), its sum (a float64 sum, rounded once), kept count, coeff (N, C),
    coeff_sum (N, 1), first_order (N, C)) of the cross entropy of logits x (N, C) at int64
    targets (N,); see the module docstring.

    >>> x = np.zeros((2, 3)); t = np.array([0, 2])
    >>> per_entry, total, kept, *_ = cross_entropy_rows(x, t, -100, True)
    >>> per_entry.round(4).tolist(), round(total, 4), kept
    ([1.0986, 1.0986], 2.1972, 2)
    """
    check_float_arrays("cross_entropy_rows", x=x)
    check_index_array("cross_entropy_rows", "target", target)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"cross_entropy_rows: x must be (N, C) with C >= 1, got shape {x.shape}")
    if target.shape != x.shape[:1]:  # check_shape only to raise: the call costs more than the kernel's row
        check_shape("cross_entropy_rows", "target", target, (x.shape[0],))
    per_entry = np.empty(x.shape[0], x.dtype)
    coeff = np.empty(x.shape, x.dtype)
    coeff_sum = np.empty((x.shape[0], 1), x.dtype)
    first_order = np.empty(x.shape, x.dtype)
    kept, total, bad_row = _cross_entropy_rows(
        x, target, ignore_index, mean, per_entry, coeff, coeff_sum, first_order
    )
    if bad_row >= 0:
        raise IndexError(
            f"cross_entropy: target {int(target[bad_row])} (entry {bad_row}) is out of bounds: class "
            f"indices must be in [0, {x.shape[1] - 1}] (or equal ignore_index={ignore_index})"
        )
    return per_entry, total, kept, coeff, coeff_sum, first_order
