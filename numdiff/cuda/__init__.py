"""numdiff.cuda: the CUDA device model (availability, devices, moves between host and GPU).

Storage on a GPU is a `CudaArray` (numdiff.cuda.array); NumPy calls on it run @cuda.jit kernels.
Without a GPU, ``NUMBA_ENABLE_CUDASIM=1`` (set before numba is imported) runs the same kernels
on Numba's simulator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._device import device
from numdiff._random import manual_seed as seed_default
from numdiff.backend import backend_for


class CudaUnavailableError(RuntimeError):
    """CUDA was asked for where numba-cuda or a GPU is missing."""


def is_available() -> bool:
    """True if numba-cuda is installed and sees a GPU (or its simulator is on)."""
    try:
        from numba import cuda
    except ImportError:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver install must read as "not available", not crash
        return False


def _require() -> None:
    if not is_available():
        raise CudaUnavailableError(
            "CUDA is not available: numdiff needs the numba-cuda package and an NVIDIA GPU with a "
            "working driver (install with `pip install numdiff[cuda]`; without a GPU, set "
            "NUMBA_ENABLE_CUDASIM=1 to use Numba's simulator)."
        )


def device_count() -> int:
    """How many CUDA devices numdiff can use (0 when CUDA is unavailable)."""
    if not is_available():
        return 0
    from numba import cuda

    return len(cuda.gpus)


def _check_index(target: device) -> None:
    _require()
    count = device_count()
    if target.index >= count:
        raise CudaUnavailableError(
            f"device {target} does not exist: {count} CUDA device(s) available (cuda:0 to cuda:{count - 1})"
        )


def current_device() -> int:
    """Index of the device numba-cuda launches on now."""
    _require()
    from numba import cuda

    current = cuda.get_current_device()
    return int(getattr(current, "id", 0))


def synchronize(target: Any = None) -> None:
    """Wait until every kernel launched on `target` (default: the current device) has finished."""
    _require()
    from numba import cuda

    if target is None:
        cuda.synchronize()
        return
    where = device(target) if not isinstance(target, int) else device("cuda", target)
    _check_index(where)
    with cuda.gpus[where.index]:
        cuda.synchronize()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: numdiff stores bfloat16 but computes in it on no device (see numdiff._dtype)."""
    return False


def manual_seed(seed: int) -> None:
    """Seed the generator CUDA random tensors are drawn from (numdiff draws on the host, then copies)."""
    seed_default(seed)


manual_seed_all = manual_seed


def move_array(array: Any, target: device) -> Any:
    """Copy an array to `target` ("cpu" or "cuda:N"); an array already there is returned as is."""
    if target.type == "cpu":
        return backend_for(array).to_host(array)
    _check_index(target)
    from numdiff.cuda.array import CudaArray

    if isinstance(array, CudaArray):
        if array.device == target:
            return array
        return CudaArray.from_numpy(array.to_host(), target)
    return CudaArray.from_numpy(np.asarray(array), target)

__all__ = [
    "CudaUnavailableError", "amp", "current_device", "device_count", "is_available", "is_bf16_supported", "manual_seed",
    "manual_seed_all", "move_array", "synchronize",
]  # fmt: skip


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
