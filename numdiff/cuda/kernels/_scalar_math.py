"""math functions as CUDA device functions that give IEEE results instead of raising.

On a GPU, ``math.exp(1000.0)`` is inf and ``math.log(-1.0)`` is NaN; on Numba's CUDA simulator the
same calls run as Python and raise OverflowError/ValueError. These wrappers return what the GPU
returns on both, so generated kernels (numdiff/cuda/kernels/elementwise.py) and the simulator agree.
Functions not listed here (tanh, erf, atan, asinh, fabs, ...) never raise for a float and are used as is.
"""

from __future__ import annotations

import math

from numba import cuda

from numdiff.kernels import _special

# Above this, exp overflows float64 (and so float32 too); the GPU gives inf, Python would raise.
_EXP_OVERFLOW = 709.78


@cuda.jit(device=True)
def exp(a):
    return math.exp(a) if a < _EXP_OVERFLOW else (a if a != a else math.inf)


@cuda.jit(device=True)
def expm1(a):
    return math.expm1(a) if a < _EXP_OVERFLOW else (a if a != a else math.inf)


@cuda.jit(device=True)
def log(a):
    return math.log(a) if a > 0 else (-math.inf if a == 0 else math.nan)


@cuda.jit(device=True)
def log1p(a):
    return math.log1p(a) if a > -1 else (-math.inf if a == -1 else math.nan)


@cuda.jit(device=True)
def sqrt(a):
    return math.sqrt(a) if a >= 0 else math.nan


@cuda.jit(device=True)
def sin(a):
    return math.sin(a) if math.isfinite(a) else math.nan


@cuda.jit(device=True)
def cos(a):
    return math.cos(a) if math.isfinite(a) else math.nan


@cuda.jit(device=True)
def tan(a):
    return math.tan(a) if math.isfinite(a) else math.nan


@cuda.jit(device=True)
def asin(a):
    return math.asin(a) if -1 <= a <= 1 else math.nan


@cuda.jit(device=True)
def acos(a):
    return math.acos(a) if -1 <= a <= 1 else math.nan


# Above this |a|, sinh and cosh overflow float64; the GPU gives +-inf, Python would raise.
_SINH_OVERFLOW = 710.47


@cuda.jit(device=True)
def sinh(a):
    return math.sinh(a) if -_SINH_OVERFLOW < a < _SINH_OVERFLOW else a * math.inf


@cuda.jit(device=True)
def cosh(a):
    return math.cosh(a) if -_SINH_OVERFLOW < a < _SINH_OVERFLOW else abs(a) * math.inf


@cuda.jit(device=True)
def acosh(a):
    return math.acosh(a) if a >= 1 else math.nan


@cuda.jit(device=True)
def atanh(a):
    if -1 < a < 1:
        return math.atanh(a)
    return math.copysign(math.inf, a) if a == 1 or a == -1 else math.nan


@cuda.jit(device=True)
def log2(a):
    return math.log2(a) if a > 0 else (-math.inf if a == 0 else math.nan)


@cuda.jit(device=True)
def log10(a):
    return math.log10(a) if a > 0 else (-math.inf if a == 0 else math.nan)


# floor and ceil of a float the caller has checked is finite and below 2 ** 52 in magnitude
# (numdiff._ground.scalar_rules' roundings). On the simulator a NumPy float32 has no __floor__, so the
# value is made a Python float first; on a GPU float() is a no-op or a widening.
@cuda.jit(device=True)
def floor(a):
    return math.floor(float(a))


@cuda.jit(device=True)
def ceil(a):
    return math.ceil(float(a))


# The functions math lacks, from the one source the CPU loops compile too (numdiff.kernels._special).
# float() makes a simulator's NumPy float32 a Python float (see floor above); on a GPU it widens.
_lgamma = cuda.jit(device=True)(_special.lgamma_scalar)
_erfc = cuda.jit(device=True)(_special.erfc_scalar)
_digamma = cuda.jit(device=True)(_special.digamma_scalar)
_polygamma = cuda.jit(device=True)(_special.polygamma_scalar)
_erfinv = cuda.jit(device=True)(_special.erfinv_scalar)

_i0 = cuda.jit(device=True)(_special.i0_scalar)
_i0e = cuda.jit(device=True)(_special.i0e_scalar)
_i1 = cuda.jit(device=True)(_special.i1_scalar)
_i1e = cuda.jit(device=True)(_special.i1e_scalar)
_erfcx = cuda.jit(device=True)(_special.erfcx_scalar)


@cuda.jit(device=True)
def i0(a):
    return _i0(float(a))


@cuda.jit(device=True)
def i0e(a):
    return _i0e(float(a))


@cuda.jit(device=True)
def i1(a):
    return _i1(float(a))


@cuda.jit(device=True)
def i1e(a):
    return _i1e(float(a))


@cuda.jit(device=True)
def erfcx(a):
    return _erfcx(float(a))


@cuda.jit(device=True)
def digamma(a):
    return _digamma(float(a))


@cuda.jit(device=True)
def polygamma(a, order):
    return _polygamma(float(a), order)


@cuda.jit(device=True)
def erfinv(a):
    return _erfinv(float(a))


@cuda.jit(device=True)
def lgamma(a):
    # The GPU's lgamma is inf at +-inf and the poles (0 and the negative integers); Python's raises at the poles.
    if math.isinf(a) or a <= 0 and a == math.floor(float(a)):
        return math.inf
    return _lgamma(float(a))


@cuda.jit(device=True)
def erfc(a):
    return _erfc(float(a))
