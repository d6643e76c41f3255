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
1.04, 0.76, 0.62 and loops 1.26, 0.86, 0.65. On an AMD Zen 4 (``znver4``: its AVX-512 multiply-adds
run as two 256-bit halves) the loops win against those SkylakeX kernels too (one process, the two
routes and PyTorch alternating step by step, thread CPU time, median of 5, load 12-17; BLAS / loops):
tcn 1.22 / 1.06, dcgan 1.23 / 1.17, resnet 1.10 / 1.00, siamese_triplet 0.84 / 0.78, style_transfer
0.87 / 0.83, efficientnet 1.02 / 0.95, mobilenet 1.12 / 1.09, cnn3d 0.94 / 0.96, super_resolution
0.82 / 0.83, cifar_bn 0.75 / 0.75, unet 0.86 / 0.85, groupnorm_cnn 0.84 / 0.82. So: loops when the
GEMM library is SciPy's OpenBLAS, the CPU has AVX-512 and either OpenBLAS's core is a known
pre-AVX-512 x86 core or the CPU halves its 512-bit multiply-adds (:data:`HALVED_AVX512_CPUS`); BLAS
otherwise (MKL included). The second case is the conv cores' alone: numdiff.kernels._gemm_route
keeps the first rule (:func:`platform_route`'s ``conv`` flag). ``NUMDIFF_CONV_PRODUCTS=blas|loops|auto``
forces it. The "blas" route calls numdiff.kernels._blas.gemm, which itself runs Numba loops or BLAS by the same rule
(numdiff.kernels._gemm_route, forced by ``NUMDIFF_GEMM``): BLAS proper needs both set to blas.
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass

from llvmlite import binding

from numdiff.kernels._blas_library import blas_library, environment_choice

__all__ = [
    "CHOICES", "ENVIRONMENT_VARIABLE", "HALVED_AVX512_CPUS", "ConvProductsError", "ConvRoute", "blas_on_full_width_avx512",
    "choose", "conv_route", "full_width_avx512", "platform_route",
]  # fmt: skip

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

# LLVM's names for CPUs with AVX-512 that run each 512-bit multiply-add as two 256-bit halves.
HALVED_AVX512_CPUS = frozenset({"znver4"})


class ConvProductsError(ValueError):
    """``NUMDIFF_CONV_PRODUCTS`` holds a value that is not one of :data:`CHOICES`."""


@dataclass(frozen=True)
class ConvRoute:
    """The route of the im2col cores' products: ``loops`` (Numba loops) or BLAS, and why."""

    loops: bool
    reason: str

    @property
    def cores_flag(self) -> bool | None:
        """The im2col cores' ``loops`` argument: True for the loops, None (not False) for BLAS, so
        that Numba leaves the loop product out of the cores' builds (numdiff.kernels._conv_products).

        >>> ConvRoute(True, "forced").cores_flag, ConvRoute(False, "forced").cores_flag
        (True, None)
        """
        return True if self.loops else None


def choose(requested: str, library: str, avx512: bool, corename: str | None, halved: bool = False) -> ConvRoute:
    """The route for a request (one of :data:`CHOICES`), the GEMM library's name ("scipy" or
    "mkl"), whether the CPU has AVX-512, OpenBLAS's core name (None when unknown) and whether the
    CPU runs its 512-bit multiply-adds as two halves (:data:`HALVED_AVX512_CPUS`).

    >>> choose("auto", "scipy", True, "Haswell").loops, choose("auto", "scipy", True, "SkylakeX").loops
    (True, False)
    >>> choose("auto", "scipy", True, "SkylakeX", halved=True).loops
    True
    """
    if requested not in CHOICES:
        raise ConvProductsError(f"{ENVIRONMENT_VARIABLE}={requested!r} is not one of {', '.join(CHOICES)}")
    if requested != "auto":
        return ConvRoute(requested == "loops", f"{ENVIRONMENT_VARIABLE}={requested}")
    if library != "scipy":
        return ConvRoute(False, f"the GEMM library is {library}, not SciPy's OpenBLAS")
    if not avx512:
        return ConvRoute(False, "the CPU has no AVX-512, so OpenBLAS's kernels are as wide as its vectors")
    if halved:
        return ConvRoute(True, "this CPU runs its AVX-512 multiply-adds as two 256-bit halves")
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


def _host_halves_avx512() -> bool:
    return binding.get_host_cpu_name() in HALVED_AVX512_CPUS


_CHOSEN: dict[str, ConvRoute | None] = {"route": None}


def conv_route() -> ConvRoute:
    """This process's route, chosen on first call (see the module docstring) and kept.

    >>> isinstance(conv_route().loops, bool)
    True
    """
    if _CHOSEN["route"] is None:
        requested = environment_choice(ENVIRONMENT_VARIABLE, CHOICES, ConvProductsError)
        _CHOSEN["route"] = platform_route(conv=True) if requested == "auto" else choose(requested, "", False, None)
    return _CHOSEN["route"]


def platform_route(conv: bool = False) -> ConvRoute:
    """The route :func:`choose` gives this process's GEMM library, CPU and OpenBLAS core when no
    switch forces one: the conv cores' where `conv` is set, else the rule of
    numdiff.kernels._gemm_route for every product, which leaves out the halved-AVX-512 case (it
    was measured on the conv rows only).

    >>> isinstance(platform_route().loops, bool)
    True
    """
    library = blas_library().name
    corename = openblas_corename() if library == "scipy" else None
    return choose("auto", library, _host_has_avx512(), corename, conv and _host_halves_avx512())


@functools.cache
def full_width_avx512() -> bool:
    """Whether the host has AVX-512 and runs its 512-bit multiply-adds whole (asked once: llvmlite
    reads the CPU's features).

    >>> isinstance(full_width_avx512(), bool)
    True
    """
    return _host_has_avx512() and not _host_halves_avx512()


def blas_on_full_width_avx512() -> bool:
    """Whether this process's im2col products run on BLAS on a full-width AVX-512 host: where the
    ``*_AVX512`` bounds of numdiff.kernels._conv_routing (the batched cores, Winograd's gradients)
    and _conv_routing_flat were measured (an Intel Emerald Rapids, SciPy's OpenBLAS running its
    SkylakeX kernels). BLAS runs the per-image products there near its peak, so routes that trade
    them for loops or copies of their own lose more often than the bounds measured elsewhere say.

    >>> isinstance(blas_on_full_width_avx512(), bool)
    True
    """
    return full_width_avx512() and not conv_route().loops
