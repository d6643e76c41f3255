"""Which route numdiff.kernels._blas.gemm takes in this process: Numba loops or the BLAS library.

The rule is numdiff.kernels._conv_route's (:func:`~numdiff.kernels._conv_route.platform_route`):
loops where the GEMM library is SciPy's OpenBLAS running a pre-AVX-512 core's kernels on a CPU
with AVX-512 (``OPENBLAS_CORETYPE=Haswell`` on an AMD Zen 5, say), BLAS otherwise, MKL included.
``NUMDIFF_GEMM=blas|loops|auto`` forces it, independently of ``NUMDIFF_CONV_PRODUCTS``.

How compiled code reads it: gemm is compiled once and cached on disk, and Numba freezes module
globals into machine code, so the route cannot be a global. It is a byte the process owns,
registered with LLVM under :data:`ROUTE_SYMBOL` as the BLAS routines are registered under their
names (numdiff.kernels._blas_library), and :func:`loops_route` loads it when gemm runs. The cached
machine code links to the name, so it stays valid from one process and route to the next.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from llvmlite import binding, ir
from numba import types
from numba.extending import intrinsic

from numdiff.kernels._blas_library import environment_choice
from numdiff.kernels._conv_route import platform_route

__all__ = ["CHOICES", "ENVIRONMENT_VARIABLE", "ROUTE_SYMBOL", "GemmRoute", "GemmRouteError", "choose", "gemm_route",
           "loops_route"]

ENVIRONMENT_VARIABLE = "NUMDIFF_GEMM"
CHOICES = ("auto", "blas", "loops")
ROUTE_SYMBOL = "numdiff_gemm_loops"


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


_ROUTE_BYTE = ctypes.c_uint8(0)
_CHOSEN: dict[str, GemmRoute | None] = {"route": None}


def gemm_route() -> GemmRoute:
    """This process's route, chosen on the first call, written where :func:`loops_route` reads it, and kept.

    >>> isinstance(gemm_route().loops, bool)
    True
    """
    if _CHOSEN["route"] is None:
        route = choose(environment_choice(ENVIRONMENT_VARIABLE, CHOICES, GemmRouteError))
        _ROUTE_BYTE.value = int(route.loops)
        binding.add_symbol(ROUTE_SYMBOL, ctypes.addressof(_ROUTE_BYTE))
        _CHOSEN["route"] = route
    return _CHOSEN["route"]


@intrinsic
def loops_route(typingctx):
    """Inside compiled code: whether this process's gemm route is the Numba loops (a load of the
    byte registered under :data:`ROUTE_SYMBOL`; :func:`gemm_route` must have run first)."""

    def codegen(context, builder, signature, args):
        module = builder.module
        byte = module.globals.get(ROUTE_SYMBOL)
        if byte is None:
            byte = ir.GlobalVariable(module, ir.IntType(8), ROUTE_SYMBOL)
        return builder.icmp_unsigned("!=", builder.load(byte), ir.Constant(ir.IntType(8), 0))

    return types.boolean(), codegen
