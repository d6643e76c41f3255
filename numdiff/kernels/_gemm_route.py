"""Which route numdiff.kernels._blas.gemm takes in this process: Numba loops or the BLAS library.

The rule is numdiff.kernels._conv_route's (:func:`~numdiff.kernels._conv_route.platform_route`):
loops where the GEMM library is SciPy's OpenBLAS running a pre-AVX-512 core's kernels on a CPU
with AVX-512 (``OPENBLAS_CORETYPE=Haswell`` on an AMD Zen 5, say), BLAS otherwise, MKL included.
``NUMDIFF_GEMM=blas|loops|auto`` forces it, independently of ``NUMDIFF_CONV_PRODUCTS``.

How the build uses it: numdiff.kernels._blas.prepare_blas reads it in Python when it builds gemm
for a dtype (numdiff.kernels._gemm_body): ``gemm_by_loops_or_blas`` on the loops route,
``gemm_by_blas`` otherwise, so the BLAS route never compiles the loops. Each is cached on disk
under its own name, so one cache serves processes on either route.
"""

from __future__ import annotations

from dataclasses import dataclass

from numdiff.kernels._blas_library import environment_choice
from numdiff.kernels._conv_route import platform_route

__all__ = ["CHOICES", "ENVIRONMENT_VARIABLE", "GemmRoute", "GemmRouteError", "choose", "gemm_route"]

ENVIRONMENT_VARIABLE = "NUMDIFF_GEMM"
CHOICES = ("auto", "blas", "loops")


class GemmRouteError(ValueError):
    """``NUMDIFF_GEMM`` holds a value that is not one of :data:`CHOICES`."""


@dataclass(frozen=True)
class GemmRoute:
    """The route of every :func:`numdiff.kernels._blas.gemm`: ``loops`` (Numba loops) or BLAS, and why."""

    loops: bool
    reason: str


def choose(requested: str) -> GemmRoute:
    """The route for a ``NUMDIFF_GEMM`` value (one of :data:`CHOICES`); "auto" applies the platform rule.

    >>> choose("blas")
    GemmRoute(loops=False, reason='NUMDIFF_GEMM=blas')
    """
    if requested not in CHOICES:
        raise GemmRouteError(f"{ENVIRONMENT_VARIABLE}={requested!r} is not one of {', '.join(CHOICES)}")
    if requested != "auto":
        return GemmRoute(requested == "loops", f"{ENVIRONMENT_VARIABLE}={requested}")
    platform = platform_route()
    return GemmRoute(platform.loops, platform.reason)


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
