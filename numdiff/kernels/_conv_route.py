"""Which route the im2col convolution cores' products take in this process: Numba loops or BLAS.

The six cores of numdiff.kernels._conv_cores and _conv_batched take a ``loops`` flag, passed
by their Python callers (numdiff.kernels.conv, and numdiff.compile through ``conv2d_plan``) and
read by numdiff.kernels._conv_products.product at run time. The choice is an argument rather than a
module global because Numba freezes globals into machine code and its disk cache would keep a
route chosen by an earlier process.

Why per process: the loops beat OpenBLAS only where OpenBLAS runs kernels narrower than the CPU's
vectors. Measured (bench_models --cpu-time --threads 1, numdiff eager / PyTorch eager, dcgan,
resnet, cifar_bn) on an AVX-512 AMD Zen 5: with ``OPENBLAS_CORETYPE=Haswell`` (AVX2 kernels)
BLAS 1.57, 0.95, 0.98 and loops 1.15, 0.92, 1.02; with OpenBLAS's own SkylakeX kernels BLAS
1.04, 0.76, 0.62 and loops 1.26, 0.86, 0.65. So: loops when the GEMM library is SciPy's
OpenBLAS, the CPU has AVX-512 and OpenBLAS's core is a known pre-AVX-512 x86 core; BLAS
otherwise (MKL included). ``NUMDIFF_CONV_PRODUCTS=blas|loops|auto`` forces it. The "blas"
route calls numdiff.kernels._blas.gemm, which itself runs Numba loops or BLAS by the same rule
(numdiff.kernels._gemm_route, forced by ``NUMDIFF_GEMM``): BLAS proper needs both set to blas.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from llvmlite import binding

from numdiff.kernels._blas_library import blas_library, environment_choice

__all__ = ["CHOICES", "ENVIRONMENT_VARIABLE", "ConvProductsError", "ConvRoute", "choose", "conv_route", "platform_route"]

ENVIRONMENT_VARIABLE = "NUMDIFF_CONV_PRODUCTS"
CHOICES = ("auto", "blas", "loops")

# OpenBLAS's names (gotoblas_corename) for x86 cores whose kernels stop short of AVX-512.
PRE_AVX512_CORES = frozenset(
    name.lower()
    for name in (
        "Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn", "Dunnington",
        "Nehalem", "Athlon", "Opteron", "Opteron_SSE3", "Barcelona", "Nano", "Sandybridge", "Bobcat",
        "Bulldozer", "Piledriver", "Haswell", "Steamroller", "Excavator", "Zen",
    )
)


class ConvProductsError(ValueError):
    """``NUMDIFF_CONV_PRODUCTS`` holds a value that is not one of :data:`CHOICES`."""


@dataclass(frozen=True)
class ConvRoute:
    """The route of the im2col cores' products: ``loops`` (Numba loops) or BLAS, and why."""

    loops: bool
    reason: str


def choose(requested: str, library: str, avx512: bool, corename: str | None) -> ConvRoute:
    """The route for a request (one of :data:`CHOICES`), the GEMM library's name ("scipy" or
    "mkl"), whether the CPU has AVX-512 and OpenBLAS's core name (None when unknown).

    >>> choose("auto", "scipy", True, "Haswell").loops, choose("auto", "scipy", True, "SkylakeX").loops
    (True, False)
    """
    if requested not in CHOICES:
        raise ConvProductsError(f"{ENVIRONMENT_VARIABLE}={requested!r} is not one of {', '.join(CHOICES)}")
    if requested != "auto":
        return ConvRoute(requested == "loops", f"{ENVIRONMENT_VARIABLE}={requested}")
    if library != "scipy":
        return ConvRoute(False, f"the GEMM library is {library}, not SciPy's OpenBLAS")
    if not avx512:
        return ConvRoute(False, "the CPU has no AVX-512, so OpenBLAS's kernels are as wide as its vectors")
    if corename is None:
        return ConvRoute(False, "OpenBLAS's core is unknown")
    if corename.lower() not in PRE_AVX512_CORES:
        return ConvRoute(False, f"OpenBLAS runs its {corename} kernels, which use the CPU's AVX-512")
    return ConvRoute(True, f"OpenBLAS runs its {corename} kernels, narrower than this CPU's AVX-512")


def openblas_corename() -> str | None:
    """The core SciPy's loaded OpenBLAS runs kernels for ("Haswell", "SkylakeX", ...), or None when no
    libscipy_openblas is loaded or it does not say. Call after numdiff.kernels._blas_library loaded it."""
    if not os.path.exists("/proc/self/maps"):  # not Linux: the loaded library cannot be found this way
        return None
    with open("/proc/self/maps") as maps:
        paths = [line.split()[-1] for line in maps if "libscipy_openblas-" in line and line.rstrip().endswith(".so")]
    if not paths:
        return None
    corename = getattr(ctypes.CDLL(paths[0]), "scipy_openblas_get_corename", None)
    if corename is None:
        return None
    corename.restype = ctypes.c_char_p
    name = corename()
    return name.decode() if name else None


def _host_has_avx512() -> bool:
    return bool(binding.get_host_cpu_features().get("avx512f", False))


_CHOSEN: dict[str, ConvRoute | None] = {"route": None}


def conv_route() -> ConvRoute:
    """This process's route, chosen on first call (see the module docstring) and kept.

    >>> isinstance(conv_route().loops, bool)
    True
    """
    if _CHOSEN["route"] is None:
        requested = environment_choice(ENVIRONMENT_VARIABLE, CHOICES, ConvProductsError)
        _CHOSEN["route"] = platform_route() if requested == "auto" else choose(requested, "", False, None)
    return _CHOSEN["route"]


def platform_route() -> ConvRoute:
    """The route :func:`choose` gives this process's GEMM library, CPU and OpenBLAS core when no
    switch forces one (also the rule of numdiff.kernels._gemm_route for every product).

    >>> isinstance(platform_route().loops, bool)
    True
    """
    library = blas_library().name
    corename = openblas_corename() if library == "scipy" else None
    return choose("auto", library, _host_has_avx512(), corename)
