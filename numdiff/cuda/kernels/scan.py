"""Running sums along one axis on CUDA: the twin of numdiff.kernels.scan (same arguments, the
same (outer, n, inner) view, sums in float64 rounded once per element).

One thread per (o, i) lane walks the n positions in order (or from the end with ``reverse``);
neighbouring threads read neighbouring i, so loads coalesce along the inner run. Grid:
ceil(outer * inner / THREADS) blocks of THREADS threads. The launcher checks its arrays first.
"""

from __future__ import annotations

from numba import cuda

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels._checks import check_float_arrays, flat

__all__ = ["cumsum_lanes"]

THREADS = 128


@cuda.jit
def _cumsum_lanes(x, out, outer, n, inner, reverse):
    lane = cuda.grid(1)
    if lane >= outer * inner:
        return
    o = lane // inner
    i = lane - o * inner
    base = o * n * inner + i
    acc = 0.0
    for step in range(n):
        j = n - 1 - step if reverse else step
        at = base + j * inner
        acc += float(x[at])  # float64 on the device and in the simulator alike
        out[at] = acc


def cumsum_lanes(x: CudaArray, out: CudaArray, reverse: bool) -> CudaArray:
    """numdiff.kernels.scan.cumsum_lanes on CUDA."""
    check_float_arrays("cumsum_lanes", x=x, out=out)
    if x.ndim != 3 or out.shape != x.shape:
        raise ValueError(f"cumsum_lanes: x must be 3-D (outer, n, inner) and out its shape, got {x.shape}, {out.shape}")
    outer, n, inner = x.shape
    lanes = outer * inner
    if lanes and n:
        with cuda.gpus[getattr(x.device, "index", None) or 0]:
            _cumsum_lanes[(lanes + THREADS - 1) // THREADS, THREADS](flat(x), flat(out), outer, n, inner, bool(reverse))
    return out
