"""softmax and log_softmax along axis 1 of an (outer, n, inner) view on CUDA: the twins of
numdiff.kernels.softmax (same arguments, formulas and NaN behaviour documented there).

One thread per line (o, :, i) sweeps its n values three times forward (maximum, exp and its
float64 sum, scaling) and twice backward (the sum, then dx). Grid: ceil(outer * inner / THREADS)
blocks of THREADS threads; threads next to each other take neighbouring inner columns, so column
lines read coalesced. Every launcher checks its arrays (types, dtype, device, layout, shapes)
before the launch.
"""

from __future__ import annotations

import math
from typing import Any

from numba import cuda

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels._checks import check_float_arrays, check_shape, flat

__all__ = ["softmax_backward", "softmax_forward"]

THREADS = 128


@cuda.jit
def _forward(x, out, log, lines, n, inner):
    line = cuda.grid(1)
    if line >= lines:
        return
    base = (line // inner) * n * inner + line % inner
    m = x[base]
    for j in range(1, n):
        m = max(m, x[base + j * inner])
    total = 0.0
    for j in range(n):
        total += math.exp(x[base + j * inner] - m)
    for j in range(n):
        at = base + j * inner
        if log:
            out[at] = (x[at] - m) - math.log(total)
        else:
            out[at] = math.exp(x[at] - m) / total


@cuda.jit
def _backward(grad, out, dx, log, lines, n, inner):
    line = cuda.grid(1)
    if line >= lines:
        return
    base = (line // inner) * n * inner + line % inner
    total = 0.0
    for j in range(n):
        at = base + j * inner
        total += grad[at] if log else grad[at] * out[at]
    for j in range(n):
        at = base + j * inner
        if log:
            dx[at] = grad[at] - math.exp(out[at]) * total
        else:
            dx[at] = out[at] * (grad[at] - total)


def _launch(kernel: Any, lines: int, device: Any, *args: Any) -> None:
    with cuda.gpus[getattr(device, "index", None) or 0]:
        kernel[(lines + THREADS - 1) // THREADS, THREADS](*args)


def _check(op: str, x: CudaArray, **arrays: CudaArray) -> tuple[int, int, int]:
    """x's view as (outer, n, inner), after checking the arrays: a 2-D x is rows (outer, n), inner 1."""
    check_float_arrays(op, x=x, **arrays)
    if x.ndim not in (2, 3) or x.shape[1] < 1:
        raise ValueError(f"{op}: expected rows (outer, n) or a view (outer, n, inner) with n >= 1, got shape {x.shape}")
    for name, arr in arrays.items():
        check_shape(op, name, arr, x.shape)
    return tuple(x.shape) + (1,) * (3 - x.ndim)


def softmax_forward(x: CudaArray, out: CudaArray, log: bool) -> CudaArray:
    """numdiff.kernels.softmax.softmax_forward on CUDA."""
    outer, n, inner = _check("softmax_forward", x, out=out)
    if x.size:
        _launch(_forward, outer * inner, x.device, flat(x), flat(out), bool(log), outer * inner, n, inner)
    return out


def softmax_backward(grad: CudaArray, out: CudaArray, dx: CudaArray, log: bool) -> CudaArray:
    """numdiff.kernels.softmax.softmax_backward on CUDA."""
    outer, n, inner = _check("softmax_backward", out, grad=grad, dx=dx)
    if out.size:
        _launch(_backward, outer * inner, out.device, flat(grad), flat(out), flat(dx), bool(log), outer * inner, n, inner)
    return dx
