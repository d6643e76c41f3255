"""BatchNorm's running-statistic update on CUDA: the twin of numdiff.kernels.norm_running (same
arguments, formula and rounding documented there: the scalars in the arrays' dtype). One thread
per channel; grid ceil(C / THREADS) blocks of THREADS threads. The launcher checks its arrays before
the launch.
"""

from __future__ import annotations

from numba import cuda

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels._checks import check_float_arrays, flat
from numdiff.kernels.norm_running import check_running_stat

__all__ = ["running_stat_update"]

THREADS = 128


@cuda.jit
def _update(running, moments, row, keep, factor, momentum, out, channels):
    c = cuda.grid(1)
    if c < channels:
        stat = moments[row * channels + c]
        out[c] = running[c] * keep + (stat * factor) * momentum


def running_stat_update(
    running: CudaArray, moments: CudaArray, row: int, momentum: float, factor: float, out: CudaArray
) -> CudaArray:
    """numdiff.kernels.norm_running.running_stat_update on CUDA."""
    op = "running_stat_update"
    check_float_arrays(op, running=running, moments=moments, out=out)
    channels = check_running_stat(op, running, moments, row, out)
    scalar = running.dtype.type
    if channels:
        with cuda.gpus[getattr(running.device, "index", None) or 0]:
            _update[(channels + THREADS - 1) // THREADS, THREADS](
                flat(running), flat(moments), int(row), scalar(1.0 - momentum), scalar(factor), scalar(momentum),
                flat(out), channels,
            )  # fmt: skip
    return out
