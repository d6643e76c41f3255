"""Special functions the math module lacks, as scalar code for every target: digamma, polygamma, erfinv
(and lgamma and erfc, which it has, but whose float32 versions are a few ulp off).

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
FUNCTIONS = ("lgamma", "erfc", "digamma", "polygamma", "erfinv")

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


# The CPU versions the generated loops call.
lgamma = njit(cache=True, inline="always")(lgamma_scalar)
erfc = njit(cache=True, inline="always")(erfc_scalar)
digamma = njit(cache=True, inline="always")(digamma_scalar)
polygamma = njit(cache=True, inline="always")(polygamma_scalar)
erfinv = njit(cache=True, inline="always")(erfinv_scalar)
