"""The float32 half of numdiff.kernels._vecmath (see there): the same algorithms in single
precision, twice the lanes per instruction. Polynomials are shorter (their remainder below 2 ** -30
of the result); sin and cos reduce their argument and evaluate in float64, rounding once."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath64 import (
    _2_OVER_PI,
    _LN2_HI,
    _LN2_LO,
    _LOG2E,
    _bits_of,
    _fma,
    _round,
    log64,
    sin_cos_quadrant,
)

_F32 = np.float32
_TINY_LOG1P32 = 2.0**-29  # below it log1p of a float32 rounds to the float32 itself


@intrinsic
def _float_of32(typingctx, bits):
    """The float32 whose IEEE-754 bits are the low 32 bits of the integer `bits` (Numba widens
    int32 arithmetic to int64)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = args[0]
        if bits.bitwidth > 32:
            value = builder.trunc(value, ir.IntType(32))
        return builder.bitcast(value, ir.FloatType())

    return types.float32(bits), codegen


_MAGIC32 = _F32(12582912.0)  # 1.5 * 2 ** 23
_MAGIC32_BITS = np.int32(0x4B400000)
_LOG2E32 = _F32(_LOG2E)
_LN2_HI32 = _F32(0.693359375)  # 9 significant bits: n * _LN2_HI32 is exact for |n| < 2 ** 15
_LN2_LO32 = _F32(-2.1219444005471377e-4)
_ONE32 = _F32(1.0)
_HALF32 = _F32(0.5)
_TWO32 = _F32(2.0)
_ZERO32 = _F32(0.0)
_INF32 = _F32(np.inf)
_NAN32 = _F32(np.nan)
_127 = np.int32(127)
_E8 = tuple(_F32(1.0 / f) for f in (40320.0, 5040.0, 720.0, 120.0, 24.0, 6.0))  # 1/8! .. 1/3!


@njit(inline="always", cache=True, error_model="numpy")
def _pow2_32(k):
    """2.0 ** k as a float32, for an int32 -126 <= k <= 127."""
    return _float_of32((k + _127) << np.int32(23))


@njit(inline="always", cache=True, error_model="numpy")
def _exp_tail32(r):
    """p with exp(r) - 1 = r + r**2 p for |r| <= ln(2) / 2, float32: Taylor to degree 8."""
    p = _E8[0]
    p = p * r + _E8[1]
    p = p * r + _E8[2]
    p = p * r + _E8[3]
    p = p * r + _E8[4]
    p = p * r + _E8[5]
    return p * r + _HALF32


@njit(inline="always", cache=True, error_model="numpy")
def _reduce_ln2_32(x):
    """(k, r): x = k ln 2 + r, |r| <= ln(2) / 2 (k an int32), for |x| < 2 ** 20, float32."""
    shifted = x * _LOG2E32 + _MAGIC32
    n = shifted - _MAGIC32
    k = _bits_of(shifted) - _MAGIC32_BITS
    r = (x - n * _LN2_HI32) - n * _LN2_LO32
    return k, r


@njit(inline="always", cache=True, error_model="numpy")
def exp32(x):
    """e ** x in float32 (subnormal results round once, through a scale applied in two halves).

    The clamps let a NaN through (every comparison with it is false), and a NaN stays NaN whatever
    scale its garbage exponent picks, so NaN costs no lane.
    """
    clamped = _F32(-104.0) if x < _F32(-104.0) else x
    clamped = _F32(89.0) if clamped > _F32(89.0) else clamped
    k, r = _reduce_ln2_32(clamped)
    half = k >> np.int32(1)
    return ((_ONE32 + (r + r * (r * _exp_tail32(r)))) * _pow2_32(half)) * _pow2_32(k - half)


@njit(inline="always", cache=True, error_model="numpy")
def exp32_normal(x):
    """exp32 for -87 <= x <= 88, where the result is a normal float32: the same reduction and
    polynomial, bit for bit, without the clamps and the two-step scale that subnormal and overflowing
    results need. erf's Gaussian, exp(-a * a) with a <= 4, calls this: the clamps and the second
    scale were an eighth of GELU's forward on float32[524288] (930 -> 820 us, one thread)."""
    k, r = _reduce_ln2_32(x)
    return (_ONE32 + (r + r * (r * _exp_tail32(r)))) * _pow2_32(k)


@njit(inline="always", cache=True, error_model="numpy")
def _expm1_moderate32(x):
    """expm1(x) for x <= 88 (see _expm1_moderate), as a float64: the reduction and polynomial in
    float32, the last sum in float64, so callers round once."""
    clamped = x if x > _F32(-30.0) else _F32(-30.0)
    clamped = clamped if clamped < _F32(88.0) else _F32(88.0)
    k, r = _reduce_ln2_32(clamped)
    n = float(k)
    wide = (float(clamped) - n * _LN2_HI) - n * _LN2_LO  # r again, unrounded
    scale = float(_pow2_32(k))
    result = scale * (wide + wide * (wide * float(_exp_tail32(r)))) + (scale - 1.0)
    return result if x != _ZERO32 and x == x else float(x)


@njit(inline="always", cache=True, error_model="numpy")
def expm1_32(x):
    return _F32(_expm1_moderate32(x)) if x <= _F32(88.0) else exp32(x)


@njit(inline="always", cache=True, error_model="numpy")
def tanh32(x):
    magnitude = x if x >= _ZERO32 else -x
    e = _expm1_moderate32(_F32(-2.0) * magnitude)
    t = _F32(-e / (e + 2.0))
    return t if x > _ZERO32 else (-t if x < _ZERO32 else x)


_L32 = tuple(_F32(2.0 / k) for k in (13.0, 11.0, 9.0, 7.0, 5.0, 3.0))


@njit(inline="always", cache=True, error_model="numpy")
def log32(x):
    """Natural logarithm in float32: x = m 2 ** e, log x = e ln 2 + 2 atanh((m - 1) / (m + 1))."""
    tiny = x < _F32(1.1754943508222875e-38)
    scaled = x * _F32(16777216.0) if tiny else x  # 2 ** 24
    bits = _bits_of(scaled)
    exponent = ((bits >> np.int32(23)) & np.int32(0xFF)) - _127
    m = _float_of32((bits & np.int32(0x007FFFFF)) | np.int32(0x3F800000))
    high = m > _F32(1.4142135623730951)
    m = m * _HALF32 if high else m
    e = _F32(exponent + (np.int32(1) if high else np.int32(0))) - (_F32(24.0) if tiny else _ZERO32)
    f = m - _ONE32
    s = f / (m + _ONE32)
    z = s * s
    p = _L32[0]
    p = p * z + _L32[1]
    p = p * z + _L32[2]
    p = p * z + _L32[3]
    p = p * z + _L32[4]
    p = p * z + _L32[5]
    log_m = f - s * (f - z * p)
    result = e * _LN2_HI32 + (log_m + e * _LN2_LO32)
    result = result if x > _ZERO32 else (-_INF32 if x == _ZERO32 else _NAN32)
    result = result if x < _INF32 else x
    return result if x == x else x


@njit(inline="always", cache=True, error_model="numpy")
def log1p32(x):
    """log1p of a float32 in float64, rounded once (a float32 form loses an ulp to its rounding).

    For |x| >= 2 ** -29 the float64 sum 1 + x is exact (x's last bit is at 2 ** -52 or above), so
    log64(1 + x) needs no correction term and no second division: the same bits as log1p64's answer,
    at 0.53 -> 0.25 ms on float32[590000] (one thread). Below, log1p x = x (1 - x / 2 + ...) rounds to
    x itself, as log1p64 returns it there."""
    wide = float(x)
    small = -_TINY_LOG1P32 < wide < _TINY_LOG1P32
    return x if small else _F32(log64(1.0 + wide))


# sin and cos of float32: the argument and both polynomials in float64, one rounding at the end. The
# float64 work runs half the lanes, but it is short: the polynomials need 2 ** -30, not 2 ** -53, and
# the result is the exact value correctly rounded in all but the rarest cases (an exhaustive run over
# every float32 below SIN_COS_LIMIT: 0.5010 ulp at worst; tests/kernels/test_vecmath.py samples it).
# Near-minimax coefficients (a weighted least-squares fit on Chebyshev nodes, iterated toward equal
# ripple), relative error on |r| <= pi / 4 below 2 ** -37 (sin) and 2 ** -33.9 (cos):
# sin r = r (1 + z q(z)), cos r = 1 + z p(z), z = r ** 2, q and p of degree 3.
_SIN_Q = (2.71812126935263e-06, -0.00019839312223958534, 0.00833332930466275, -0.16666666640794894)
_COS_P = (2.438356328242647e-05, -0.0013886681596278138, 0.04166662035505863, -0.4999999969445077)
# pi / 2 as a float64 and the float64 nearest its remainder: with fused multiply-adds, x - n (P1 + P2)
# is exact to float64 rounding of the result for |n| < 2 ** 20.
_PIO2_HEAD = 1.5707963267948966
_PIO2_TAIL = 6.123233995736766e-17



@njit(inline="always", cache=True, error_model="numpy")
def sin_cos32_wide(x, cosine):
    """sin(x) (or cos(x)) of a float32 for |x| < SIN_COS_LIMIT, in float64 before its rounding to
    float32: relative error below 2 ** -33 (the polynomials'), for a caller that goes on in float64.

    No special cases cost a lane: sin(-0.0) is r (1 + ...) with r = -0.0, so -0.0; an infinite or NaN
    x makes r NaN (inf - inf), so NaN.
    """
    wide = np.float64(x)
    n, k = _round(wide * _2_OVER_PI)
    r = _fma(-n, _PIO2_TAIL, _fma(-n, _PIO2_HEAD, wide))
    z = r * r
    s = r * _fma(z, _fma(_fma(_fma(_SIN_Q[0], z, _SIN_Q[1]), z, _SIN_Q[2]), z, _SIN_Q[3]), 1.0)
    c = _fma(z, _fma(_fma(_fma(_COS_P[0], z, _COS_P[1]), z, _COS_P[2]), z, _COS_P[3]), 1.0)
    return sin_cos_quadrant(s, c, k, cosine)


@njit(inline="always", cache=True, error_model="numpy")
def sin32_wide(x):
    """sin of a float32 in float64, before the rounding sin32 applies (see sin_cos32_wide)."""
    return sin_cos32_wide(x, False)


@njit(inline="always", cache=True, error_model="numpy")
def cos32_wide(x):
    """cos of a float32 in float64, before the rounding cos32 applies (see sin_cos32_wide)."""
    return sin_cos32_wide(x, True)


@njit(inline="always", cache=True, error_model="numpy")
def sin32(x):
    """sin of a float32 for |x| < SIN_COS_LIMIT, computed in float64 and rounded once."""
    return _F32(sin_cos32_wide(x, False))


@njit(inline="always", cache=True, error_model="numpy")
def cos32(x):
    """cos of a float32 for |x| < SIN_COS_LIMIT, computed in float64 and rounded once."""
    return _F32(sin_cos32_wide(x, True))
