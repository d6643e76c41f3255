"""Which route numdiff.kernels._blas.gemm takes in this process: Numba loops or the BLAS library.

The rule is numdiff.kernels._conv_route's (:func:`~numdiff.kernels._conv_route.platform_route`):
loops where the GEMM library is SciPy's OpenBLAS running a pre-AVX-512 core's kernels on a CPU
with AVX-512 (``OPENBLAS_CORETYPE=Haswell`` on an AMD Zen 5, say), BLAS otherwise, MKL included.
``NUMDIFF_GEMM=blas|loops|auto`` forces it, independently of ``NUMDIFF_CONV_PRODUCTS``.

On the BLAS route, ``tiles`` says whether products with few rows or few columns of c are cut into tiles for
OpenBLAS's small-matrix kernels (numdiff.kernels._gemm_tiles): where the library is SciPy's OpenBLAS
running a core that has them (:data:`~numdiff.kernels._gemm_tiles.SMALL_KERNEL_CORES`), except on a CPU
that runs its AVX-512 multiply-adds as two halves (AMD Zen 4), where the tiles were not measured.

How the build uses it: numdiff.kernels._blas.prepare_blas reads it in Python when it builds gemm
for a dtype (numdiff.kernels._gemm_body): ``gemm_by_loops_or_blas`` on the loops route,
``gemm_by_blas_in_tiles`` where ``tiles``, ``gemm_by_blas`` otherwise, so the BLAS route never compiles the loops. Each is cached on disk
under its own name, so one cache serves processes on either route.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import binding

from numdiff.kernels._blas_library import blas_library, environment_choice
from numdiff.kernels._conv_route import HALVED_AVX512_CPUS, openblas_corename, platform_route
from numdiff.kernels._gemm_tiles import SMALL_KERNEL_CORES

__all__ = [
    "CHOICES", "ENVIRONMENT_VARIABLE", "GemmRoute", "GemmRouteError", "choose", "gemm_route", "openblas_small_kernels",
]  # fmt: skip

ENVIRONMENT_VARIABLE = "NUMDIFF_GEMM"
CHOICES = ("auto", "blas", "loops")


class GemmRouteError(ValueError):
    """``NUMDIFF_GEMM`` holds a value that is not one of :data:`CHOICES`."""


@dataclass(frozen=True)
class GemmRoute:
    """The route of every :func:`numdiff.kernels._blas.gemm`: ``loops`` (Numba loops) or BLAS, and why;
    on BLAS, whether products with few rows or columns go in ``tiles`` (see the module docstring)."""

    loops: bool
    reason: str
    tiles: bool = False


def choose(requested: str, small_kernels: bool | None = None) -> GemmRoute:
    """The route for a ``NUMDIFF_GEMM`` value (one of :data:`CHOICES`); "auto" applies the platform rule.
    `small_kernels`: whether the GEMM library has OpenBLAS's small-matrix kernels (None: ask this process's).

    >>> choose("blas", small_kernels=False)
    GemmRoute(loops=False, reason='NUMDIFF_GEMM=blas', tiles=False)
    """
    if requested not in CHOICES:
        raise GemmRouteError(f"{ENVIRONMENT_VARIABLE}={requested!r} is not one of {', '.join(CHOICES)}")
    if requested == "auto":
        platform = platform_route()
        loops, reason = platform.loops, platform.reason
    else:
        loops, reason = requested == "loops", f"{ENVIRONMENT_VARIABLE}={requested}"
    if loops:
        return GemmRoute(True, reason)
    return GemmRoute(False, reason, openblas_small_kernels() if small_kernels is None else small_kernels)


def openblas_small_kernels() -> bool:
    """Whether this process's GEMM library is SciPy's OpenBLAS running a core with small-matrix sgemm
    kernels, on a CPU that runs AVX-512 at full width (the module docstring says why).

    >>> isinstance(openblas_small_kernels(), bool)
    True
    """
    if blas_library().name != "scipy" or binding.get_host_cpu_name() in HALVED_AVX512_CPUS:
        return False
    corename = openblas_corename()
    return corename is not None and corename.lower() in SMALL_KERNEL_CORES


_CHOSEN: dict[str, GemmRoute | None] = {"route": None}


def gemm_route() -> GemmRoute:
    """This process's route, chosen on the first call and kept.

    >>> isinstance(gemm_route().loops, bool)
    True
    """
    if _CHOSEN["route"] is None:
        route = choose(environment_choice(ENVIRONMENT_VARIABLE, CHOICES, GemmRouteError))
        _CHOSEN["route"] = route
    return _CHOSEN["route"]
