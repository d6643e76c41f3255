"""Running sums and products along one axis on CUDA: the twins of numdiff.kernels.scan (same
arguments, the same (outer, n, inner) view, float64 arithmetic rounded once per element).

One thread per (o, i) lane walks the n positions in order (or from the end with ``reverse``);
neighbouring threads read neighbouring i, so loads coalesce along the inner run. Grid:
ceil(outer * inner / THREADS) blocks of THREADS threads. The launcher checks its arrays first.
"""

from __future__ import annotations

from typing import Any

from numba import cuda

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels._checks import check_float_arrays, flat

__all__ = ["cumprod_backward_lanes", "cumprod_lanes", "cumsum_lanes"]

THREADS = 128


@cuda.jit
def _scan_lanes(x, out, reverse, product, outer, n, inner):
    lane = cuda.grid(1)
    if lane >= outer * inner:
        return
    o = lane // inner
    i = lane - o * inner
    base = o * n * inner + i
    acc = 1.0 if product else 0.0
    for step in range(n):
        j = n - 1 - step if reverse else step
        at = base + j * inner
        value = float(x[at])  # float64 on the device and in the simulator alike
        acc = acc * value if product else acc + value
        out[at] = acc


@cuda.jit
def _cumprod_backward_lanes(x, grad, out, outer, n, inner):
    lane = cuda.grid(1)
    if lane >= outer * inner:
        return
    o = lane // inner
    i = lane - o * inner
    base = o * n * inner + i
    tail = 0.0
    for step in range(n):
        j = n - 1 - step
        nxt = float(x[base + (j + 1) * inner]) if j + 1 < n else 0.0
        tail = float(grad[base + j * inner]) + nxt * tail
        out[base + j * inner] = tail
    before = 1.0
    for j in range(n):
        at = base + j * inner
        out[at] = float(out[at]) * before
        before *= float(x[at])


def _check_lanes(op: str, x: CudaArray, **arrays: CudaArray) -> None:
    check_float_arrays(op, x=x, **arrays)
    if x.ndim != 3 or any(a.shape != x.shape for a in arrays.values()):
        shapes = ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
        raise ValueError(f"{op}: x must be 3-D (outer, n, inner) and the others its shape, got x {x.shape}, {shapes}")


def _launch(kernel: Any, x: CudaArray, *args: Any) -> None:
    outer, n, inner = x.shape
    lanes = outer * inner
    if lanes and n:
        with cuda.gpus[getattr(x.device, "index", None) or 0]:
            kernel[(lanes + THREADS - 1) // THREADS, THREADS](*args, outer, n, inner)


def cumsum_lanes(x: CudaArray, out: CudaArray, reverse: bool) -> CudaArray:
    """numdiff.kernels.scan.cumsum_lanes on CUDA."""
    _check_lanes("cumsum_lanes", x, out=out)
    _launch(_scan_lanes, x, flat(x), flat(out), bool(reverse), False)
    return out


def cumprod_lanes(x: CudaArray, out: CudaArray) -> CudaArray:
    """numdiff.kernels.scan.cumprod_lanes on CUDA."""
    _check_lanes("cumprod_lanes", x, out=out)
    _launch(_scan_lanes, x, flat(x), flat(out), False, True)
    return out


def cumprod_backward_lanes(x: CudaArray, grad: CudaArray, out: CudaArray) -> CudaArray:
    """numdiff.kernels.scan.cumprod_backward_lanes on CUDA."""
    _check_lanes("cumprod_backward_lanes", x, grad=grad, out=out)
    _launch(_cumprod_backward_lanes, x, flat(x), flat(grad), flat(out))
    return out
