"""Tensor methods of the functions whose first argument is not the tensor (``x.polygamma(n)``) or
that take PyTorch's keyword names: attached by numdiff._tensor_methods.attach."""

from __future__ import annotations

from typing import Any

from numdiff.ops import combinations, log_scan, order_statistics, special_functions
from numdiff.tensor import Tensor


def polygamma(self: Tensor, n: int) -> Tensor:
    """``x.polygamma(n)``: numdiff.polygamma(n, x)."""
    return special_functions.polygamma(n, self)


def logit(self: Tensor, eps: Any = None) -> Tensor:
    """``x.logit(eps=None)``: numdiff.logit(x, eps)."""
    return special_functions.logit(self, eps)


def mvlgamma(self: Tensor, p: int) -> Tensor:
    """``x.mvlgamma(p)``: numdiff.mvlgamma(x, p)."""
    return special_functions.mvlgamma(self, p)


def logcumsumexp(self: Tensor, dim: int) -> Tensor:
    """``x.logcumsumexp(dim)``: numdiff.logcumsumexp(x, dim)."""
    return log_scan.logcumsumexp(self, dim)


METHODS = {
    "polygamma": polygamma,
    "logit": logit,
    "mvlgamma": mvlgamma,
    "logcumsumexp": logcumsumexp,
    "median": order_statistics.median,
    "nanmedian": order_statistics.nanmedian,
    "mode": order_statistics.mode,
    "kthvalue": order_statistics.kthvalue,
    "kron": combinations.kron,
    "histc": combinations.histc,
    "bincount": combinations.bincount,
    "isin": combinations.isin,
}
