"""math functions as CUDA device functions that give IEEE results instead of raising.

On a GPU, ``math.exp(1000.0)`` is inf and ``math.log(-1.0)`` is NaN; on Numba's CUDA simulator the
same calls run as Python and raise OverflowError/ValueError. These wrappers return what the GPU
returns on both, so generated kernels (numdiff/cuda/kernels/elementwise.py) and the simulator agree.
Functions not listed here (tanh, erf, atan, fabs, ...) never raise for a float and are used as is.
"""

from __future__ import annotations

import math

from numba import cuda

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
