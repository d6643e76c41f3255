"""Elementary functions that LLVM can vectorise: exp, expm1, log, log1p, sin, cos, tanh, erf.

Numba compiles ``math.exp`` and its kin to calls of the C library, one element at a time, and
without Intel's SVML (which this Numba lacks) LLVM cannot turn those calls into SIMD code: a loop
over float32[10^6] calling ``math.tanh`` takes 9 ms on this machine where NumPy's SIMD ufunc takes
0.4. The functions here are written in plain arithmetic (range reduction, a polynomial, scaling
by a power of two built from its bits) with no calls and no branches, so a loop calling them is
vectorised like any arithmetic loop. The generated elementwise kernels (numdiff/kernels/_codegen.py)
call them in place of ``math.*`` on the CPU; CUDA keeps its own (libdevice) functions.

Precision. Each function has a float64 and a float32 version (``exp64`` in _vecmath64.py,
``exp32`` in _vecmath32.py, ``erf64``/``erf32`` in _vecmath_erf.py); the name without suffix,
here, picks by the argument's type inside a kernel. The float32 versions run twice the SIMD lanes
and keep their last steps in float64 where that buys accuracy.

Accuracy, as tests/kernels/test_vecmath.py checks over wide random samples: float64 results lie
within 2 ulp of NumPy's (the C library's, itself within 1 ulp of exact; most agree to the bit),
float32 results within 1 ulp of the exact value (most are the exact value rounded). Special values
follow C99: exp(-inf) = 0, log(0) = -inf, log(-1) = NaN, sin(inf) = NaN, sin(-0.0) = -0.0, NaN
propagates, results overflow to inf and underflow through the subnormals as the C library's do.

One limit: sin and cos reduce their argument by multiples of pi/2 with a constant split in four
parts, exact for ``|x| < SIN_COS_LIMIT``. Beyond it the reduction would lose digits, so a kernel
that calls them also or-reduces `outside_sin_cos` over its elements and, if any is outside,
recomputes itself with the C library's functions (see numdiff/kernels/_codegen.py).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import intrinsic, overload

from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath32 import (
    cos32,
    cos32_wide,
    exp32,
    expm1_32,
    log1p32,
    log32,
    sin32,
    sin32_wide,
    tanh32,
)
from numdiff.kernels._vecmath64 import (  # noqa: F401 (kernels call lane_sum, outside_sin_cos, wide_vectors here)
    SIN_COS_LIMIT,
    cos64,
    exp64,
    expm1_64,
    lane_sum,
    log1p64,
    log64,
    outside_sin_cos,
    sin64,
    tanh64,
    wide_vectors,
)
from numdiff.kernels._vecmath_erf import erf32, erf64

# The functions `substitute` maps: ``math.<name>`` -> ``_vecmath.<name>``.
FUNCTIONS = ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "erf")
# Functions whose calls need the range guard (`outside_sin_cos`).
GUARDED = ("sin", "cos")
# ``np.float64(math.<name>(x))`` -> ``_vecmath.<name>_wide(x)``: the float64 value before a float32
# result's rounding (numdiff/kernels/_codegen.py), for the functions that compute it in float64.
WIDE = ("sin", "cos")
# The files whose text decides what a kernel calling these functions compiles to.
SOURCES = ("_vecmath.py", "_vecmath32.py", "_vecmath64.py", "_vecmath_erf.py")


@intrinsic
def inline_into_caller(typingctx):
    """Mark the compiled function this call sits in for inlining into every caller; returns None.

    An @overload's implementation is compiled as a function of its own, which LLVM inlines into a
    kernel's loop only while it looks small: erf's (two polynomials and an exp) did not, and its
    loop stayed a call per element, unvectorised (GELU on float32[524288]: 9.4 ms, inlined 0.9).
    Numba's IR-level ``inline="always"`` does it too, but trips Numba's SSA checks (a
    NumbaIRAssumptionWarning) in kernels that call exp and log.
    """

    def codegen(context, builder, signature, args):
        builder.function.attributes.add("alwaysinline")
        return context.get_dummy_value()

    return types.none(), codegen


def _by_precision(name: str, double, single):
    """The function _vecmath exports as `name`: `single` for a float32 argument, else `double`."""

    def function(x):
        return double(x)  # called from Python (outside a kernel): the float64 version

    def single_precision(x):
        inline_into_caller()
        return single(x)

    def double_precision(x):
        inline_into_caller()
        return double(x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = double.py_func.__doc__
    # Numba names compiled code after the module and qualified name plus a per-process counter, and
    # a kernel loaded from its disk cache can resolve a callee by that name: two implementations
    # sharing a qualified name (these closures, across the functions made here) could then be swapped
    # between processes (a cached kernel calling sin where it compiled tanh). Each gets its own.
    for implementation, suffix in ((single_precision, "float32"), (double_precision, "float64")):
        implementation.__name__ = implementation.__qualname__ = f"{name}_{suffix}"

    @overload(function)
    def _typed(x):
        return single_precision if x is types.float32 else double_precision

    return function


exp = _by_precision("exp", exp64, exp32)
expm1 = _by_precision("expm1", expm1_64, expm1_32)
log = _by_precision("log", log64, log32)
log1p = _by_precision("log1p", log1p64, log1p32)
sin = _by_precision("sin", sin64, sin32)
cos = _by_precision("cos", cos64, cos32)
tanh = _by_precision("tanh", tanh64, tanh32)
erf = _by_precision("erf", erf64, erf32)


# The float64 value of a float32 argument's sin or cos before its rounding (a float64 argument's, as
# sin/cos): for a float64 calculation that goes on from it, such as a compiled chain's derivative
# factor cos(x) (numdiff/compile/group_kernel.py), which a rounding to float32 and back would only
# make worse, and slower (two conversions per vector).
sin_wide = _by_precision("sin_wide", sin64, sin32_wide)
cos_wide = _by_precision("cos_wide", cos64, cos32_wide)


@njit(inline="always", cache=True, error_model="numpy")
def _power64(x, e):
    """``x ** e`` in float64, the exponents PyTorch's pow treats specially as arithmetic: a loop that
    calls the C library's pow runs it element by element, 0.1 us each here (a float32[131072] ``x ** 2.0``
    derivative took 14 ms; as ``x * x``, 0.04). Each special case gives pow's value for every x, the
    signed zeros, infinities and NaN included."""
    if e == 2.0:
        return x * x
    if e == 1.0:
        return x
    if e == 3.0:
        return x * x * x
    if e == 0.0:
        return 1.0
    if e == -1.0:
        return 1.0 / x
    if e == 0.5:
        # C's pow, which the kernels computed before: +0.0 at -0.0 and inf at -inf, where sqrt gives -0.0
        # and NaN. (PyTorch's pow with a tensor exponent agrees; with a Python 0.5 it takes sqrt, as
        # NumPy's power does: the forward computes through the ufunc there, not through a kernel.)
        return math.inf if x == -math.inf else math.sqrt(x) + 0.0
    return x ** e


@njit(inline="always", cache=True, error_model="numpy")
def power(x, e):
    """``x ** e`` as the generated kernels compute it (numdiff/kernels/_codegen.py), in float64."""
    return _power64(np.float64(x), np.float64(e))


def _erf_like_float32(x, like):
    inline_into_caller()
    return erf32(np.float32(x))


def _erf_like_float64(x, like):
    inline_into_caller()
    return erf64(x)


def erf_like(x, like):
    """erf(x) in the precision of `like`'s type: for a float32 `like`, erf32 of x rounded to float32
    (numdiff/kernels/elementwise.py: a float32 kernel's erf, whose argument its float64 constants
    widened). Called from Python, erf64."""
    return erf64.py_func(x)


@overload(erf_like)
def _erf_like_typed(x, like):
    return _erf_like_float32 if like is types.float32 else _erf_like_float64


def _like_float32(value, like):
    return np.float32(value)


def _like_other(value, like):
    return value


def like(value, like):
    """`value` (a float constant of a generated kernel) in `like`'s precision: rounded to float32 for
    a float32 `like`, unchanged otherwise, so that the constant does not widen float32 arithmetic to
    float64 (numdiff/kernels/elementwise.py). Called from Python, `value`.

    >>> like(0.1, 1.0)
    0.1
    """
    return value


@overload(like)
def _like_typed(value, like):
    return _like_float32 if like is types.float32 else _like_other
