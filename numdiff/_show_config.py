"""``numdiff.show_config()``: the libraries and threads numdiff runs on, as ``torch.__config__.show()``."""

from __future__ import annotations

import os
import platform

import numpy as np

from numdiff import cuda
from numdiff._lazy import lazy_module
from numdiff._threads import SPIN_COUNT, get_num_threads, openmp_runtimes

# Numba, SciPy and the BLAS choice load when the configuration is shown, not at import.
numba = lazy_module("numba")
scipy = lazy_module("scipy")
_blas = lazy_module("numdiff.kernels._blas")
_blas_library = lazy_module("numdiff.kernels._blas_library")
_conv_route = lazy_module("numdiff.kernels._conv_route")
_gemm_route = lazy_module("numdiff.kernels._gemm_route")
_lapack = lazy_module("numdiff.ops._lapack")

__all__ = ["config_lines", "show_config"]


def _threading_layer() -> str:
    try:
        return numba.threading_layer()
    except ValueError:  # the pool starts on the first parallel kernel, not at import
        return "not started yet"


def _cuda_line() -> str:
    if not cuda.is_available():
        return "not available"
    simulated = " (Numba's simulator)" if numba.config.ENABLE_CUDASIM else ""
    return f"available{simulated}: {cuda.device_count()} device(s)"


def _openmp_lines() -> list[str]:
    runtimes = openmp_runtimes()
    if not runtimes:
        return ["  OpenMP runtimes: none loaded yet (Numba's pool starts on the first parallel kernel)"]
    lines = ["  OpenMP runtimes:"]
    for path, short_spin in runtimes:
        note = "" if short_spin else (
            f" (loaded before numdiff set GOMP_SPINCOUNT={SPIN_COUNT}: its idle threads spin as their library set "
            "them, beside numdiff's; set GOMP_SPINCOUNT before starting Python, or import numdiff first)"
        )
        lines.append(f"    {path}{note}")
    return lines


def _conv_products_line() -> str:
    route = _conv_route.conv_route()
    return (
        f"  conv im2col products: {'Numba loops' if route.loops else 'BLAS'}, {route.reason} "
        f"({_conv_route.ENVIRONMENT_VARIABLE}=auto, blas or loops forces it)"
    )


def _gemm_route_line() -> str:
    route = _gemm_route.gemm_route()
    tiles = ", products of few rows or columns in tiles for OpenBLAS's small-matrix kernels" if route.tiles else ""
    return (
        f"  GEMM products: {'Numba loops' if route.loops else 'the BLAS library'}, {route.reason}{tiles} "
        f"({_gemm_route.ENVIRONMENT_VARIABLE}=auto, blas or loops forces it)"
    )


def config_lines() -> list[str]:
    """The lines :func:`show_config` prints."""
    gemm = _blas_library.blas_library()
    forced = os.environ.get(_blas_library.ENVIRONMENT_VARIABLE)
    return [
        "numdiff configuration:",
        f"  Python {platform.python_version()}, NumPy {np.__version__}, SciPy {scipy.__version__}, "
        f"Numba {numba.__version__}",
        f"  GEMM (matmul, linear, conv): {'MKL' if gemm.name == 'mkl' else 'SciPy BLAS'}, {gemm.reason}",
        f"    {gemm.version}",
        f"    {gemm.path}",
        f"    {_blas_library.ENVIRONMENT_VARIABLE}={forced!r} (auto, mkl or scipy)" if forced else
        f"    {_blas_library.ENVIRONMENT_VARIABLE} unset (auto: MKL when the mkl extra is installed)",
        _gemm_route_line(),
        _conv_products_line(),
        f"  LAPACK (numdiff.linalg): {_lapack.lapack_description()}",
        f"  CPU threads: {get_num_threads()} of {numba.config.NUMBA_NUM_THREADS} (Numba pool, threading "
        f"layer {_threading_layer()}); {_blas.blas_threading()}",
        *_openmp_lines(),
        f"  CUDA: {_cuda_line()}",
    ]


def show_config() -> None:
    """Print which BLAS and LAPACK numdiff calls, its thread counts, the Numba version and CUDA's state.

    >>> numdiff.show_config()  # doctest: +ELLIPSIS
    numdiff configuration:
    ...
    """
    print("\n".join(config_lines()))
