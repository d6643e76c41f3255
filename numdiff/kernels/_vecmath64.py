"""The float64 half of numdiff.kernels._vecmath (see there), and the bit-level helpers both halves
use: float <-> bits without conversion, rounding by a magic constant, powers of two from their bits,
a fused multiply-add, and the intrinsic that asks LLVM for 512-bit vectors."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from numdiff.kernels._self_healing_cache import njit

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
_SIGN_BIT = np.int64(-0x8000000000000000)  # the float64 sign bit, as an int64


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


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (LLVM's llvm.fma: one instruction where the CPU has FMA), all three
    float64 or all three float32."""
    if not (a == b == c and a in (types.float64, types.float32)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return a(a, b, c), codegen



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
def exp64_normal(x):
    """exp64 for -708 <= x <= 709, where the result is a normal float64: the same reduction and
    polynomial, bit for bit, without the clamps, the NaN check and the two-step scale (erf64's
    Gaussian, exp(-a * a) with a <= 6)."""
    _, k, r = _reduce_ln2(x)
    return (1.0 + _exp_reduced(r)) * _pow2(k)


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
    return result if u < np.inf else u  # log(inf) = inf, and a NaN stays the same NaN


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
def sin_cos_quadrant(s, c, k, cosine):
    """sin (or cos) of x = k pi/2 + r from s = sin r and c = cos r: odd k swaps the two, and the
    sign is bit 1 of k (of k + 1 for cos), applied by integer arithmetic rather than a select, so
    that sin and cos of one x in one loop share the choice (float32: 0.57 ns an element for both
    against 0.69)."""
    swap = (k & 1) != 0
    if cosine:
        value = s if swap else c
        sign = ((k + 1) << 62) & _SIGN_BIT
    else:
        value = c if swap else s
        sign = (k << 62) & _SIGN_BIT
    return _float_of(_bits_of(value) ^ sign)


@njit(inline="always", cache=True, error_model="numpy")
def _sin_cos64(x, cosine):
    """sin(x) (or cos(x)) for |x| < SIN_COS_LIMIT (see `outside_sin_cos` for the rest); sin(inf)
    and cos(inf) are NaN, sin(-0.0) is -0.0."""
    x = float(x)
    r, k = _reduce_pio2(x)
    value = sin_cos_quadrant(_sin_reduced(r), _cos_reduced(r), k, cosine)
    value = value if cosine or x != 0.0 else x
    return value if x - x == 0.0 else x - x  # inf and NaN give NaN


@njit(inline="always", cache=True, error_model="numpy")
def sin64(x):
    return _sin_cos64(x, False)


@njit(inline="always", cache=True, error_model="numpy")
def cos64(x):
    return _sin_cos64(x, True)


@njit(inline="always", cache=True, error_model="numpy")
def outside_sin_cos(x):
    """Whether sin/cos of x needs the C library (finite |x| >= SIN_COS_LIMIT)."""
    x = float(x)
    magnitude = x if x >= 0.0 else -x
    return SIN_COS_LIMIT <= magnitude < np.inf


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def lane_sum(values):
    """The sum of a 1-D array in float64, in SIMD lanes: LLVM may reorder these additions (and
    only these), so it keeps a running sum per vector lane, added up at the end, where a single
    running sum is one chain of dependent adds. The order is fixed by the compiled loop, the same
    on every call and with any number of threads.

    The generated kernels' full sums use it (numdiff/compile/group_kernel.py). Whatever the order,
    the error stays at float64's, far below a float32 result's rounding.
    """
    total = 0.0
    for j in range(values.size):
        total += values[j]
    return total
