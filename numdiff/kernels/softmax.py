"""softmax and log_softmax along one axis, forward and first-order backward, one fused pass per
line (CPU, Numba).

The ops (numdiff.ops.activation.Softmax, LogSoftmax) see their input as a C-contiguous view
(outer, n, inner) with the softmax axis in the middle: inner == 1 for the last axis (rows), inner >
1 for any other (columns). With ``m`` a line's maximum and ``s = sum(exp(x - m))``:

    softmax:      out = exp(x - m) / s            dx = out * (grad - sum(grad * out))
    log_softmax:  out = (x - m) - log(s)          dx = grad - exp(out) * sum(grad)

A line holding +inf, or only -inf, has ``x - m`` NaN somewhere, so ``s`` and the whole line are
NaN, as PyTorch's; a NaN anywhere in a line makes the line NaN.

Loop nest. Rows: the rows in parallel (prange); per row three sweeps over its n contiguous
values (the maximum, exp and its sum, the scaling), each innermost and vectorised (exp from
numdiff.kernels._vecmath, sums in float64 under fastmath's reassoc). Columns: jobs of (outer
index, block of up to COLUMN_BLOCK inner columns) in parallel, each keeping its columns' maxima and
sums in small arrays and sweeping the n lines of its block three times with the inner columns
innermost, so every sweep is contiguous and vectorised (an outer loop over columns with the axis
innermost would stride by inner). Backward the same shape with two sweeps. Everything runs
serially below GRAIN_ELEMENTS values or with fewer jobs than threads (numdiff.kernels._parallel).
Per-line scalars are stored to a small array of x's dtype before the last sweep, so that it runs
at x's vector width. Extra memory: one x-dtype value per row; per column job 3 * COLUMN_BLOCK values.

Why: the NumPy form took max, subtract, exp, sum, divide (five passes and two temporaries) and a
backward of four more; (16, 64, 256) float32 forward and backward took 2.3x PyTorch's time (one
thread), and reductions along a middle axis cost NumPy strided passes.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels import _vecmath
from numdiff.kernels._checks import check_float_arrays, check_shape
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

__all__ = ["COLUMN_BLOCK", "softmax_backward", "softmax_forward"]

COLUMN_BLOCK = 512
"""Inner columns per job of the column kernels: enough for full vector sweeps, and (outer *
inner / COLUMN_BLOCK) jobs to share between threads."""

_OPTIONS = dict(nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})


@njit(cache=True, inline="always", nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})
def _row_max(row):
    """max(row) with eight running maxima (one dependent chain of compares ran twice as long); a NaN
    is skipped here and makes the line NaN in the exp sweep."""
    n = row.shape[0]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = row[0]
    n8 = n - n % 8
    for c in range(0, n8, 8):
        v = row[c]
        m0 = v if v > m0 else m0
        v = row[c + 1]
        m1 = v if v > m1 else m1
        v = row[c + 2]
        m2 = v if v > m2 else m2
        v = row[c + 3]
        m3 = v if v > m3 else m3
        v = row[c + 4]
        m4 = v if v > m4 else m4
        v = row[c + 5]
        m5 = v if v > m5 else m5
        v = row[c + 6]
        m6 = v if v > m6 else m6
        v = row[c + 7]
        m7 = v if v > m7 else m7
    for c in range(n8, n):
        v = row[c]
        m0 = v if v > m0 else m0
    return max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))


def _rows_forward(x, out, log, scalars):
    rows, n = x.shape
    for i in prange(rows):
        row = x[i]
        line = out[i]
        m = _row_max(row)
        scalars[i] = 0.0
        total = scalars[i]  # a sum in x's dtype, so that the sweep runs at x's vector width
        if log:
            for c in range(n):
                shifted = row[c] - m
                line[c] = shifted
                total += _vecmath.exp(shifted)
            scalars[i] = np.log(total)
            offset = scalars[i]
            for c in range(n):
                line[c] -= offset
        else:
            for c in range(n):
                e = _vecmath.exp(row[c] - m)
                line[c] = e
                total += e
            scalars[i] = 1.0 / total
            scale = scalars[i]
            for c in range(n):
                line[c] *= scale


def _rows_backward(grad, out, dx, log, scalars):
    rows, n = out.shape
    for i in prange(rows):
        g = grad[i]
        o = out[i]
        d = dx[i]
        scalars[i] = 0.0
        total = scalars[i]
        if log:
            for c in range(n):
                total += g[c]
            for c in range(n):
                d[c] = g[c] - _vecmath.exp(o[c]) * total
        else:
            for c in range(n):
                total += g[c] * o[c]
            for c in range(n):
                d[c] = o[c] * (g[c] - total)


def _columns_forward(x, out, log, block):
    outer, n, inner = x.shape
    blocks = (inner + block - 1) // block
    for job in prange(outer * blocks):
        b = job // blocks
        # Unsigned column indices: with a signed one (from the job's block start) Numba's
        # wraparound select on every load kept the sweeps from vectorising.
        lo = np.uint64((job - b * blocks) * block)
        width = np.uint64(min(block, inner - lo))
        m = x[b, 0, lo : lo + width].copy()
        for j in range(1, n):
            src = x[b, j]
            for k in range(width):
                v = src[lo + k]
                m[k] = v if v > m[k] else m[k]
        total = np.zeros(width, x.dtype)
        for j in range(n):
            src = x[b, j]
            dst = out[b, j]
            if log:
                for k in range(width):
                    shifted = src[lo + k] - m[k]
                    dst[lo + k] = shifted
                    total[k] += _vecmath.exp(shifted)
            else:
                for k in range(width):
                    e = _vecmath.exp(src[lo + k] - m[k])
                    dst[lo + k] = e
                    total[k] += e
        for k in range(width):
            total[k] = np.log(total[k]) if log else 1.0 / total[k]
        for j in range(n):
            dst = out[b, j]
            if log:
                for k in range(width):
                    dst[lo + k] -= total[k]
            else:
                for k in range(width):
                    dst[lo + k] *= total[k]


def _columns_backward(grad, out, dx, log, block):
    outer, n, inner = out.shape
    blocks = (inner + block - 1) // block
    for job in prange(outer * blocks):
        b = job // blocks
        lo = np.uint64((job - b * blocks) * block)  # unsigned, as in _columns_forward
        width = np.uint64(min(block, inner - lo))
        total = np.zeros(width, out.dtype)
        for j in range(n):
            g = grad[b, j]
            o = out[b, j]
            if log:
                for k in range(width):
                    total[k] += g[lo + k]
            else:
                for k in range(width):
                    total[k] += g[lo + k] * o[lo + k]
        for j in range(n):
            g = grad[b, j]
            o = out[b, j]
            d = dx[b, j]
            if log:
                for k in range(width):
                    d[lo + k] = g[lo + k] - _vecmath.exp(o[lo + k]) * total[k]
            else:
                for k in range(width):
                    d[lo + k] = o[lo + k] * (g[lo + k] - total[k])


_ROWS_FORWARD = serial_and_parallel(_rows_forward, **_OPTIONS)
_ROWS_BACKWARD = serial_and_parallel(_rows_backward, **_OPTIONS)
_COLUMNS_FORWARD = serial_and_parallel(_columns_forward, **_OPTIONS)
_COLUMNS_BACKWARD = serial_and_parallel(_columns_backward, **_OPTIONS)


def _jobs(shape: tuple[int, int, int]) -> int:
    outer, _, inner = shape
    return outer if inner == 1 else outer * -(-inner // COLUMN_BLOCK)


def _check(op: str, x: np.ndarray, **arrays: np.ndarray) -> tuple[int, int, int]:
    """x's view as (outer, n, inner), after checking the arrays: a 2-D x is rows (outer, n), inner 1."""
    check_float_arrays(op, x=x, **arrays)
    shape = x.shape
    if len(shape) == 2 and shape[1] >= 1:
        view = shape + (1,)
    elif len(shape) == 3 and shape[1] >= 1:
        view = shape
    else:
        raise ValueError(f"{op}: expected rows (outer, n) or a view (outer, n, inner) with n >= 1, got shape {shape}")
    for name, arr in arrays.items():
        if arr.shape != shape:  # check_shape only to raise: a call per array costs more than the kernel's row
            check_shape(op, name, arr, shape)
    return view


def softmax_forward(x: np.ndarray, out: np.ndarray, log: bool) -> np.ndarray:
    """out (outer, n, inner) <- softmax, or log_softmax if `log`, of x along axis 1; x and out
    may also be rows (outer, n), inner 1, which need no reshape. See the module docstring.

    >>> out = np.empty((1, 2, 1)); _ = softmax_forward(np.zeros((1, 2, 1)), out, False)
    >>> out.ravel().tolist()
    [0.5, 0.5]
    """
    outer, n, inner = _check("softmax_forward", x, out=out)
    if x.size == 0:
        return out
    if inner == 1:
        kernel, _ = _ROWS_FORWARD.pick(x.size, jobs=outer)
        rows_x, rows_out = x, out
        if len(x.shape) == 3:
            rows_x, rows_out = x.reshape(outer, n), out.reshape(outer, n)
        kernel(rows_x, rows_out, bool(log), np.empty(outer, x.dtype))
    else:
        kernel, _ = _COLUMNS_FORWARD.pick(x.size, jobs=_jobs(x.shape))
        kernel(x, out, bool(log), COLUMN_BLOCK)
    return out


def softmax_backward(grad: np.ndarray, out: np.ndarray, dx: np.ndarray, log: bool) -> np.ndarray:
    """dx (outer, n, inner) <- the gradient of softmax_forward's input for `grad`, from its saved
    output `out` (log_softmax's if `log`); rows (outer, n) too, as softmax_forward. See the module
    docstring.

    >>> dx = np.empty((1, 2, 1)); _ = softmax_backward(np.ones((1, 2, 1)), np.full((1, 2, 1), 0.5), dx, False)
    >>> dx.ravel().tolist()
    [0.0, 0.0]
    """
    outer, n, inner = _check("softmax_backward", out, grad=grad, dx=dx)
    if out.size == 0:
        return dx
    if inner == 1:
        kernel, _ = _ROWS_BACKWARD.pick(out.size, jobs=outer)
        rows = grad, out, dx
        if len(out.shape) == 3:
            rows = grad.reshape(outer, n), out.reshape(outer, n), dx.reshape(outer, n)
        kernel(*rows, bool(log), np.empty(outer, out.dtype))
    else:
        kernel, _ = _COLUMNS_BACKWARD.pick(out.size, jobs=_jobs(out.shape))
        kernel(grad, out, dx, bool(log), COLUMN_BLOCK)
    return dx
