"""Resampling along one axis as a pair of registered ops that are each other's adjoint, so that
interpolate, built on them, is differentiable to every order:

* ``axis_blend(x)``:          x (B, D, R) -> (B, O, R), ``out[b, o] = sum_k weight[o, k] * x[b, index[o, k]]``;
* ``axis_blend_backward(g)``: g (B, O, R) -> (B, D, R), the adjoint (each tap's share added back).

`index` and `weight` (O, K) are host tables worked out once by interpolate's mode (K = 1 for
nearest, 2 for linear, 4 for cubic). Both run through the backend's ``axis_blend_forward`` and
``axis_blend_adjoint`` kernels (numdiff.kernels.resample and its CUDA twin). Before, interpolate
ran an index_select per tap, whose backward was NumPy's ``np.add.at``: 3/4 of a bilinear x2
forward and backward.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff.autograd.function import Function
from numdiff.backend import backend_for
from numdiff.ops.registry import register

__all__ = ["AxisBlend", "AxisBlendBackward", "blend_axis"]

BLEND_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
"""The dtypes the blend kernels take (interpolate computes half precisions in float32)."""


def _c(x: Any) -> Any:
    return np.ascontiguousarray(x, like=x)


def _weight_as(weight: np.ndarray, x: Any) -> np.ndarray:
    """The weight table in x's dtype (a program replayed in another precision keeps its tables)."""
    return weight.astype(x.dtype, copy=False)


@register("axis_blend", compile="call", launchers=("axis_blend_forward",))
class AxisBlend(Function):
    """x (B, D, R) -> (B, O, R): each output row the weighted sum of the input rows `index` names."""

    @staticmethod
    def forward(ctx, x, *, index, weight):
        ctx.tables = dict(index=index, weight=weight)
        ctx.size = x.shape[1]
        out = np.empty((x.shape[0], index.shape[0], x.shape[2]), dtype=x.dtype, like=x)
        return backend_for(x).axis_blend_forward(_c(x), index, _weight_as(weight, x), out)

    @staticmethod
    def backward(ctx, grad):
        return (AxisBlendBackward.apply(grad, size=ctx.size, **ctx.tables),)


@register("axis_blend_backward", compile="call", launchers=("axis_blend_adjoint",))
class AxisBlendBackward(Function):
    """g (B, O, R) -> (B, size, R): each output row's gradient shared back to its source rows."""

    @staticmethod
    def forward(ctx, g, *, index, weight, size):
        ctx.tables = dict(index=index, weight=weight)
        out = np.empty((g.shape[0], size, g.shape[2]), dtype=g.dtype, like=g)
        return backend_for(g).axis_blend_adjoint(_c(g), index, _weight_as(weight, g), out)

    @staticmethod
    def backward(ctx, grad):
        return (AxisBlend.apply(grad, **ctx.tables),)


def blend_axis(x: Any, axis: int, index: np.ndarray, weight: np.ndarray) -> Any:
    """Tensor x resized along `axis` by the (O, K) table: x viewed as (before, D, after) for axis_blend."""
    shape = tuple(x.shape)
    before, after = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    out = AxisBlend.apply(x.reshape(before, shape[axis], after), index=index, weight=weight)
    return out.reshape(*shape[:axis], index.shape[0], *shape[axis + 1 :])
