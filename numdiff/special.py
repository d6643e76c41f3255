"""``torch.special``: PyTorch's special-function namespace, on numdiff's elementwise ops.

Every name is an existing differentiable op or a composition of them (gradients included):
``numdiff.special.expit`` is numdiff.sigmoid, ``gammaln`` is numdiff.lgamma, ``ndtr`` is
``(1 + erf(x / sqrt 2)) / 2``, and so on. The Bessel functions J, Y and K, ``airy_ai``,
``spherical_bessel_j0`` and ``gammainc``/``gammaincc`` call SciPy on host values
(numdiff/_special_host.py).

>>> numdiff.special.gammaln(numdiff.tensor([1.0, 4.0]))  # log Gamma: 0 and log 6
tensor([0.0000, 1.7918])
"""

from __future__ import annotations

import math
from typing import Any

from numdiff._dtype import float64, get_default_dtype, promote
from numdiff._special_host import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    gammainc,
    gammaincc,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from numdiff.creation import full_like
from numdiff.ops._util import ensure_tensor
from numdiff.ops.activation import log_softmax, softmax
from numdiff.ops.composed_index import broadcast_tensors
from numdiff.ops.elementwise import PUBLIC
from numdiff.ops.moments import logsumexp
from numdiff.ops.selection import where
from numdiff.ops.special_functions import digamma, erfc, erfinv, lgamma, logit, mvlgamma, polygamma
from numdiff.ops.unary import round
from numdiff.tensor import Tensor

erf, exp2, expm1, log1p = PUBLIC["erf"], PUBLIC["exp2"], PUBLIC["expm1"], PUBLIC["log1p"]
expit = PUBLIC["sigmoid"]
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma

xlogy = PUBLIC["xlogy"]
# The modified Bessel functions of the first kind (orders 0 and 1, plain and scaled by exp(-|x|)) and
# the scaled complementary error function exp(x^2) erfc(x): scalar rules with their derivatives.
i0, i0e, i1, i1e, erfcx = PUBLIC["i0"], PUBLIC["i0e"], PUBLIC["i1"], PUBLIC["i1e"], PUBLIC["erfcx"]
# PyTorch's second names for I0 and I1 (the same values; torch records no gradient for these names,
# numdiff's are i0's and i1's, differentiable).
modified_bessel_i0, modified_bessel_i1 = i0, i1

_SQRT_HALF = math.sqrt(0.5)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2, computed as erfc(-x / sqrt 2) / 2 (accurate in the lower tail).

    >>> numdiff.special.ndtr(numdiff.tensor([0.0]))
    tensor([0.5000])
    """
    return erfc(input * -_SQRT_HALF) * 0.5


_NDTRI_TAIL = 0.01


def ndtri(input: Tensor) -> Tensor:
    """The inverse of ndtr: sqrt(2) erfinv(2p - 1), and below p = 0.01 Newton's method on log ndtr.

    In the lower tail 2p - 1 keeps none of p's digits (it is -1 from p = 1e-17 on, so erfinv gave
    -inf). There the start is Abramowitz and Stegun's 26.2.23 (within 4.5e-4), and three Newton
    steps on log ndtr(x) = log p reach the dtype's rounding; the gradient flows through the steps,
    converging to 1 / phi(x) with them.

    >>> numdiff.special.ndtri(numdiff.tensor([0.5, 1e-20]))
    tensor([ 0.0000, -9.2623])
    """
    input = ensure_tensor("special.ndtri", input)
    if not input.is_floating_point():
        input = input.to(get_default_dtype())
    # p <= 0 stays with erfinv: -inf (gradient inf) at 0, NaN below, as torch.
    tail = (input < _NDTRI_TAIL) & (input > 0.0)
    # A mask product, not where: where's backward multiplies an infinite gradient (erfinv at 1)
    # by 0 for the constant, a NumPy warning for nothing.
    keep = (~tail).to(input.dtype)
    body = erfinv((input * keep + (1.0 - keep) * 0.5) * 2.0 - 1.0) * math.sqrt(2.0)
    p = where(tail, input, _NDTRI_TAIL)  # each branch sees only inputs it is finite at
    log_p = p.log()
    t = (log_p * -2.0).sqrt()
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    for _ in range(3):
        log_cdf = log_ndtr(x)
        log_pdf = x * x * -0.5 - _LOG_SQRT_2PI
        x = x - (log_cdf - log_p) * (log_cdf - log_pdf).exp()
    return where(tail, x, body)


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def log_ndtr(input: Tensor) -> Tensor:
    """log(ndtr(x)), accurate in both tails: finite far into the lower one, where ndtr itself
    underflows to 0, and not rounded to 0 in the upper one, where ndtr rounds to 1.

    Below a threshold (-20 in float64, -10 otherwise) it is the asymptotic expansion
    log ndtr(x) = -x^2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + ...),
    whose first omitted term is below the dtype's rounding there; above 0 it is
    log1p(-ndtr(-x)), which keeps the tiny ndtr(-x).

    >>> numdiff.special.log_ndtr(numdiff.tensor([-40.0, 9.0], dtype=numdiff.float64))
    tensor([-8.0461e+02, -1.1286e-19], dtype=numdiff.float64)
    """
    input = ensure_tensor("special.log_ndtr", input)
    if not input.is_floating_point():
        input = input.to(get_default_dtype())
    threshold = -20.0 if input.dtype == float64 else -10.0
    tail, upper = input < threshold, input > 0.0
    # Each branch sees only inputs it is finite at, so the others' gradients are exact zeros, not 0 * inf.
    middle = ndtr(where(tail | upper, 0.0, input)).log()
    above = log1p(-ndtr(-where(upper, input, 0.0)))
    x = where(tail, input, threshold)
    # 1 / x squared and (x * -0.5) * x, not x * x: that overflows float32 from |x| = 1.8e19, where the
    # result is still finite.
    r = (1.0 / x).square()
    series = 1.0 + r * (-1.0 + r * (3.0 + r * (-15.0 + r * (105.0 + r * (-945.0 + r * 10395.0)))))
    asymptotic = (x * -0.5) * x - (-x).log() - _LOG_SQRT_2PI + series.log()
    return where(tail, asymptotic, where(upper, above, middle))


def xlog1py(input: Any, other: Any) -> Tensor:
    """x * log1p(y), 0 where x is 0 (unless y is NaN), as xlogy.

    >>> numdiff.special.xlog1py(numdiff.tensor([0.0, 2.0]), numdiff.tensor([-1.0, 1.0]))
    tensor([0.0000, 1.3863])
    """
    return PUBLIC["xlog1py"](input, other)


def entr(input: Tensor) -> Tensor:
    """-x log x elementwise: 0 at 0, -inf below 0.

    >>> numdiff.special.entr(numdiff.tensor([0.0, 0.5]))
    tensor([0.0000, 0.3466])
    """
    return where(input < 0.0, -math.inf, -xlogy(input, input))


def sinc(input: Tensor) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0.

    >>> numdiff.special.sinc(numdiff.tensor([0.0, 0.5]))
    tensor([1.0000, 0.6366])
    """
    scaled = input * math.pi
    safe = where(input == 0.0, 1.0, scaled)
    return where(input == 0.0, 1.0, safe.sin() / safe)



# Euler-Maclaurin's tail coefficients B_2j / (2j)! for j = 1..12, from the Bernoulli numbers B_2 .. B_24 as
# (numerator, denominator): int / int rounds the exact quotient once, as Fraction's float() does.
_BERNOULLI = (
    (1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510), (43867, 798),
    (-174611, 330), (854513, 138), (-236364091, 2730),
)  # fmt: skip
_TAIL_COEFFICIENTS = tuple(n / (d * math.factorial(2 * j)) for j, (n, d) in enumerate(_BERNOULLI, start=1))
# The direct sum runs until the shifted argument w = q + n is at least this (and n at least this):
# the first omitted tail term is then below 1e-19 of the sum for every x > 1.
_SUM_UNTIL = 9


def zeta(input: Any, other: Any) -> Tensor:
    """The Hurwitz zeta function sum_k (q + k)^-x of x = `input` and q = `other`, as torch.special.zeta.

    inf at x = 1 and at the poles q = 0, -1, -2, ...; NaN for x < 1, and for q < 0 with x not an
    integer. Computed as the first terms of the sum plus the Euler-Maclaurin tail, all differentiable
    tensor ops: the gradient in q is -x zeta(x + 1, q), as PyTorch's; numdiff also differentiates in x,
    where PyTorch raises "the derivative for 'zeta' is not implemented" (NaN for q < 0, where zeta is
    defined at integer x only).

    >>> numdiff.special.zeta(numdiff.tensor([2.0, 4.0]), 1.0)  # pi^2 / 6 and pi^4 / 90
    tensor([1.6449, 1.0823])
    """
    kinds = [isinstance(v, Tensor) or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in (input, other)]
    if not all(kinds) or not (isinstance(input, Tensor) or isinstance(other, Tensor)):
        raise TypeError(
            "special.zeta: input and other must be Tensors or real numbers, at least one a Tensor; got "
            f"{type(input).__name__} and {type(other).__name__}"
        )
    x = input if isinstance(input, Tensor) else full_like(other, input, dtype=_float_of(other))
    q = other if isinstance(other, Tensor) else full_like(input, other, dtype=_float_of(input))
    x, q = (t if t.is_floating_point() else t.to(get_default_dtype()) for t in (x, q))
    if x.dtype != q.dtype:
        dtype = promote(x.dtype, q.dtype)
        x, q = x.to(dtype), q.to(dtype)
    x, q = broadcast_tensors(x, q)
    pole = (q <= 0.0) & (q == q.floor())
    inside = (x > 1.0) & (x < math.inf) & (q < math.inf) & ~pole & ((q > 0.0) | (x == x.floor()))
    # Each part sees only arguments it is finite at, so the other's gradient is an exact zero.
    xs, qs = where(inside, x, 2.0), where(inside, q, 1.0)
    lowest = float(qs.detach().min()) if qs.numel() else 1.0
    terms = max(_SUM_UNTIL, math.ceil(_SUM_UNTIL - lowest))
    total = qs.pow(-xs)
    for k in range(1, terms):
        total = total + (qs + k).pow(-xs)
    w = qs + terms
    power = w.pow(-xs)  # w^-x, then w^(-x - 2j + 1) times the rising product x (x + 1) .. (x + 2j - 2)
    total = total + power * w / (xs - 1.0) + power * 0.5
    rising = xs / w
    for j, coefficient in enumerate(_TAIL_COEFFICIENTS, start=1):
        total = total + power * rising * coefficient
        rising = rising * (xs + 2 * j - 1) * (xs + 2 * j) / (w * w)
    # Cephes' order, which PyTorch follows: x = 1, then x < 1 (NaN), then the poles (inf even for a NaN
    # x); an infinite x sends every term with |q + k| < 1 to inf.
    infinite = (x == 1.0) | (pole & ~(x < 1.0)) | ((x == math.inf) & (q < 1.0))
    edge = where(infinite, math.inf, where((x == math.inf) & (q == 1.0), 1.0, math.nan))
    return where(inside, total, edge)


def _float_of(t: Tensor) -> Any:
    return t.dtype if t.is_floating_point() else get_default_dtype()


__all__ = [
    "airy_ai", "gammainc", "gammaincc", "spherical_bessel_j0",
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1",
    "i1e", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "multigammaln", "ndtr",
    "ndtri", "polygamma", "psi", "round", "sinc",
    "softmax", "xlog1py", "xlogy", "zeta",
]  # fmt: skip


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
