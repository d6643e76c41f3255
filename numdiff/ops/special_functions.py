"""The gamma-function family and the error-function inverses, with PyTorch's arguments.

lgamma, digamma, erfc and erfinv are scalar rules (numdiff/_ground/scalar_rules.py) exported as they
are; this module adds ``polygamma(n, input)`` (n first, as PyTorch, where the rule takes n as an
attribute) and ``logit(input, eps=None)``. The scalar code of digamma, polygamma and erfinv is in
numdiff/kernels/_special.py.
"""

from __future__ import annotations

import math

from numdiff.ops.elementwise import PUBLIC
from numdiff.ops.selection import clamp
from numdiff.tensor import Tensor

lgamma = PUBLIC["lgamma"]
digamma = PUBLIC["digamma"]
erfc = PUBLIC["erfc"]
erfinv = PUBLIC["erfinv"]


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma, elementwise (n = 0 is digamma itself).

    >>> numdiff.polygamma(1, numdiff.tensor([1.0, 2.0]))  # pi^2 / 6 and pi^2 / 6 - 1
    tensor([1.6449, 0.6449])
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"polygamma: n must be an int, got {type(n).__name__} {n!r}")
    if n < 0:
        raise ValueError(f"polygamma: n must be non-negative, got {n}")
    if n == 0:
        return digamma(input)
    return PUBLIC["polygamma"](input, order=float(n))


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension p, elementwise:
    ``p (p - 1) / 4 * log(pi) + sum_j lgamma(input - j / 2)`` for j = 0 .. p - 1.

    >>> numdiff.mvlgamma(numdiff.tensor([2.5]), 2)
    tensor([1.2425])
    """
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ValueError(f"mvlgamma: p must be a positive int, got {p!r}")
    total = lgamma(input)
    for j in range(1, p):
        total = total + lgamma(input - 0.5 * j)
    return total + p * (p - 1) / 4 * math.log(math.pi)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)) elementwise, the inverse of sigmoid; with `eps`, x is first clamped to
    [eps, 1 - eps] (so the gradient is 0 outside it), as PyTorch.

    >>> numdiff.logit(numdiff.tensor([0.5, 0.75]))
    tensor([0.0000, 1.0986])
    """
    if eps is not None:
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            raise TypeError(f"logit: eps must be a number or None, got {type(eps).__name__}")

        input = clamp(input, float(eps), 1.0 - float(eps))
    return PUBLIC["logit"](input)
