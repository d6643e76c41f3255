"""LayerNorm over rows (CPU, Numba): group normalisation's forward and backward for the view
(R, 1, 1, D, 1), one statistic per row of D contiguous values (numdiff.kernels.norm has the
general kernels and the formulas).

Forward per row: the mean and the biased variance by two float64 sums (never E[x^2] - E[x]^2),
``r = 1 / sqrt(var + eps)``, then ``out = (x - mean) * r * w + bias`` in x's dtype. Backward per
row i, with ``xhat = (x - mean_i) * r_i`` and ``dxhat = grad * w``:

    dx[i]  = r_i * (dxhat - sum(dxhat) / D - xhat * sum(dxhat * xhat) / D)
    dw    += grad[i] * xhat,   dbias += grad[i]

Loop nest: forward, the rows in parallel (prange); backward, `parts` blocks of rows in parallel
(prange), each summing dw and dbias into one float64 row of its own (parts, D), added up by NumPy
after. Both run serially, backward as one block, below GRAIN_ELEMENTS values or with fewer rows or
blocks than threads (numdiff.kernels._parallel). Per row two sweeps over its D values (the
sums, then dx), both innermost and contiguous, which LLVM vectorises. Row statistics in x's dtype, sums
in float64. Extra memory: 2 * parts * D float64.

Why not the general kernels: the forward's output sweep ran in float64 (the row's statistics as
float64 scalars), half the vector width for float32; the backward wrote per-row partials of dw and dbias, (R, D) each, summed by
NumPy afterwards (twice the gradient's size written and read again), and its dx loop nest ran
with two trip-count-1 loops inside the loop over D, which stayed scalar. A minGPT LayerNorm
(1024 x 128 float32, one thread) took 451 us against PyTorch's 119 us.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._parallel import serial_and_parallel

__all__ = ["ROWS_PER_PART", "layer_norm_rows_backward", "layer_norm_rows_forward"]

ROWS_PER_PART = 64
"""Rows per parallel block: each block adds its own (D,) partial sums once per row, so fewer,
longer blocks cost less memory and NumPy summing; 64 rows keep 16 blocks at 1024 rows."""

_OPTIONS = dict(nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})


def _forward(x, weight, bias, eps, out, mean, rstd):
    rows, width = x.shape
    for i in prange(rows):
        total = 0.0
        for k in range(width):
            total += x[i, k]
        mu = total / width
        squares = 0.0
        for k in range(width):
            d = x[i, k] - mu
            squares += d * d
        mean[i] = mu
        rstd[i] = 1.0 / np.sqrt(squares / width + eps)
        mu_x, r_x = mean[i], rstd[i]  # in x's dtype, so the output sweep runs at x's width
        for k in range(width):
            out[i, k] = (x[i, k] - mu_x) * r_x * weight[k] + bias[k]


def _backward(grad, x, weight, mean, rstd, dx, dw_parts, db_parts):
    rows, width = x.shape
    parts = dw_parts.shape[0]
    for t in prange(parts):
        dw = dw_parts[t]
        db = db_parts[t]
        dw[:] = 0.0
        db[:] = 0.0
        # The row's two means, stored in x's dtype so that the dx sweep runs at x's width.
        means = np.empty(2, x.dtype)
        for i in range(t * rows // parts, (t + 1) * rows // parts):
            mu = mean[i]
            r = rstd[i]
            sum_dxhat = 0.0
            sum_dxhat_xhat = 0.0
            for k in range(width):
                dy = grad[i, k]
                xhat = (x[i, k] - mu) * r
                db[k] += dy
                dw[k] += dy * xhat
                dxhat = weight[k] * dy
                sum_dxhat += dxhat
                sum_dxhat_xhat += dxhat * xhat
            means[0] = sum_dxhat / width
            means[1] = sum_dxhat_xhat / width
            mean_dxhat, mean_dxhat_xhat = means[0], means[1]
            for k in range(width):
                xhat = (x[i, k] - mu) * r
                dx[i, k] = r * (weight[k] * grad[i, k] - mean_dxhat - xhat * mean_dxhat_xhat)


# Each built serially and in parallel; the wrappers below pick one per call.
_FORWARD = serial_and_parallel(_forward, **_OPTIONS)
_BACKWARD = serial_and_parallel(_backward, **_OPTIONS)


def layer_norm_rows_forward(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float, out: np.ndarray, mean: np.ndarray, rstd: np.ndarray
) -> np.ndarray:
    """out (R, D) <- each row of x (R, D) normalised, scaled by weight (D,) and shifted by bias
    (D,); mean and rstd (R,) <- each row's mean and 1 / sqrt(biased variance + eps).

    Arrays C-contiguous of one float dtype, checked by the caller
    (numdiff.kernels.norm.group_norm_forward, which takes the (R, 1, 1, D, 1) views here).

    >>> x = np.array([[0.0, 2.0]]); out = np.empty_like(x); mean = np.empty(1); rstd = np.empty(1)
    >>> _ = layer_norm_rows_forward(x, np.ones(2), np.zeros(2), 0.0, out, mean, rstd)
    >>> out.tolist(), mean.tolist(), rstd.tolist()
    ([[-1.0, 1.0]], [1.0], [1.0])
    """
    kernel, _ = _FORWARD.pick(x.size, jobs=x.shape[0])
    kernel(x, weight, bias, float(eps), out, mean, rstd)
    return out


def layer_norm_rows_backward(
    grad: np.ndarray, x: np.ndarray, weight: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
    dx: np.ndarray, dweight: np.ndarray, dbias: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """dx (R, D), dweight and dbias (D,) <- the gradients of a row normalisation's output for
    `grad` (R, D), from x (R, D), weight (D,) and the forward's mean and rstd (R,).

    Arrays C-contiguous of one float dtype, checked by the caller
    (numdiff.kernels.norm.group_norm_backward, which takes the (R, 1, 1, D, 1) views here).

    >>> x = np.array([[0.0, 2.0]]); dx = np.empty_like(x); dw = np.empty(2); db = np.empty(2)
    >>> _ = layer_norm_rows_backward(np.array([[1.0, 0.0]]), x, np.ones(2), np.ones(1), np.ones(1), dx, dw, db)
    >>> dx.tolist(), dw.tolist(), db.tolist()
    ([[0.0, 0.0]], [-1.0, 0.0], [1.0, 0.0])
    """
    rows, width = x.shape
    parts = max(1, min(rows, -(-rows // ROWS_PER_PART)))
    kernel, threads = _BACKWARD.pick(x.size, jobs=parts)
    if threads == 1:
        parts = 1  # one block on the calling thread: one row of partial sums to add up
    sums = np.empty((2, parts, width), np.float64)
    kernel(grad, x, weight, mean, rstd, dx, sums[0], sums[1])
    dweight[...] = sums[0].sum(axis=0)
    dbias[...] = sums[1].sum(axis=0)
    return dx
