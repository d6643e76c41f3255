"""Resampling along one axis: every output row a weighted sum of a few input rows (interpolate's
nearest, linear and cubic modes), and its adjoint.

Layout: x (B, D, R): the resized axis is the middle one; B gathers the dims before it and R the
dims after it, so one kernel serves every axis of a 3-, 4- or 5-D input. `index` (O, K) int64
holds the K source rows of each of the O output rows and `weight` (O, K) their weights (in x's
dtype, as PyTorch computes them):

    forward:  out[b, o, r]  = sum_k weight[o, k] * x[b, index[o, k], r]
    adjoint:  grad_in[b, i, r] = sum over (o, k) with index[o, k] == i of weight[o, k] * g[b, o, r]

The adjoint's loop nest scatters within one b, so splitting the jobs over b is race-free. Each is
the other's backward. Extra memory: none. Measured against what interpolate ran before (an
index_select per tap, whose backward is NumPy's ``np.add.at``, 96 ms of a 128 ms bilinear x2
forward and backward on 32x64x16x16 float32, one thread): see benchmarks/RESULTS.md.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._checks import check_disjoint, check_float_arrays
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

__all__ = ["axis_blend_adjoint", "axis_blend_forward"]


def _blend_forward_core(x, index, weight, out, parts):
    batch, rows, width = out.shape
    taps = index.shape[1]
    for p in prange(parts):
        for b in range(p * batch // parts, (p + 1) * batch // parts):
            for o in range(rows):
                w = weight[o, 0]
                i = index[o, 0]
                for r in range(width):
                    out[b, o, r] = w * x[b, i, r]
                for k in range(1, taps):
                    w = weight[o, k]
                    i = index[o, k]
                    for r in range(width):
                        out[b, o, r] += w * x[b, i, r]


def _blend_last_forward_core(x, index, weight, out, parts):
    # The last axis (R == 1): each output a sum held in a register.
    batch, rows = out.shape
    taps = index.shape[1]
    for p in prange(parts):
        for b in range(p * batch // parts, (p + 1) * batch // parts):
            for o in range(rows):
                total = weight[o, 0] * x[b, index[o, 0]]
                for k in range(1, taps):
                    total += weight[o, k] * x[b, index[o, k]]
                out[b, o] = total


def _blend_adjoint_core(g, index, weight, grad_in, parts):
    batch, rows, width = g.shape
    source_rows = grad_in.shape[1]
    taps = index.shape[1]
    for p in prange(parts):
        for b in range(p * batch // parts, (p + 1) * batch // parts):
            for i in range(source_rows):
                for r in range(width):
                    grad_in[b, i, r] = 0
            for o in range(rows):
                for k in range(taps):
                    w = weight[o, k]
                    i = index[o, k]
                    for r in range(width):
                        grad_in[b, i, r] += w * g[b, o, r]


def _blend_last_adjoint_core(g, index, weight, grad_in, parts):
    # With one tap whose source rows run on in steps of one (a pad's interior, a crop: see
    # _unit_runs), a run at a time: a run's rows are distinct, so its loop vectorises instead of
    # adding to one element at a time, and each input row still gathers its shares in the order of o.
    batch, rows = g.shape
    source_rows = grad_in.shape[1]
    taps = index.shape[1]
    bounds = np.empty(rows + 1, np.int64)
    runs = _unit_runs(index, bounds) if taps == 1 else rows
    for p in prange(parts):
        for b in range(p * batch // parts, (p + 1) * batch // parts):
            for i in range(source_rows):
                grad_in[b, i] = 0
            if RUN_MIN_LENGTH * runs <= rows:
                for run in range(runs):
                    o0, o1 = bounds[run], bounds[run + 1]
                    dst = grad_in[b, index[o0, 0] : index[o0, 0] + o1 - o0]
                    src = g[b, o0:o1]
                    w = weight[o0:o1, 0]
                    for t in range(o1 - o0):
                        dst[t] += w[t] * src[t]
                continue
            if taps == 1 and rows:
                # Outputs reading one row in a row (nearest upsampling: 0, 0, 1, 1, ...) add to a
                # register, stored once: the same additions in the same order, without each
                # waiting for the last one's store.
                row = index[0, 0]
                total = grad_in[b, row]
                for o in range(rows):
                    if index[o, 0] != row:
                        grad_in[b, row] = total
                        row = index[o, 0]
                        total = grad_in[b, row]
                    total += weight[o, 0] * g[b, o]
                grad_in[b, row] = total
                continue
            for o in range(rows):
                share = g[b, o]
                for k in range(taps):
                    grad_in[b, index[o, k]] += weight[o, k] * share


RUN_MIN_LENGTH = 4
"""Mean run length (output rows) from which the last-axis adjoint adds runs instead of one
element at a time: shorter runs cost a loop set-up per few elements. Measured (one thread, thread
CPU time, float32, B x width, before -> after): reflect pad by 3 of 4096 x 64 0.325 -> 0.197 ms,
by 4 of 8192 x 128 1.19 -> 0.62, by 1 of 8192 x 16 0.162 -> 0.137; a crop 0.242 -> 0.122. The
forward stays a gather: runs there lost (reflect by 3 of 4096 x 64: 0.116 -> 0.157 ms), its
edge runs of one element each costing a loop set-up."""


@njit(cache=True, nogil=True)
def _unit_runs(index, bounds):
    """Split a one-tap table's outputs into runs whose source rows go up by one from output to
    output: run r is outputs ``bounds[r] .. bounds[r+1]-1``, reading rows from ``index[bounds[r], 0]``
    on. Returns the number of runs. A reflect pad of 64 by 3: 7 runs (3 + 1 + 3 of its edges)."""
    rows = index.shape[0]
    runs = 0
    bounds[0] = 0
    for o in range(1, rows):
        if index[o, 0] != index[o - 1, 0] + 1:
            runs += 1
            bounds[runs] = o
    if rows:
        runs += 1
        bounds[runs] = rows
    return runs


# Each core as a serial and a parallel build, picked per call by size (numdiff.kernels._parallel).
_blend_forward_core = serial_and_parallel(_blend_forward_core, nogil=True)
_blend_last_forward_core = serial_and_parallel(_blend_last_forward_core, nogil=True)
_blend_adjoint_core = serial_and_parallel(_blend_adjoint_core, nogil=True)
_blend_last_adjoint_core = serial_and_parallel(_blend_last_adjoint_core, nogil=True)


def check_blend(op: str, source_rows: int, index: np.ndarray, weight: np.ndarray, dtype: np.dtype) -> None:
    """index (O, K) int64 within [0, source_rows) and weight (O, K) of the arrays' dtype (host arrays,
    on every backend: they are bookkeeping, worked out once on the host)."""
    if index.dtype != np.int64 or index.ndim != 2 or weight.shape != index.shape:
        raise ValueError(
            f"{op}: index must be (O, K) int64 and weight the same shape, got index {index.dtype} {index.shape}, "
            f"weight {weight.shape}"
        )
    if weight.dtype != dtype:
        raise TypeError(f"{op}: weight must have the arrays' dtype {dtype}, got {weight.dtype}")
    if index.size and (index.min() < 0 or index.max() >= source_rows):
        raise ValueError(f"{op}: index must lie in [0, {source_rows}), got values {index.min()}..{index.max()}")


def axis_blend_forward(x: np.ndarray, index: np.ndarray, weight: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out (B, O, R) = the rows of x (B, D, R) that `index` (O, K) picks, weighted by `weight` (O, K).

    Loop nest: prange over parts of B; for b; for o; for k; for r (contiguous); where R == 1, a
    2-D core sums the taps in a register.

    >>> axis_blend_forward(np.arange(3.0).reshape(1, 3, 1), np.array([[0, 2]]), np.array([[0.5, 0.5]]),
    ...                    np.empty((1, 1, 1)))[0, 0, 0]
    1.0
    """
    op = "axis_blend_forward"
    check_float_arrays(op, x=x, out=out)
    if x.ndim != 3 or out.shape != (x.shape[0], index.shape[0], x.shape[2]):
        raise ValueError(f"{op}: x must be (B, D, R) and out (B, O, R) with O = {index.shape[0]}, got {x.shape}, {out.shape}")
    check_blend(op, x.shape[1], index, weight, x.dtype)
    check_disjoint(op, {"out": out}, {"x": x})
    if x.shape[2] == 1:
        kernel, parts = _blend_last_forward_core.pick(out.size * index.shape[1], jobs=x.shape[0])
        kernel(x[:, :, 0], index, weight, out[:, :, 0], parts)
    else:
        kernel, parts = _blend_forward_core.pick(out.size * index.shape[1], jobs=x.shape[0])
        kernel(x, index, weight, out, parts)
    return out


def axis_blend_adjoint(grad_out: np.ndarray, index: np.ndarray, weight: np.ndarray, grad_in: np.ndarray) -> np.ndarray:
    """grad_in (B, D, R), overwritten, = the adjoint of :func:`axis_blend_forward` applied to grad_out (B, O, R).

    Loop nest: prange over parts of B; for b (zero its rows); for o; for k; for r (contiguous).

    >>> axis_blend_adjoint(np.ones((1, 1, 1)), np.array([[0, 2]]), np.array([[0.5, 0.5]]),
    ...                    np.empty((1, 3, 1)))[0, :, 0]
    array([0.5, 0. , 0.5])
    """
    op = "axis_blend_adjoint"
    check_float_arrays(op, grad_out=grad_out, grad_in=grad_in)
    if grad_in.ndim != 3 or grad_out.shape != (grad_in.shape[0], index.shape[0], grad_in.shape[2]):
        raise ValueError(
            f"{op}: grad_in must be (B, D, R) and grad_out (B, O, R) with O = {index.shape[0]}, "
            f"got {grad_in.shape}, {grad_out.shape}"
        )
    check_blend(op, grad_in.shape[1], index, weight, grad_in.dtype)
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out})
    if grad_in.shape[2] == 1:
        kernel, parts = _blend_last_adjoint_core.pick(grad_out.size * index.shape[1], jobs=grad_in.shape[0])
        kernel(grad_out[:, :, 0], index, weight, grad_in[:, :, 0], parts)
    else:
        kernel, parts = _blend_adjoint_core.pick(grad_out.size * index.shape[1], jobs=grad_in.shape[0])
        kernel(grad_out, index, weight, grad_in, parts)
    return grad_in
