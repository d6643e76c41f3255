"""erf that LLVM can vectorise, for numdiff.kernels._vecmath (see there): ``erf64`` and ``erf32``.

Numba compiles ``math.erf`` to a call of the C library per element (21 ns each here: 11 ms for GELU's
erf on a 16x64x512 activation). These are plain arithmetic, selects instead of branches, so a loop
calling them vectorises like any other.

Method, float64. Below 1, erf(x) = x + x y(x * x) with y a degree-12 polynomial in z = x * x; the
correction x y is at most 16% of the result, so its error counts a sixth. From 1 on,
erf(a) = 1 - exp(-a * a) F(a), F(a) = erfc(a) exp(a * a) a smooth function from 0.43 down to 0.09,
fitted on [1, 2] and [2, 6] as degree-14 polynomials in t = (a - mid) / half (each lane picks its
interval's coefficients, one select per coefficient). a * a is split exactly into hi + lo with a
fused multiply-add, and exp(-a * a) = exp(-hi) (1 - lo), so the rounding of the square (up to 25
ulp of the exponential at a = 5) does not reach the result. From 6 on, 1 - erfc(a) rounds to 1.
The float32 version computes the same forms in float32 arithmetic, twice the lanes, with shorter
polynomials: degree 7 below 1 (in 2 z - 1, whose terms cancel less near 1 than z's), one degree-9
polynomial on [1, 4] (past 3.9 the float32 result is 1).

The polynomials are least-squares fits at Chebyshev nodes in 50-digit arithmetic; the tail's
weighted by exp(-a * a), the factor that carries F's error into erf. tools/fit_erf.py prints them.
Accuracy (tests/kernels/test_vecmath.py, dense grids and tails): float64 within 2 ulp of the C
library's erf, float32 within 1 ulp of the exact value. erf(+-inf) = +-1, erf(-0.0) = -0.0, NaN
propagates.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath32 import _ONE32, _TWO32, _ZERO32, exp32_normal
from numdiff.kernels._vecmath64 import _fma, exp64_normal

_F32 = np.float32
_FOUR32 = _F32(4.0)

# Coefficients, constant term first (tools/fit_erf.py).
_SMALL64 = (
    0.1283791670955126,
    -0.3761263890318375,
    0.11283791670954882,
    -0.026866170645077334,
    0.005223977624823223,
    -0.0008548326981129666,
    0.00012055331122299266,
    -1.4925595519506043e-05,
    1.6461004480962034e-06,
    -1.6350354461959655e-07,
    1.4660051998394848e-08,
    -1.1373902296430911e-09,
    5.958930743134941e-11,
)
_TAIL64_NEAR = (
    0.32158541645431743,
    -0.08181145886628016,
    0.019037759963879665,
    -0.004116363162431317,
    0.0008360838093798326,
    -0.00016081117361308153,
    2.9470858697901614e-05,
    -5.17132714061797e-06,
    8.72300555102785e-07,
    -1.419164186452494e-07,
    2.2334788832188387e-08,
    -3.3990280185449486e-09,
    4.993419692612219e-10,
    -7.773852536991675e-11,
    1.2195885997072597e-11,
)
_TAIL64_FAR = (
    0.13699945763966812,
    -0.0647670106909776,
    0.029861751955479573,
    -0.013449401013594337,
    0.005925246882382462,
    -0.002560678147647699,
    0.0010706482310197743,
    -0.0004602088861659957,
    0.00021867133260197383,
    7.78244867266243e-05,
    0.0003079433466396338,
    0.00029624121120824706,
    0.0002155608580512385,
    8.37331478858385e-05,
    1.6896172097554424e-05,
)
_SMALL32 = (
    _F32(-0.03453126177191734),
    _F32(-0.1405360847711563),
    _F32(0.019852498546242714),
    _F32(-0.0022854856215417385),
    _F32(0.00021751198801212013),
    _F32(-1.75368240888929e-05),
    _F32(1.2316402262513293e-06),
    _F32(-7.557493120202707e-08),
)
_TAIL32 = (
    _F32(0.21080638468265533),
    _F32(-0.1115235909819603),
    _F32(0.05608997866511345),
    _F32(-0.027020610868930817),
    _F32(0.012711744755506516),
    _F32(-0.004930512513965368),
    _F32(0.002721776021644473),
    _F32(-0.0020347514655441046),
    _F32(-0.0012808883329853415),
    _F32(-0.0010251032654196024),
)


@njit(inline="always", cache=True, error_model="numpy")
def _horner(t, coefficients):
    """The polynomial with `coefficients` (constant first) at t, in the coefficients' precision."""
    p = coefficients[len(coefficients) - 1]
    for j in range(len(coefficients) - 2, -1, -1):
        p = p * t + coefficients[j]
    return p


@njit(inline="always", cache=True, error_model="numpy")
def _horner_either(t, second, first_coefficients, second_coefficients):
    """The polynomial with `second_coefficients` at t if `second`, else with `first_coefficients`:
    one select per coefficient (both tuples have the same length)."""
    last = len(first_coefficients) - 1
    p = second_coefficients[last] if second else first_coefficients[last]
    for j in range(last - 1, -1, -1):
        p = p * t + (second_coefficients[j] if second else first_coefficients[j])
    return p


@njit(inline="always", cache=True, error_model="numpy")
def _gaussian(a):
    """exp(-a * a), with the square's rounding error lo = a * a - hi put back: exp(-hi) (1 - lo)."""
    hi = a * a
    lo = _fma(a, a, -hi)
    return exp64_normal(-hi) * (1.0 - lo)  # hi <= 36: a normal result


@njit(inline="always", cache=True, error_model="numpy")
def erf64(x):
    """The error function 2 / sqrt(pi) * integral of exp(-t * t) from 0 to x."""
    x = float(x)
    magnitude = x if x >= 0.0 else -x
    small = x + x * _horner(x * x, _SMALL64)
    a = magnitude if magnitude < 6.0 else 6.0  # NaN becomes 6 here and is put back below
    far = a >= 2.0
    t = (a - (4.0 if far else 1.5)) * (0.5 if far else 2.0)
    tail = 1.0 - _gaussian(a) * _horner_either(t, far, _TAIL64_NEAR, _TAIL64_FAR)
    result = small if magnitude < 1.0 else (tail if x > 0.0 else -tail)
    return result if x == x else x


@njit(inline="always", cache=True, error_model="numpy")
def erf32(x):
    """erf in float32 arithmetic (eight lanes where float64 has four). The small part's polynomial
    is in 2 z - 1 (exact for z >= 1/4), not z: its terms then cancel less near |x| = 1."""
    magnitude = x if x >= _ZERO32 else -x
    z = x * x
    small = x + x * _horner(z * _TWO32 - _ONE32, _SMALL32)
    a = magnitude if magnitude < _FOUR32 else _FOUR32  # past 3.9 the float32 result is 1
    hi = a * a
    gaussian = exp32_normal(-hi) * (_ONE32 - _fma(a, a, -hi))  # hi <= 16: a normal result
    tail = _ONE32 - gaussian * _horner((a - _F32(2.5)) * _F32(2.0 / 3.0), _TAIL32)
    result = small if magnitude < _ONE32 else (tail if x > _ZERO32 else -tail)
    return result if x == x else x
