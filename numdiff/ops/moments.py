"""Moments and log-sum-exp, composed of the reductions: var, std (scaled so that its squares
neither underflow nor overflow), logsumexp (shifted by the detached maximum), std_mean, var_mean.
Eager calls on host arrays compute their gradient constants (std's scale, logsumexp's shift)
with NumPy instead of recording them (numdiff.ops._reduction_constants)."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from numdiff._dtype import get_default_dtype
from numdiff._dtype_info import finfo
from numdiff.ops._reduction_constants import eager_host_data, std_scale
from numdiff.ops._util import half_computed_in_float32, normalize_dims
from numdiff.ops.reduction import _reduction_dims, amax, mean, sum
from numdiff.ops.selection import where
from numdiff.tensor import Tensor


def var(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False, unbiased: bool | None = None) -> Tensor:
    """Variance over `dim` with Bessel's `correction` (1 by default, as PyTorch)."""
    if unbiased is not None:
        correction = 1 if unbiased else 0
    dims = _reduction_dims("var", dim, input.ndim)
    count = int(np.prod([input.shape[d] for d in dims])) if dims else 1

    def variance(x: Tensor) -> Tensor:
        centred = x - mean(x, dims, keepdim=True)
        return sum(centred * centred, dims, keepdim) / builtins.max(count - correction, 0)

    return half_computed_in_float32(input, variance)


def std(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False, unbiased: bool | None = None) -> Tensor:
    """Standard deviation: the square root of `var`; its gradient is 0 where it is 0, as in PyTorch.

    The deviations are divided by their largest magnitude first (a constant for the gradient), so
    that their squares neither underflow nor overflow: float32 data of spread 1e-38 has a variance
    below float32's range but a representable standard deviation.
    """
    if unbiased is not None:
        correction = 1 if unbiased else 0
    if input._data.dtype == np.float16:
        return half_computed_in_float32(input, lambda x: std(x, dim, correction=correction, keepdim=keepdim))
    dims = _reduction_dims("std", dim, input.ndim)
    count = int(np.prod([input.shape[d] for d in dims])) if dims else 1
    centred = input - mean(input, dims, keepdim=True)
    # At least 4 / (the dtype's largest value): backward divides by the scale, and 1 / 1.6e-39 is
    # past float32's range (inf, then NaN gradients where PyTorch gives finite ones).
    floor = 4.0 / finfo(input.dtype).max
    host = eager_host_data(centred)
    if host is not None:
        # The scale and the zero mask are constants of the gradient: NumPy computes them, as the
        # ops below would, without recording eight ops (fwd+bwd of std() on 16x32 float32: 438 -> 348 us).
        scale = Tensor._wrap(std_scale(host, dims, floor), None, None)
    else:
        if not dims:
            scale = centred.abs().detach()
        elif input.numel() == 0:  # amax has no identity; any scale does for no elements (1 below)
            scale = sum(centred.abs(), dims, keepdim=True).detach()
        else:
            scale = amax(centred.abs(), dims, keepdim=True).detach()
        scale = where(~scale.isfinite(), 1.0, where(scale < floor, floor, scale))
    scaled = centred / scale
    variance = sum(scaled * scaled, dims, keepdim) / builtins.max(count - correction, 0)
    zero = variance == 0 if host is None else Tensor._wrap(np.asarray(variance._data == 0), None, None)
    # sqrt's derivative is infinite at 0: take it of 1 there, and select 0 for value and gradient.
    root = where(zero, 0.0, where(zero, 1.0, variance).sqrt())
    return root * (scale if keepdim or not dims else scale.squeeze(dims))


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over `dim`, stable for large inputs (shifted by the detached max)."""
    dims = normalize_dims("logsumexp", dim, input.ndim)
    if input._data.dtype.kind in "biu":  # integers and bools in the default float dtype, as in PyTorch
        input = input.to(get_default_dtype())
    if input._data.dtype == np.float16:
        return half_computed_in_float32(input, lambda x: logsumexp(x, dim, keepdim))
    if input.numel() == 0:  # nothing to overflow; a sum over no elements is 0, so its log is -inf
        out = input.exp().sum(dims, keepdim=True).log()
    else:
        host = eager_host_data(input)
        if host is not None:  # the detached shift is a constant: NumPy computes it, no ops recorded
            shift = np.max(host, axis=dims or None, keepdims=True)  # no dims: every dim, as amax's
            shift = Tensor._wrap(np.asarray(np.where(np.isfinite(shift), shift, np.zeros((), shift.dtype))), None, None)
        else:
            shift = amax(input, dims, keepdim=True).detach()
            shift = shift.masked_fill(~shift.isfinite(), 0.0)
        out = (input - shift).exp().sum(dims, keepdim=True).log() + shift
    if not keepdim:
        out = out.squeeze(dims) if dims else out
    return out


def std_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False, unbiased: bool | None = None) -> tuple[Tensor, Tensor]:
    """``(std(input, ...), mean(input, ...))`` over the same dims."""
    return std(input, dim, correction=correction, keepdim=keepdim, unbiased=unbiased), _mean_over(input, dim, keepdim)


def var_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False, unbiased: bool | None = None) -> tuple[Tensor, Tensor]:
    """``(var(input, ...), mean(input, ...))`` over the same dims."""
    return var(input, dim, correction=correction, keepdim=keepdim, unbiased=unbiased), _mean_over(input, dim, keepdim)


def _mean_over(input: Tensor, dim: Any, keepdim: bool) -> Tensor:
    return mean(input, _reduction_dims("mean", dim, input.ndim), keepdim=keepdim)
