"""Elementary functions that LLVM can vectorise: exp, expm1, log, log1p, sin, cos, tanh.

Numba compiles ``math.exp`` and its kin to calls of the C library, one element at a time, and
without Intel's SVML (which this Numba lacks) LLVM cannot turn those calls into SIMD code: a loop
over float32[10^6] calling ``math.tanh`` takes 9 ms on this machine where NumPy's SIMD ufunc takes
0.4. The functions here are written in plain arithmetic (range reduction, a polynomial, scaling
by a power of two built from its bits) with no calls and no branches, so a loop calling them is
vectorised like any arithmetic loop. The generated elementwise kernels (numdiff/kernels/_codegen.py)
call them in place of ``math.*`` on the CPU; CUDA keeps its own (libdevice) functions.

Precision. Each function has a float64 and a float32 version (``exp64``, ``exp32``); the name
without suffix picks by the argument's type inside a kernel. The float32 versions run twice the
SIMD lanes and keep their last steps in float64 where that buys accuracy.

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

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from numdiff.kernels._self_healing_cache import njit

# The functions `substitute` maps: ``math.<name>`` -> ``_vecmath.<name>``.
FUNCTIONS = ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh")
# Functions whose calls need the range guard (`outside_sin_cos`).
GUARDED = ("sin", "cos")
SIN_COS_LIMIT = 51000.0  # |x| / (pi / 2) < 2 ** 15: every product n * PIO2_k below is exact

# 1.5 * 2 ** 52: x + MAGIC - MAGIC rounds x (|x| < 2 ** 51) to the nearest integer, and the low bits
# of x + MAGIC hold that integer, so no float-to-int conversion is needed.
_MAGIC = 6755399441055744.0
_MAGIC_BITS = 0x4338000000000000

_LOG2E = 1.4426950408889634
# ln 2 split so that n * _LN2_HI is exact for |n| < 2 ** 21 (its low 21 bits are zero).
_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10

# pi / 2 in four parts of 33 significant bits each (the last part to full precision): for |n| < 2 ** 20
# the products n * _PIO2_1.._PIO2_3 are exact.
_2_OVER_PI = 0.6366197723675814
_PIO2_1 = 1.5707963267341256
_PIO2_2 = 6.077100506303966e-11
_PIO2_3 = 2.0222662487111665e-21
_PIO2_4 = 8.4784276603689e-32


@intrinsic
def _bits_of(typingctx, value):
    """The IEEE-754 bits of a float64 (as an int64) or a float32 (as an int32), no conversion."""
    if value not in (types.float64, types.float32):
        return None
    width = value.bitwidth

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(width))

    return types.int64(value) if width == 64 else types.int32(value), codegen


@intrinsic
def _float_of(typingctx, bits):
    """The float64 whose IEEE-754 bits are the int64 `bits`."""
    if bits is not types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


# LLVM's tuning for recent Intel server cores (Skylake-X to Sapphire Rapids) prefers 256-bit vectors
# even where the core has AVX-512. These attributes let it use the full width in one function.
_WIDE_ATTRIBUTES = ('"prefer-vector-width"="512"', '"min-legal-vector-width"="512"')


@intrinsic
def wide_vectors(typingctx):
    """Mark the compiled function this call sits in for 512-bit vectors; returns None.

    Only a preference: on a CPU without AVX-512 the code is what it was, and Numba's disk cache
    keys machine code by the host CPU, so a cached 512-bit build never runs where the instructions
    are missing. It pays in compute-bound loops over data in the L1 cache (a float32 sin/exp
    chain: 1.5-1.8x); memory-bound loops gain nothing and can lose. In a ``prange`` loop, call it
    inside the loop body (Numba compiles that body as a function of its own).
    """

    def codegen(context, builder, signature, args):
        # llvmlite's FunctionAttributes accepts only the attribute names it knows; these two string
        # attributes go into its set directly.
        for attribute in _WIDE_ATTRIBUTES:
            set.add(builder.function.attributes, attribute)
        return context.get_dummy_value()

    return types.none(), codegen


@njit(inline="always", cache=True, error_model="numpy")
def _round(x):
    """(x rounded to the nearest integer as a float, the same integer as an int64); |x| < 2 ** 51."""
    shifted = x + _MAGIC
    return shifted - _MAGIC, _bits_of(shifted) - _MAGIC_BITS


@njit(inline="always", cache=True, error_model="numpy")
def _pow2(k):
    """2.0 ** k for an int64 -1022 <= k <= 1023."""
    return _float_of((k + 1023) << 52)


@njit(inline="always", cache=True, error_model="numpy")
def _exp_reduced(r):
    """exp(r) - 1 for |r| <= ln(2) / 2: Taylor to degree 14 (remainder below 2 ** -60 of the result)."""
    p = 1.1470745597729725e-11  # 1 / 14!
    p = p * r + 1.6059043836821613e-10
    p = p * r + 2.08767569878681e-09
    p = p * r + 2.505210838544172e-08
    p = p * r + 2.755731922398589e-07
    p = p * r + 2.7557319223985893e-06
    p = p * r + 2.48015873015873e-05
    p = p * r + 0.0001984126984126984
    p = p * r + 0.001388888888888889
    p = p * r + 0.008333333333333333
    p = p * r + 0.041666666666666664
    p = p * r + 0.16666666666666666
    p = p * r + 0.5
    return r + r * (r * p)


@njit(inline="always", cache=True, error_model="numpy")
def _reduce_ln2(x):
    """(n, k, r) with x = n ln 2 + r, |r| <= ln(2) / 2, k = n as an int64; |x| < 2 ** 40."""
    n, k = _round(x * _LOG2E)
    r = (x - n * _LN2_HI) - n * _LN2_LO
    return n, k, r


@njit(inline="always", cache=True, error_model="numpy")
def exp64(x):
    """e ** x. The scale 2 ** n is applied in two halves so that results in the subnormal range
    round once and the largest finite results do not overflow on the way."""
    x = float(x)
    clamped = x if x > -746.0 else -746.0  # NaN becomes -746 here and is put back below
    clamped = clamped if clamped < 710.0 else 710.0
    n, k, r = _reduce_ln2(clamped)
    half = k >> 1
    result = ((1.0 + _exp_reduced(r)) * _pow2(half)) * _pow2(k - half)
    return result if x == x else x


@njit(inline="always", cache=True, error_model="numpy")
def _expm1_moderate(x):
    """expm1(x) for x <= 709 (NaN gives NaN): e ** n (e ** r - 1) + (2 ** n - 1), each part exact
    but the last rounding, so no digits cancel for x near 0."""
    clamped = x if x > -60.0 else -60.0
    clamped = clamped if clamped < 709.0 else 709.0
    n, k, r = _reduce_ln2(clamped)
    scale = _pow2(k)
    result = scale * _exp_reduced(r) + (scale - 1.0)
    return result if x != 0.0 and x == x else x  # expm1(-0.0) is -0.0


@njit(inline="always", cache=True, error_model="numpy")
def expm1_64(x):
    """e ** x - 1, accurate near 0."""
    x = float(x)
    return _expm1_moderate(x) if x <= 709.0 else exp64(x)


@njit(inline="always", cache=True, error_model="numpy")
def tanh64(x):
    """tanh(x) with the sign of x (tanh(-0.0) = -0.0): -expm1(-2|x|) / (expm1(-2|x|) + 2) near 0,
    1 - 2 / (exp(2|x|) + 1) above 0.55, where the first form would double expm1's error."""
    x = float(x)
    magnitude = x if x >= 0.0 else -x
    e = _expm1_moderate(-2.0 * magnitude)
    near_zero = -e / (e + 2.0)
    large = exp64(2.0 * (magnitude if magnitude < 40.0 else 40.0))
    t = near_zero if magnitude < 0.55 else 1.0 - 2.0 / (large + 1.0)
    return t if x > 0.0 else (-t if x < 0.0 else x)


@njit(inline="always", cache=True, error_model="numpy")
def _log_mantissa(m):
    """log(m) for m in [sqrt(1/2), sqrt(2)): 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172."""
    f = m - 1.0
    s = f / (m + 1.0)
    z = s * s
    p = 0.08  # 1 / 25 * 2: the series 2 (s + s^3/3 + ... + s^25/25)
    p = p * z + 0.08695652173913043
    p = p * z + 0.09523809523809523
    p = p * z + 0.10526315789473684
    p = p * z + 0.11764705882352941
    p = p * z + 0.13333333333333333
    p = p * z + 0.15384615384615385
    p = p * z + 0.18181818181818182
    p = p * z + 0.2222222222222222
    p = p * z + 0.2857142857142857
    p = p * z + 0.4
    p = p * z + 0.6666666666666666
    # 2 s + 2 s (z p / 2) = f - s f + s z p: written as f - s (f - z p) to keep the leading term exact
    return f - s * (f - z * p)


@njit(inline="always", cache=True, error_model="numpy")
def log64(x):
    """Natural logarithm: x = m 2 ** e with m in [sqrt(1/2), sqrt(2)), log x = e ln 2 + log m."""
    x = float(x)
    tiny = x < 2.2250738585072014e-308  # subnormal (or zero, negative): scaled by 2 ** 54 first
    scaled = x * 18014398509481984.0 if tiny else x
    bits = _bits_of(scaled)
    # The mantissa as a float in [1, 2), and the exponent; moved to [sqrt(1/2), sqrt(2)) below.
    exponent = ((bits >> 52) & 0x7FF) - 1023
    m = _float_of((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)
    high = m > 1.4142135623730951
    m = m * 0.5 if high else m
    e = float(exponent + (1 if high else 0)) - (54.0 if tiny else 0.0)
    result = e * _LN2_HI + (_log_mantissa(m) + e * _LN2_LO)
    # x <= 0, inf and NaN: the C library's answers.
    result = result if x > 0.0 else (-np.inf if x == 0.0 else np.nan)
    result = result if x < np.inf else x
    return result if x == x else x


@njit(inline="always", cache=True, error_model="numpy")
def log1p64(x):
    """log(1 + x), accurate near 0: u = 1 + x rounded, log1p x = log u + (x - (u - 1)) / u."""
    x = float(x)
    u = 1.0 + x
    correction = (x - (u - 1.0)) / u if u > 0.0 else 0.0
    result = log64(u) + correction
    # |x| below 2 ** -54: 1 + x rounds to 1, and log1p x = x to the last bit.
    small = -1.1102230246251565e-16 < x < 1.1102230246251565e-16
    result = x if small else result
    return result if u < np.inf else log64(u)


@njit(inline="always", cache=True, error_model="numpy")
def _sin_reduced(r):
    """sin(r) for |r| <= pi / 4: Taylor to degree 17."""
    z = r * r
    p = 2.8114572543455206e-15  # 1 / 17!
    p = p * z - 7.647163731819816e-13
    p = p * z + 1.6059043836821613e-10
    p = p * z - 2.505210838544172e-08
    p = p * z + 2.755731922398589e-06
    p = p * z - 0.0001984126984126984
    p = p * z + 0.008333333333333333
    p = p * z - 0.16666666666666666
    return r + r * (z * p)


@njit(inline="always", cache=True, error_model="numpy")
def _cos_reduced(r):
    """cos(r) for |r| <= pi / 4: Taylor to degree 18."""
    z = r * r
    p = -1.5619206968586225e-16  # -1 / 18!
    p = p * z + 4.779477332387385e-14
    p = p * z - 1.1470745597729725e-11
    p = p * z + 2.08767569878681e-09
    p = p * z - 2.755731922398589e-07
    p = p * z + 2.48015873015873e-05
    p = p * z - 0.001388888888888889
    p = p * z + 0.041666666666666664
    w = 0.5 * z
    # 1 - z/2 + z^2 p, with 1 - z/2 rounded once: (1 - w) is exact-ish for w <= 0.31
    return (1.0 - w) + ((1.0 - (1.0 - w)) - w + z * (z * p))


@njit(inline="always", cache=True, error_model="numpy")
def _reduce_pio2(x):
    """(r, k) with x = k pi/2 + r, |r| <= pi/4 (to a few ulp of r), for |x| < SIN_COS_LIMIT;
    outside it (and for inf, NaN) r is 0 and the caller's answer is replaced."""
    inside = -SIN_COS_LIMIT < x < SIN_COS_LIMIT
    x = x if inside else 0.0
    n, k = _round(x * _2_OVER_PI)
    r = (((x - n * _PIO2_1) - n * _PIO2_2) - n * _PIO2_3) - n * _PIO2_4
    return r, k


@njit(inline="always", cache=True, error_model="numpy")
def sin64(x):
    """sin(x) for |x| < SIN_COS_LIMIT (see `outside_sin_cos` for the rest); sin(inf) is NaN."""
    x = float(x)
    r, k = _reduce_pio2(x)
    s = _sin_reduced(r)
    c = _cos_reduced(r)
    value = c if (k & 1) else s
    value = -value if (k & 2) else value
    value = value if x != 0.0 else x  # sin(-0.0) is -0.0
    return value if x - x == 0.0 else x - x  # inf and NaN give NaN


@njit(inline="always", cache=True, error_model="numpy")
def cos64(x):
    """cos(x) for |x| < SIN_COS_LIMIT (see `outside_sin_cos` for the rest); cos(inf) is NaN."""
    x = float(x)
    r, k = _reduce_pio2(x)
    s = _sin_reduced(r)
    c = _cos_reduced(r)
    value = s if (k & 1) else c
    value = -value if ((k + 1) & 2) else value
    return value if x - x == 0.0 else x - x


@njit(inline="always", cache=True, error_model="numpy")
def outside_sin_cos(x):
    """Whether sin/cos of x needs the C library (finite |x| >= SIN_COS_LIMIT)."""
    x = float(x)
    magnitude = x if x >= 0.0 else -x
    return SIN_COS_LIMIT <= magnitude < np.inf


# ----------------------------------------------------------------------------------------------------
# float32: the same algorithms in single precision, twice the lanes per instruction. Polynomials are
# shorter (their remainder below 2 ** -30 of the result); sin and cos reduce their argument in float64.

_F32 = np.float32


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
    """log1p in float64, rounded: the float32 form loses an ulp to the correction's rounding."""
    return _F32(log1p64(x))


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
_SIGN_BIT = np.int64(-0x8000000000000000)  # the float64 sign bit, as an int64


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (LLVM's llvm.fma: one instruction where the CPU has FMA)."""
    if not (a == b == c == types.float64):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float64(a, b, c), codegen


@njit(inline="always", cache=True, error_model="numpy")
def _sin_cos32(x, cosine):
    """sin(x) (or cos(x)) of a float32 for |x| < SIN_COS_LIMIT, computed in float64 and rounded once.

    No special cases cost a lane: sin(-0.0) is r (1 + ...) with r = -0.0, so -0.0; an infinite or NaN
    x makes r NaN (inf - inf), so NaN.
    """
    wide = np.float64(x)
    n, k = _round(wide * _2_OVER_PI)
    r = _fma(-n, _PIO2_TAIL, _fma(-n, _PIO2_HEAD, wide))
    z = r * r
    s = r * _fma(z, _fma(_fma(_fma(_SIN_Q[0], z, _SIN_Q[1]), z, _SIN_Q[2]), z, _SIN_Q[3]), 1.0)
    c = _fma(z, _fma(_fma(_fma(_COS_P[0], z, _COS_P[1]), z, _COS_P[2]), z, _COS_P[3]), 1.0)
    # The quadrant k picks the polynomial (odd k: the other one) and the sign (bit 1 of k for sin,
    # of k + 1 for cos), the sign by integer arithmetic rather than a select: sin and cos of one x
    # in one loop share the choice, and take 0.57 ns an element instead of 0.69 (bit for bit alike).
    swap = (k & 1) != 0
    if cosine:
        value = s if swap else c
        sign = ((k + 1) << 62) & _SIGN_BIT
    else:
        value = c if swap else s
        sign = (k << 62) & _SIGN_BIT
    return _F32(_float_of(_bits_of(value) ^ sign))


@njit(inline="always", cache=True, error_model="numpy")
def sin32(x):
    return _sin_cos32(x, False)


@njit(inline="always", cache=True, error_model="numpy")
def cos32(x):
    return _sin_cos32(x, True)


def _by_precision(name: str, double, single):
    """The function _vecmath exports as `name`: `single` for a float32 argument, else `double`."""

    def function(x):
        return double(x)  # called from Python (outside a kernel): the float64 version

    def single_precision(x):
        return single(x)

    def double_precision(x):
        return double(x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = double.py_func.__doc__
    # Numba names compiled code after the module and qualified name plus a per-process counter, and
    # a kernel loaded from its disk cache can resolve a callee by that name: two implementations
    # sharing a qualified name (these closures, across the seven functions) could then be swapped
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
