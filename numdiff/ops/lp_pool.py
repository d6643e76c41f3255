"""lp_pool1d/2d/3d: power-average pooling, ``(sum over the window of x**p) ** (1/p)``, composed
as PyTorch composes it, from avg_pool of ``x**p`` times the window size (max pooling of |x| for
p = inf), so every derivative, backend and transform comes from the pooling ops underneath."""

from __future__ import annotations

import math
from typing import Any

from numdiff._ground.args import int_tuple, is_int
from numdiff.ops.pool import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from numdiff.ops.pool3d import avg_pool3d, max_pool3d
from numdiff.tensor import Tensor

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]

_AVG = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}
_MAX = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}


def _lp_poolnd(op: str, dims: int, input: Tensor, norm_type: Any, kernel_size: Any, stride: Any, ceil_mode: bool) -> Tensor:
    if isinstance(norm_type, bool) or not (is_int(norm_type) or isinstance(norm_type, float)):
        raise TypeError(f"{op}: norm_type must be a number, got {norm_type!r} ({type(norm_type).__name__})")
    if norm_type == 0 or math.isnan(norm_type):
        raise ValueError(f"{op}: norm_type must be non-zero and not NaN, got {norm_type!r}")
    kernel = int_tuple(op, "kernel_size", kernel_size, dims, 1, expand=True)
    if math.isinf(norm_type):
        pooled = _MAX[dims](input.abs() if norm_type > 0 else -input.abs(), kernel, stride, 0, 1, ceil_mode)
        return pooled if norm_type > 0 else -pooled
    out = _AVG[dims](input.pow(norm_type), kernel, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, L) input: ``(sum over the window of x**p) ** (1/p)``.

    >>> F = numdiff.nn.functional
    >>> F.lp_pool1d(numdiff.tensor([[[3.0, 4.0]]]), 2, 2)
    tensor([[[5.]]])
    """
    return _lp_poolnd("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, H, W) input: ``(sum over the window of x**p) ** (1/p)``.

    >>> F = numdiff.nn.functional
    >>> F.lp_pool2d(numdiff.ones(1, 1, 2, 2), 1, 2)
    tensor([[[[4.]]]])
    """
    return _lp_poolnd("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, D, H, W) input: ``(sum over the window of x**p) ** (1/p)``.

    >>> F = numdiff.nn.functional
    >>> F.lp_pool3d(numdiff.ones(1, 1, 2, 2, 2), 1, 2)
    tensor([[[[[8.]]]]])
    """
    return _lp_poolnd("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)
