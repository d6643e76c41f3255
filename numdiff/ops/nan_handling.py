"""Ops that step around NaN and infinity: nan_to_num, nansum and nanmean.

Their gradients follow PyTorch's formulas, which multiply by a mask (``grad * isfinite(x)`` for
nan_to_num, ``grad * ~isnan(x)`` for nansum): a NaN or inf arriving from above at a replaced element
stays NaN there (inf * 0), where `where` and `masked_fill` give an exact 0. `KeepWhere` is that
multiplying form of `where`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._dtype_info import finfo
from numdiff.autograd.function import Function
from numdiff.ops._util import ensure_tensor, scalar_like
from numdiff.ops.logical import isfinite, isnan
from numdiff.ops.reduction import sum as sum_
from numdiff.ops.registry import register
from numdiff.ops.selection import where
from numdiff.tensor import Tensor


@register("keep_where", compile="call")
class KeepWhere(Function):
    """where(keep, x, fill) whose gradient is grad * keep: x's elements are kept where the constant
    bool `keep` is True and replaced by the constant `fill` (no gradient) elsewhere."""

    @staticmethod
    def forward(ctx, keep, x, fill):
        ctx.save_for_backward(keep)
        return np.where(keep, x, fill)

    @staticmethod
    def backward(ctx, grad):
        (keep,) = ctx.saved_tensors
        return None, grad * keep if ctx.needs_input_grad[1] else None, None


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0 and the dtype's
    largest and lowest finite values); the gradient is grad * isfinite(input), as in PyTorch.

    >>> numdiff.nan_to_num(numdiff.tensor([1.0, float("nan"), float("inf")]), posinf=9.0)
    tensor([1., 0., 9.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"nan_to_num: expected a Tensor, got {type(input).__name__}")
    for name, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise TypeError(f"nan_to_num: {name} must be a number or None, got {type(value).__name__}")
    if input._data.dtype.kind not in "fV":  # V: bfloat16
        return input.clone()  # integers have no NaN or inf
    info = finfo(input.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    values = input.detach()
    signed = where(values > 0, scalar_like(posinf, input, "nan_to_num"), scalar_like(neginf, input, "nan_to_num"))
    fill = where(isnan(values), scalar_like(nan, input, "nan_to_num"), signed)
    return KeepWhere.apply(isfinite(values), input, fill)


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """sum, counting NaNs as zero; the gradient is grad * ~isnan(input), as in PyTorch.

    >>> numdiff.nansum(numdiff.tensor([1.0, float("nan"), 2.0]))
    tensor(3.)
    """
    input = ensure_tensor("nansum", input)
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind in "fV":
        input = KeepWhere.apply(~isnan(input.detach()), input, scalar_like(0.0, input, "nansum"))
    return sum_(input, dim, keepdim)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """mean of the elements that are not NaN (NaN where all are).

    >>> numdiff.nanmean(numdiff.tensor([1.0, float("nan"), 2.0]))
    tensor(1.5000)
    """
    input = ensure_tensor("nanmean", input)
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind not in "fV":
        raise TypeError(f"nanmean: expected a floating point input, got {input.dtype}")
    if input._data.dtype.itemsize == 2:  # float16 and bfloat16 accumulate in float32, as PyTorch's
        return nanmean(input.float(), dim, keepdim).to(input.dtype)
    present = ~isnan(input.detach())  # one mask for both sums
    total = sum_(KeepWhere.apply(present, input, scalar_like(0.0, input, "nanmean")), dim, keepdim)
    return total / sum_(present, dim, keepdim).to(input.dtype)
