"""Special functions the math module lacks, as scalar code for every target: digamma, polygamma, erfinv,
the modified Bessel functions i0, i0e, i1, i1e, and erfcx (and lgamma and erfc, which it has, but whose float32 versions are a few ulp off).

The scalar rules (numdiff/_ground/scalar_rules.py) call them as ``math.digamma(x)``,
``math.polygamma(x, order)`` and ``math.erfinv(x)``. Generated CPU loops call the ``@njit``
versions below (numdiff/kernels/_codegen.py rewrites ``math.<name>`` to ``_special.<name>``), CUDA
kernels ``cuda.jit(device=True)`` versions of the same Python source
(numdiff/cuda/kernels/_scalar_math.py), and an expression evaluated with NumPy runs the rule's
CPU loop. Each function is one self-contained body (no calls but ``math.*``), so that one source
compiles as a CUDA device function, and it checks its poles and edges before dividing: with
Numba's default error model a division by zero would raise, and on the CUDA simulator the code
runs as Python.

Everything is computed in float64 whatever the argument's type (the constants are float64); a
float32 result is the float64 one rounded. Accuracy (tests/ops/test_special_functions.py, against
mpmath and torch): a few ulp in float64 away from the zeros of digamma and polygamma.
Values at the edges follow PyTorch: digamma(0.0) = -inf, digamma(-0.0) = inf, digamma at a negative
integer or -inf is NaN; erfinv(+-1) = +-inf and NaN outside [-1, 1]. polygamma(n, x) for n >= 1 is
+inf (n odd) or -inf (n even) at a pole, 0 at +inf and NaN at -inf.
"""

from __future__ import annotations

import math

from numdiff.kernels._self_healing_cache import njit

# The functions a generated loop reaches as ``_special.<name>`` (see numdiff/kernels/_codegen.py).
FUNCTIONS = ("lgamma", "erfc", "digamma", "polygamma", "erfinv", "i0", "i0e", "i1", "i1e", "erfcx")

# Shifting the argument up to at least this makes the asymptotic series below exact to rounding.
_ASYMPTOTIC_FROM = 10.0


def lgamma_scalar(x):
    """log |Gamma(x)| in float64 (the C library's float version is off by up to 5 ulp). ``x * 1.0``
    widens a float32 (Numba's float() keeps it float32) and keeps the sign of -0.0."""
    return math.lgamma(x * 1.0)


def erfc_scalar(x):
    """erfc(x) in float64 (the C library's float version is off by up to 3 ulp)."""
    return math.erfc(x * 1.0)


def digamma_scalar(x):
    """psi(x) = d/dx ln Gamma(x): reflection below 0, recurrence up to 10, then the asymptotic series
    ln y - 1/(2y) - sum B_2k / (2k y^2k) (eight terms: below 1e-17 from y = 10 on)."""
    if x != x or x == -math.inf:
        return math.nan
    if x == math.inf:
        return x
    if x == 0.0:
        return -math.inf if math.copysign(1.0, x) > 0.0 else math.inf
    result = 0.0
    if x < 0.0:
        if x == math.floor(x):
            return math.nan
        # psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi, so x first loses its nearest
        # integer k (x - k is exact, and x itself for |x| < 1/2).
        r = x - math.floor(x + 0.5)
        result = -math.pi / math.tan(math.pi * r)
        x = 1.0 - x
    while x < _ASYMPTOTIC_FROM:
        result -= 1.0 / x
        x += 1.0
    s = 1.0 / (x * x)
    series = s * (1.0 / 12.0 - s * (1.0 / 120.0 - s * (1.0 / 252.0 - s * (1.0 / 240.0 - s * (
        1.0 / 132.0 - s * (691.0 / 32760.0 - s * (1.0 / 12.0 - s * 3617.0 / 8160.0)))))))
    return result + math.log(x) - 0.5 / x - series


def polygamma_scalar(x, order):
    """psi^(n)(x) for an integer n >= 1 (a float): (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta
    summed directly up to x + k >= 10 + n, then Euler-Maclaurin with ten Bernoulli terms. For n = 1
    below 0.5, the reflection psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) first."""
    n = order
    if x != x or x == -math.inf:
        return math.nan
    odd = n - 2.0 * math.floor(0.5 * n) == 1.0
    if x == math.inf:
        return 0.0
    if x <= 0.0 and x == math.floor(x):
        return math.inf if odd else -math.inf
    reflected = 0.0
    flip = 1.0
    if n == 1.0 and x < 0.5:
        r = x - math.floor(x + 0.5)  # sin(pi x)^2 has period 1; x - k is exact (see digamma)
        sine = math.sin(math.pi * r)
        # (sine * sine underflows to 0 for |x| < 1e-154: the pole's inf, without dividing by 0)
        reflected = math.pi * math.pi / (sine * sine) if sine * sine != 0.0 else math.inf
        flip = -1.0
        x = 1.0 - x
    s = n + 1.0
    factorial = 1.0
    k = 2.0
    while k <= n:
        factorial *= k
        k += 1.0
    total = 0.0
    limit = _ASYMPTOTIC_FROM + n
    while x < limit:
        power = x ** s  # 1 / x^s, an infinite term (with its sign) where x^s underflows
        total += 1.0 / power if power != 0.0 else math.copysign(math.inf, power)
        x += 1.0
    # zeta(s, x) = x^(1-s) / (s-1) + x^-s / 2 + sum_k B_2k t_k, t_k = s(s+1)...(s+2k-2) x^(1-s-2k) / (2k)!
    total += x ** (1.0 - s) / (s - 1.0) + 0.5 * x ** -s
    term = 0.5 * s * x ** (-s - 1.0)
    total += term / 6.0
    inverse_square = 1.0 / (x * x)
    j = 2.0
    for b in (-1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0, 7.0 / 6.0, -3617.0 / 510.0,
              43867.0 / 798.0, -174611.0 / 330.0):
        term *= (s + 2.0 * j - 3.0) * (s + 2.0 * j - 2.0) * inverse_square / ((2.0 * j - 1.0) * (2.0 * j))
        total += b * term
        j += 1.0
    return reflected + flip * (1.0 if odd else -1.0) * factorial * total


# 2 / sqrt(pi), the derivative of erf at 0, and sqrt(pi) / 2, its inverse.
_TWO_OVER_SQRT_PI = 1.1283791670955126
_SQRT_PI = 1.7724538509055160


def erfinv_scalar(x):
    """The y with erf(y) = x: a starting guess refined by Halley steps on erf(y) - x (|x| <= 0.5) or
    on erfc(y) - (1 - |x|) (1 - |x| is exact there, so the tail keeps its digits up to |x| -> 1)."""
    if x != x or x > 1.0 or x < -1.0:
        return math.nan
    if x == 1.0 or x == -1.0:
        return x * math.inf
    if x == 0.0:
        return x
    a = math.fabs(x)
    if a <= 0.5:
        # erfinv's Maclaurin series to x^7 (error below 2e-4 at 0.5).
        x2 = a * a
        y = 0.5 * _SQRT_PI * a * (1.0 + x2 * (0.2617993877991494 + x2 * (
            0.14393173084921979 + x2 * 0.09766361950392055)))
    else:
        # erfc(y) ~ exp(-y^2) / (y sqrt(pi)): y^2 = -ln(t sqrt(pi) y), iterated from y^2 = -ln t.
        t = 1.0 - a
        y = math.sqrt(-math.log(t))
        y = math.sqrt(-math.log(t * _SQRT_PI * y))
        y = math.sqrt(-math.log(t * _SQRT_PI * y))
    for _ in range(6):
        # Halley on f(y) = erf(y) - a: f'' / f' = -2y, so the step is (f / f') / (1 + y f / f').
        slope = _TWO_OVER_SQRT_PI * math.exp(-y * y)
        if a <= 0.5:
            ratio = (math.erf(y) - a) / slope
        else:
            ratio = ((1.0 - a) - math.erfc(y)) / slope
        step = ratio / (1.0 + y * ratio)
        y -= step
        if math.fabs(step) <= 1e-17 * y:
            break
    return math.copysign(y, x)


# Chebyshev coefficients of the modified Bessel functions (Cephes' tables, as SciPy and PyTorch use):
# exp(-x) I0(x) on [0, 8] in t = x / 2 - 2, and exp(-x) sqrt(x) I0(x) on [8, inf) in t = 32 / x - 2;
# the same for I1(x) / x and I1(x). A series is summed by Clenshaw's recurrence, b0 = t b1 - b2 + c,
# the value being (b0 - b2) / 2; each function below writes the loop out, so that its body stays
# self-contained (a CUDA device function, see the module docstring). Every table is 30 long, shorter
# ones led by zeros (which leave the recurrence at 0), so that one loop takes either table of a pair.
_I0E_NEAR = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1,
)
_I0E_FAR = (0.0,) * 5 + (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
)
_I1E_NEAR = (0.0,) + (
    2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
    -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
    3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
    -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
    9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7,
    -8.56872026469545474066e-7, 3.47025130813767847674e-6, -1.32731636560394358279e-5,
    4.78156510755005422638e-5, -1.61760815825896745588e-4, 5.12285956168575772895e-4,
    -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
    2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1,
    -1.76416518357834055153e-1, 2.52587186443633654823e-1,
)
_I1E_FAR = (0.0,) * 5 + (
    7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
    -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
    -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
    4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
    3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
    -3.83538038596423702205e-9, -2.63146884688951950684e-8, -2.51223623787020892529e-7,
    -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
    7.78576235018280120474e-1,
)


# The largest float64 whose exp is finite (log of the largest float64, rounded down). Python's math.exp
# raises above it (the CUDA simulator runs these bodies as Python), so the functions that take exp(|x|)
# return the overflow's inf themselves.
_EXP_OVERFLOWS_ABOVE = 709.782712893384


def i0e_scalar(x):
    """exp(-|x|) I0(x), the modified Bessel function of order 0 scaled so that it stays finite: even,
    1 at 0, ~1 / sqrt(2 pi |x|) at infinity (0 at +-inf)."""
    a = math.fabs(x * 1.0)
    if a != a:
        return a
    near = a <= 8.0
    t = a * 0.5 - 2.0 if near else 32.0 / a - 2.0
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    for c in _I0E_NEAR if near else _I0E_FAR:
        b2 = b1
        b1 = b0
        b0 = t * b1 - b2 + c
    series = 0.5 * (b0 - b2)
    return series if near else series / math.sqrt(a)


def i0_scalar(x):
    """I0(x) = sum (x / 2)^2k / (k!)^2: even, 1 at 0, inf where exp(|x|) overflows (|x| > 709.78) and
    NaN at +-inf (SciPy's and PyTorch's values: their exp(x) / sqrt(x) form is inf * 0 there)."""
    a = math.fabs(x * 1.0)
    if a != a or a == math.inf:
        return math.nan
    if a > _EXP_OVERFLOWS_ABOVE:
        return math.inf
    near = a <= 8.0
    t = a * 0.5 - 2.0 if near else 32.0 / a - 2.0
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    for c in _I0E_NEAR if near else _I0E_FAR:
        b2 = b1
        b1 = b0
        b0 = t * b1 - b2 + c
    series = 0.5 * (b0 - b2)
    return math.exp(a) * series if near else math.exp(a) * series / math.sqrt(a)


def i1e_scalar(x):
    """exp(-|x|) I1(x): odd, +0.0 at both zeros (as SciPy and PyTorch give), ~sign(x) / sqrt(2 pi |x|) at
    infinity."""
    a = math.fabs(x * 1.0)
    if a != a:
        return a
    near = a <= 8.0
    t = a * 0.5 - 2.0 if near else 32.0 / a - 2.0
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    for c in _I1E_NEAR if near else _I1E_FAR:
        b2 = b1
        b1 = b0
        b0 = t * b1 - b2 + c
    series = 0.5 * (b0 - b2)
    value = series * a if near else series / math.sqrt(a)
    return math.copysign(value, x) + 0.0  # -0.0 + 0.0 is +0.0, as SciPy and PyTorch return at -0.0


def i1_scalar(x):
    """I1(x) = sum (x / 2)^(2k+1) / (k! (k+1)!): odd, +0.0 at both zeros (as SciPy and PyTorch give), +-inf where exp(|x|) overflows and NaN at
    +-inf (as i0)."""
    a = math.fabs(x * 1.0)
    if a != a or a == math.inf:
        return math.nan
    if a > _EXP_OVERFLOWS_ABOVE:
        return math.copysign(math.inf, x)
    near = a <= 8.0
    t = a * 0.5 - 2.0 if near else 32.0 / a - 2.0
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    for c in _I1E_NEAR if near else _I1E_FAR:
        b2 = b1
        b1 = b0
        b0 = t * b1 - b2 + c
    series = 0.5 * (b0 - b2)
    value = math.exp(a) * series * a if near else math.exp(a) * series / math.sqrt(a)
    return math.copysign(value, x) + 0.0  # -0.0 + 0.0 is +0.0, as SciPy and PyTorch return at -0.0


# 1 / sqrt(pi): erfcx(x) ~ 1 / (x sqrt(pi)) for large x.
_ONE_OVER_SQRT_PI = 0.5641895835477563


def erfcx_scalar(x):
    """exp(x^2) erfc(x), the scaled complementary error function, finite where erfc underflows.

    Below 26, erfc(x) keeps its relative accuracy and exp(x^2) is taken exactly enough: x^2 is split
    into hi + lo (Veltkamp's split of x, so hi + lo is x * x to twice the precision) and
    exp(x^2) = exp(hi) (1 + lo). From 26 on, the asymptotic series
    1 / (x sqrt(pi)) * sum (-1)^k (2k - 1)!! / (2 x^2)^k, whose terms fall by 1 / 1352 or more
    (twelve terms reach 1e-37). inf for x below -26.64 (exp(x^2) overflows), 0 at +inf."""
    x = x * 1.0
    if x != x:
        return x
    if x == math.inf:
        return 0.0
    if x < 26.0:
        square = x * x
        if square > _EXP_OVERFLOWS_ABOVE:
            return math.inf
        c = 134217729.0 * x  # 2^27 + 1
        high = c - (c - x)
        low = x - high
        error = ((high * high - square) + 2.0 * high * low) + low * low
        return math.exp(square) * (1.0 + error) * math.erfc(x)
    r = 0.5 / (x * x)
    term = 1.0
    total = 1.0
    k = 1.0
    while k <= 12.0:
        term *= -(2.0 * k - 1.0) * r
        total += term
        k += 1.0
    return _ONE_OVER_SQRT_PI / x * total


# The CPU versions the generated loops call.
lgamma = njit(cache=True, inline="always")(lgamma_scalar)
erfc = njit(cache=True, inline="always")(erfc_scalar)
digamma = njit(cache=True, inline="always")(digamma_scalar)
polygamma = njit(cache=True, inline="always")(polygamma_scalar)
erfinv = njit(cache=True, inline="always")(erfinv_scalar)
i0 = njit(cache=True, inline="always")(i0_scalar)
i0e = njit(cache=True, inline="always")(i0e_scalar)
i1 = njit(cache=True, inline="always")(i1_scalar)
i1e = njit(cache=True, inline="always")(i1e_scalar)
erfcx = njit(cache=True, inline="always")(erfcx_scalar)
