"""numdiff.cuda: availability checks and moving arrays between host and GPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._device import device


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


def move_array(array: Any, target: device) -> Any:
    """Copy an array to `target` ("cpu" or "cuda:N")."""
    if target.type == "cpu":
        return array if type(array) is np.ndarray else array.to_host()
    _require()
    raise CudaUnavailableError(
        f"device {target} is not supported by this build of numdiff: its CUDA array storage is not "
        "installed"
    )
