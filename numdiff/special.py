"""``torch.special``: PyTorch's special-function namespace, on numdiff's elementwise ops.

Every name is an existing differentiable op or a composition of them (gradients included):
``numdiff.special.expit`` is numdiff.sigmoid, ``gammaln`` is numdiff.lgamma, ``ndtr`` is
``(1 + erf(x / sqrt 2)) / 2``, and so on.

>>> numdiff.special.gammaln(numdiff.tensor([1.0, 4.0]))  # log Gamma: 0 and log 6
tensor([0.0000, 1.7918])
"""

from __future__ import annotations

import math
from typing import Any

from numdiff._dtype import float64, get_default_dtype
from numdiff.ops._util import ensure_tensor
from numdiff.ops.activation import log_softmax, softmax
from numdiff.ops.elementwise import PUBLIC
from numdiff.ops.reduction import logsumexp
from numdiff.ops.selection import where
from numdiff.ops.special_functions import digamma, erfc, erfinv, lgamma, logit, mvlgamma, polygamma
from numdiff.ops.unary import erf, exp2, expm1, log1p, round, sigmoid
from numdiff.tensor import Tensor

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma

xlogy = PUBLIC["xlogy"]

_SQRT_HALF = math.sqrt(0.5)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2, computed as erfc(-x / sqrt 2) / 2 (accurate in the lower tail).

    >>> numdiff.special.ndtr(numdiff.tensor([0.0]))
    tensor([0.5000])
    """
    return erfc(input * -_SQRT_HALF) * 0.5


def ndtri(input: Tensor) -> Tensor:
    """The inverse of ndtr: sqrt(2) erfinv(2p - 1).

    >>> numdiff.special.ndtri(numdiff.tensor([0.5]))
    tensor([0.])
    """
    return erfinv(input * 2.0 - 1.0) * math.sqrt(2.0)


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def log_ndtr(input: Tensor) -> Tensor:
    """log(ndtr(x)), finite far into the lower tail, where ndtr itself underflows to 0.

    Below a threshold (-20 in float64, -10 otherwise) it is the asymptotic expansion
    log ndtr(x) = -x^2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + ...),
    whose first omitted term is below the dtype's rounding there.

    >>> numdiff.special.log_ndtr(numdiff.tensor([0.0, -40.0]))
    tensor([  -0.6931, -804.6084])
    """
    input = ensure_tensor("special.log_ndtr", input)
    if not input.is_floating_point():
        input = input.to(get_default_dtype())
    threshold = -20.0 if input.dtype == float64 else -10.0
    tail = input < threshold
    # Each branch sees only inputs it is finite at, so the other's gradient is an exact zero, not 0 * inf.
    body = ndtr(where(tail, 0.0, input)).log()
    x = where(tail, input, threshold)
    r = 1.0 / (x * x)
    series = 1.0 + r * (-1.0 + r * (3.0 + r * (-15.0 + r * (105.0 + r * (-945.0 + r * 10395.0)))))
    asymptotic = x * x * -0.5 - (-x).log() - _LOG_SQRT_2PI + series.log()
    return where(tail, asymptotic, body)


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


__all__ = [
    "digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc",
    "softmax", "xlog1py", "xlogy",
]  # fmt: skip
