"""CUDA twins of numdiff.kernels.resample: resampling along the middle axis of (B, D, R) arrays,
out[b, o, r] = sum_k weight[o, k] * x[b, index[o, k], r], and its adjoint.

The forward runs one thread per output element. The adjoint runs one thread per (b, o, r) of the
gradient and adds each tap with an atomic add into the zeroed input gradient (a source row is read
by a varying number of outputs, so a gather would need the inverse map). The (O, K) index and
weight tables are host bookkeeping, uploaded per call (a few hundred bytes).
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from numdiff.cuda.kernels._checks import check_disjoint, check_float_arrays, flat
from numdiff.cuda.kernels._index import grid_1d
from numdiff.kernels.resample import check_blend

__all__ = ["axis_blend_adjoint", "axis_blend_forward"]


@cuda.jit
def axis_blend_kernel(x, index, weight, out, source_rows, rows, width, taps, n):
    """out[t] for t = (b, o, r) < n: the weighted taps of x's rows."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = t % width
        o = (t // width) % rows
        b = t // (width * rows)
        total = 0.0
        for k in range(taps):
            total += weight[o * taps + k] * x[(b * source_rows + index[o * taps + k]) * width + r]
        out[t] = total


@cuda.jit
def axis_blend_adjoint_kernel(g, index, weight, grad_in, source_rows, rows, width, taps, n):
    """grad_in[b, index[o, k], r] += weight[o, k] * g[t] for t = (b, o, r) < n (grad_in zeroed)."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = t % width
        o = (t // width) % rows
        b = t // (width * rows)
        for k in range(taps):
            cuda.atomic.add(grad_in, (b * source_rows + index[o * taps + k]) * width + r, weight[o * taps + k] * g[t])


def _tables(index: np.ndarray, weight: np.ndarray) -> tuple:
    return cuda.to_device(np.ascontiguousarray(index).reshape(-1)), cuda.to_device(np.ascontiguousarray(weight).reshape(-1))


def axis_blend_forward(x, index, weight, out):
    """out (B, O, R) = the rows of x (B, D, R) that `index` (O, K) picks, weighted by `weight` (O, K);
    one thread per output element."""
    op = "axis_blend_forward"
    check_float_arrays(op, x=x, out=out)
    if x.ndim != 3 or out.shape != (x.shape[0], index.shape[0], x.shape[2]):
        raise ValueError(f"{op}: x must be (B, D, R) and out (B, O, R) with O = {index.shape[0]}, got {x.shape}, {out.shape}")
    check_blend(op, x.shape[1], index, weight, x.dtype)
    check_disjoint(op, {"out": out}, {"x": x})
    if out.size:
        blocks, threads = grid_1d(out.size)
        axis_blend_kernel[blocks, threads](
            flat(x), *_tables(index, weight), flat(out), x.shape[1], out.shape[1], out.shape[2], index.shape[1], out.size
        )
    return out


def axis_blend_adjoint(grad_out, index, weight, grad_in):
    """grad_in (B, D, R), overwritten, = the adjoint of :func:`axis_blend_forward` applied to
    grad_out (B, O, R); one thread per gradient element, atomic adds."""
    op = "axis_blend_adjoint"
    check_float_arrays(op, grad_out=grad_out, grad_in=grad_in)
    if grad_in.ndim != 3 or grad_out.shape != (grad_in.shape[0], index.shape[0], grad_in.shape[2]):
        raise ValueError(
            f"{op}: grad_in must be (B, D, R) and grad_out (B, O, R) with O = {index.shape[0]}, "
            f"got {grad_in.shape}, {grad_out.shape}"
        )
    check_blend(op, grad_in.shape[1], index, weight, grad_in.dtype)
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out})
    grad_in[...] = 0
    if grad_out.size:
        blocks, threads = grid_1d(grad_out.size)
        axis_blend_adjoint_kernel[blocks, threads](
            flat(grad_out), *_tables(index, weight), flat(grad_in), grad_in.shape[1], grad_out.shape[1],
            grad_out.shape[2], index.shape[1], grad_out.size,
        )
    return grad_in
