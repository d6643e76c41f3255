"""BatchNorm over columns (CPU, Numba): group normalisation's forward, moments and backward for the
view (1, N, C, 1, 1), one statistic per column of an (N, C) array (numdiff.kernels.norm has the
general kernels and the formulas).

BatchNorm1d on (N, C) input (an MLP's batch norm) normalises each channel over the batch, and the
channel is the fast axis: the general kernel, one (b, g) group per job, walked each column with a
stride of C and trip-count-1 inner loops (1024 x 512 float32, one thread: forward 6.8 ms against
PyTorch's 0.30). Here every sweep runs over whole rows, the column statistics kept as float64
vectors, so the innermost loop is contiguous over channels and LLVM vectorises it.

Forward per column c: the mean and the biased variance by two float64 sums over the rows (never
E[x^2] - E[x]^2), ``r = 1 / sqrt(var + eps)``, then ``out = (x - mean) * r * w + bias``: the
general kernel's expressions, each column's sums in row order as there. Backward per column, with
``xhat = (x - mean) * r``:

    dbias = sum grad,   dw = sum grad * xhat
    dx    = w r grad + c1 x + c0,   c1 = -r^2 w dw / N,   c0 = -r w dbias / N - c1 mean

Loop nest: blocks of columns in parallel (prange over `parts` equal contiguous blocks, one a thread; serial below
GRAIN_ELEMENTS values, with fewer than MIN_BLOCK columns a thread, or at one thread), per block
row-major sweeps (two for the moments, one more for the output; two for the backward), innermost
over the block's columns. Extra memory: four float64 vectors of the block's width per block.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from numdiff.kernels._parallel import contiguous_run, serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

__all__ = ["MIN_BLOCK", "batch_norm_columns_backward", "batch_norm_columns_forward", "batch_norm_columns_moments"]

MIN_BLOCK = 16
"""Fewest columns a parallel block takes: a shorter run per row is too short to vectorise."""

_OPTIONS = dict(nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})


@njit(inline="always", cache=True, nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})
def _column_moments(x, c0, c1):
    """(mean, biased variance) float64 vectors of columns c0:c1 of x (N, C), two passes."""
    n_count = x.shape[0]
    total = np.zeros(c1 - c0)
    for n in range(n_count):
        row = x[n, c0:c1]
        for j in range(row.shape[0]):
            total[j] += row[j]
    mu = total / n_count
    squares = np.zeros(c1 - c0)
    for n in range(n_count):
        row = x[n, c0:c1]
        for j in range(row.shape[0]):
            d = row[j] - mu[j]
            squares[j] += d * d
    return mu, squares / n_count


def _moments(x, moments, parts):
    for part in prange(parts):
        c0, c1 = contiguous_run(x.shape[1], parts, part)
        if c0 < c1:
            mu, var = _column_moments(x, c0, c1)
            moments[0, c0:c1] = mu
            moments[1, c0:c1] = var


def _forward(x, weight, bias, eps, out, mean, rstd, parts):
    for part in prange(parts):
        c0, c1 = contiguous_run(x.shape[1], parts, part)
        if c0 >= c1:
            continue
        mu, var = _column_moments(x, c0, c1)
        r = np.empty(c1 - c0)
        for j in range(c1 - c0):
            r[j] = 1.0 / math.sqrt(var[j] + eps)
        mean[c0:c1] = mu
        rstd[c0:c1] = r
        w = weight[c0:c1]
        b = bias[c0:c1]
        for n in range(x.shape[0]):
            row = x[n, c0:c1]
            target = out[n, c0:c1]
            for j in range(row.shape[0]):
                target[j] = (row[j] - mu[j]) * r[j] * w[j] + b[j]


def _backward(grad, x, weight, mean, rstd, dx, dweight, dbias, parts):
    n_count = x.shape[0]
    for part in prange(parts):
        c0, c1 = contiguous_run(x.shape[1], parts, part)
        if c0 >= c1:
            continue
        mu = mean[c0:c1].astype(np.float64)
        r = rstd[c0:c1].astype(np.float64)
        sum_dy = np.zeros(c1 - c0)
        sum_dy_xhat = np.zeros(c1 - c0)
        for n in range(n_count):
            dy_row = grad[n, c0:c1]
            x_row = x[n, c0:c1]
            for j in range(dy_row.shape[0]):
                dy = dy_row[j]
                sum_dy[j] += dy
                sum_dy_xhat[j] += dy * (x_row[j] - mu[j]) * r[j]
        w = weight[c0:c1].astype(np.float64)
        w_r = w * r
        c1_coef = -r * r * w * sum_dy_xhat / n_count
        c0_coef = -r * w * sum_dy / n_count - c1_coef * mu
        dweight[c0:c1] = sum_dy_xhat
        dbias[c0:c1] = sum_dy
        for n in range(n_count):
            dy_row = grad[n, c0:c1]
            x_row = x[n, c0:c1]
            target = dx[n, c0:c1]
            for j in range(dy_row.shape[0]):
                target[j] = w_r[j] * dy_row[j] + c1_coef[j] * x_row[j] + c0_coef[j]


# Each built serially and in parallel (numdiff.kernels._parallel); _parts chooses per call.
_MOMENTS = serial_and_parallel(_moments, **_OPTIONS)
_FORWARD = serial_and_parallel(_forward, **_OPTIONS)
_BACKWARD = serial_and_parallel(_backward, **_OPTIONS)


def _pick(pair, x: np.ndarray) -> tuple:
    """(kernel, parts): one block of columns a thread where each gets at least MIN_BLOCK columns
    and there are GRAIN_ELEMENTS values, else the serial build over one block."""
    return pair.pick(x.size, jobs=x.shape[1] // MIN_BLOCK)


def batch_norm_columns_forward(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float, out: np.ndarray, mean: np.ndarray, rstd: np.ndarray
) -> np.ndarray:
    """out (N, C) <- each column of x (N, C) normalised, scaled by weight (C,) and shifted by bias
    (C,); mean and rstd (C,) <- each column's mean and 1 / sqrt(biased variance + eps).

    Arrays C-contiguous of one float dtype, checked by the caller
    (numdiff.kernels.norm.group_norm_forward, which takes the (1, N, C, 1, 1) views here).

    >>> x = np.array([[0.0, 1.0], [2.0, 5.0]]); out = np.empty_like(x); mean = np.empty(2); rstd = np.empty(2)
    >>> _ = batch_norm_columns_forward(x, np.ones(2), np.zeros(2), 0.0, out, mean, rstd)
    >>> out.tolist(), mean.tolist(), rstd.tolist()
    ([[-1.0, -1.0], [1.0, 1.0]], [1.0, 3.0], [1.0, 0.5])
    """
    kernel, parts = _pick(_FORWARD, x)
    kernel(x, weight, bias, float(eps), out, mean, rstd, parts)
    return out


def batch_norm_columns_moments(x: np.ndarray, moments: np.ndarray) -> np.ndarray:
    """moments (2, C) <- each column's mean and biased variance, by the forward's two passes.

    >>> batch_norm_columns_moments(np.array([[0.0, 1.0], [2.0, 1.0]]), np.empty((2, 2))).tolist()
    [[1.0, 1.0], [1.0, 0.0]]
    """
    kernel, parts = _pick(_MOMENTS, x)
    kernel(x, moments, parts)
    return moments


def batch_norm_columns_backward(
    grad: np.ndarray, x: np.ndarray, weight: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
    dx: np.ndarray, dweight: np.ndarray, dbias: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """dx (N, C), dweight and dbias (C,) <- the gradients of a column normalisation's output for
    `grad` (N, C), from x, weight (C,) and the forward's mean and rstd (C,).

    >>> x = np.array([[0.0], [2.0]]); dx = np.empty_like(x); dw = np.empty(1); db = np.empty(1)
    >>> _ = batch_norm_columns_backward(np.array([[1.0], [0.0]]), x, np.ones(1), np.ones(1), np.ones(1), dx, dw, db)
    >>> dx.ravel().tolist(), dw.tolist(), db.tolist()
    ([0.0, 0.0], [-1.0], [1.0])
    """
    kernel, parts = _pick(_BACKWARD, x)
    kernel(grad, x, weight, mean, rstd, dx, dweight, dbias, parts)
    return dx
