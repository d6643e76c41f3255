"""Loss primitives whose composed form would be wrong at the edges of their domain.

binary_cross_entropy clamps each log at -100, as PyTorch does. Composed from log and clamp, the
gradient at x = 0 or 1 would be 0 * inf = nan; written as one op, it is PyTorch's
(x - t) / max(x (1 - x), 1e-12) everywhere.
"""

from __future__ import annotations

import numpy as np

from numdiff.autograd.function import Function
from numdiff.ops.registry import register

_LOG_FLOOR = -100.0
_EPSILON = 1e-12


def _clamped_log(x):
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(x), x.dtype.type(_LOG_FLOOR))


@register("binary_cross_entropy", compile="call")
class BinaryCrossEntropy(Function):
    """Elementwise -(t log x + (1 - t) log(1 - x)), logs clamped at -100; no reduction."""

    @staticmethod
    def forward(ctx, x, target):
        ctx.save_for_backward(x, target)
        one = x.dtype.type(1)
        return -(target * _clamped_log(x) + (one - target) * _clamped_log(one - x))

    @staticmethod
    def backward(ctx, grad):
        x, target = ctx.saved_tensors
        grad_x = grad_target = None
        if ctx.needs_input_grad[0]:
            grad_x = grad * (x - target) / (x * (1 - x)).clamp(min=_EPSILON)
        if ctx.needs_input_grad[1]:
            log_x = x.log().clamp(min=_LOG_FLOOR)
            log_1mx = (1 - x).log().clamp(min=_LOG_FLOOR)
            grad_target = grad * (log_1mx - log_x)
        return grad_x, grad_target
