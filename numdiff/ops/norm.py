"""Fused group normalisation: ``grouped_norm`` and its backward, ``grouped_norm_backward``.

BatchNorm (training), InstanceNorm and GroupNorm normalise a 5-D view x (B, N, G, K, S) of their
input: statistics per (b, g) over (n, k, s), a scale and shift per (g, k) (numdiff.kernels.norm
has the formulas and which layer is which view). The forward saves each group's mean and
1 / sqrt(var + eps); the backward op returns dx, dweight and dbias flat, side by side, sliced
apart here. The backward op is differentiated by recomputing the normalisation from numdiff ops
(``composed_grouped_norm``), so second derivatives are exact. ``grouped_moments`` gives the same
view's per-group mean and biased variance in one kernel, for the running statistics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.autograd import grad as autograd_grad
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import backward_is_differentiated, enable_grad, is_grad_enabled
from numdiff.backend import backend_for
from numdiff.creation import zeros
from numdiff.ops.registry import register
from numdiff.ops.shape import cat, stack
from numdiff.tensor import Tensor

__all__ = ["composed_grouped_norm", "grouped_moments", "grouped_norm"]

_STAT_DIMS = (1, 3, 4)


def _c(x: Any) -> Any:
    return np.ascontiguousarray(x, like=x)


def _affine(param: Any, fill: float, like: Any) -> Any:
    """The (G, K) scale or shift a kernel reads: the given one, or `fill` where the layer has none."""
    shape = (like.shape[2], like.shape[3])
    return np.full(shape, fill, dtype=like.dtype, like=like) if param is None else _c(param)


def composed_grouped_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    """What ``grouped_norm`` returns, from numdiff ops (biased variance over (n, k, s) per (b, g))."""
    mean = x.mean(_STAT_DIMS, keepdim=True)
    out = (x - mean) * (x.var(_STAT_DIMS, correction=0, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(1, 1, *weight.shape, 1)
    if bias is not None:
        out = out + bias.reshape(1, 1, *bias.shape, 1)
    return out


@register("grouped_norm", compile="kernel", launchers=("group_norm_forward",))
class GroupedNorm(Function):
    """x (B, N, G, K, S), weight and bias (G, K) or None -> x normalised per (b, g), scaled and
    shifted per (g, k) (attr: eps)."""

    @staticmethod
    def forward(ctx, x, weight, bias, *, eps):
        ctx.eps = eps
        x = _c(x)
        out = np.empty(x.shape, dtype=x.dtype, like=x)
        mean = np.empty(x.shape[:1] + x.shape[2:3], dtype=x.dtype, like=x)
        rstd = np.empty_like(mean)
        backend_for(x).group_norm_forward(x, _affine(weight, 1.0, x), _affine(bias, 0.0, x), eps, out, mean, rstd)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.has_bias = bias is not None
        return out

    @staticmethod
    def backward(ctx, grad):
        x, weight, mean, rstd = ctx.saved_tensors
        res = GroupedNormBackward.apply(grad, x, weight, mean, rstd, eps=ctx.eps)
        size, params = x.numel(), x.shape[2] * x.shape[3]
        d_x = res[:size].reshape(x.shape)
        d_weight = res[size : size + params].reshape(x.shape[2:4]) if weight is not None else None
        d_bias = res[size + params :].reshape(x.shape[2:4]) if ctx.has_bias else None
        return d_x, d_weight, d_bias


@register("grouped_norm_backward", compile="kernel", launchers=("group_norm_backward",))
class GroupedNormBackward(Function):
    """grad and x (B, N, G, K, S), weight (G, K) or None, the forward's mean and rstd (B, G) ->
    (B*N*G*K*S + 2*G*K,): dx, dweight and dbias flat (attr: eps, for the second derivative)."""

    @staticmethod
    def forward(ctx, grad, x, weight, mean, rstd, *, eps):
        ctx.eps = eps
        size, params = x.size, x.shape[2] * x.shape[3]
        res = np.empty(size + 2 * params, dtype=x.dtype, like=x)
        param_shape = x.shape[2:4]
        backend_for(x).group_norm_backward(
            _c(grad), _c(x), _affine(weight, 1.0, x), _c(mean), _c(rstd), res[:size].reshape(x.shape),
            res[size : size + params].reshape(param_shape), res[size + params :].reshape(param_shape),
        )  # fmt: skip
        ctx.save_for_backward(grad, x, weight)
        return res

    @staticmethod
    def backward(ctx, grad_res):
        grad, x, weight = ctx.saved_tensors
        create_graph = is_grad_enabled()
        given = (grad, x) if weight is None else (grad, x, weight)
        leaves = [t if create_graph and t.requires_grad else t.detach().requires_grad_() for t in given]
        with enable_grad():
            shift = zeros(tuple(x.shape[2:4]), dtype=x.dtype, device=x.device, requires_grad=True)
            out = composed_grouped_norm(leaves[1], leaves[2] if weight is not None else None, shift, ctx.eps)
            streams = autograd_grad(out, leaves[1:] + [shift], leaves[0], create_graph=True)
            if weight is None:  # the kernel's dweight slot holds sum(grad * xhat) all the same
                streams = (streams[0], (leaves[0] * (out - shift.reshape(1, 1, *shift.shape, 1))).sum((0, 1, 4)),
                           streams[1])  # fmt: skip
            res = cat([s.reshape(-1) for s in streams], 0)
            found = autograd_grad(res, leaves, grad_res, create_graph=create_graph, allow_unused=True)
        d_grad, d_x, d_weight = (tuple(found) + (None,))[:3]
        needs = ctx.needs_input_grad
        return tuple(g if need else None for g, need in zip((d_grad, d_x, d_weight, None, None), needs))


@register("grouped_moments", compile="kernel", launchers=("group_norm_moments",))
class GroupedMoments(Function):
    """x (B, N, G, K, S) -> (2, B, G): each group's mean and biased variance over (n, k, s)."""

    @staticmethod
    def forward(ctx, x):
        x = _c(x)
        moments = np.empty((2, x.shape[0], x.shape[2]), dtype=x.dtype, like=x)
        backend_for(x).group_norm_moments(x, moments)
        ctx.save_for_backward(x, moments)
        return moments

    @staticmethod
    def backward(ctx, grad):
        x, moments = ctx.saved_tensors
        size = x.shape[1] * x.shape[3] * x.shape[4]
        if backward_is_differentiated():  # create_graph: the mean must stay a function of x
            mean = x.mean(_STAT_DIMS, keepdim=True)
        else:
            mean = moments[0].reshape(x.shape[0], 1, x.shape[2], 1, 1)
        d_mean = grad[0].reshape(x.shape[0], 1, x.shape[2], 1, 1)
        d_var = grad[1].reshape(x.shape[0], 1, x.shape[2], 1, 1)
        return ((d_mean + (x - mean) * (d_var * 2.0)) / size,)


def grouped_moments(input: Tensor, view: tuple[int, int, int, int, int]) -> Tensor:
    """(2, B, G): the mean and biased variance of each group (b, g) of `input` seen as `view`
    (B, N, G, K, S), over (n, k, s); composed from numdiff ops for dtypes the kernels lack.

    >>> tuple(grouped_moments(numdiff.randn(4, 3, 5), (1, 4, 3, 1, 5)).shape)
    (2, 1, 3)
    """
    x = input.reshape(view)
    if _fusable(input):
        return GroupedMoments.apply(x)
    return stack([x.mean(_STAT_DIMS), x.var(_STAT_DIMS, correction=0)])


def _fusable(input: Tensor, *params: Tensor | None) -> bool:
    """Floating tensors of one dtype on one device (mixed ones take the composed form, which
    promotes). Half types reach the kernels widened to float32 by Function.apply."""
    dtype, device = input.dtype, input.device
    if not dtype.is_floating_point or dtype.is_complex:
        return False
    return all(p is None or (p.dtype == dtype and p.device == device) for p in params)


def grouped_norm(
    input: Tensor, view: tuple[int, int, int, int, int], weight: Tensor | None, bias: Tensor | None, eps: float
) -> Tensor:
    """`input` seen as `view` (B, N, G, K, S), normalised per (b, g) and scaled and shifted by the
    per-channel `weight` and `bias` (C = G * K entries each), returned in input's shape; the composed
    form where the kernels do not apply (other dtypes, mixed dtypes or devices).

    >>> x = numdiff.randn(4, 3, 5)
    >>> out = grouped_norm(x, (1, 4, 3, 1, 5), None, None, 1e-5)   # batch_norm's training form
    >>> tuple(out.shape)
    (4, 3, 5)
    """
    groups, k_count = view[2], view[3]
    x = input.reshape(view)
    w = None if weight is None else weight.reshape(groups, k_count)
    b = None if bias is None else bias.reshape(groups, k_count)
    if _fusable(input, weight, bias):
        out = GroupedNorm.apply(x, w, b, eps=float(eps))
    else:
        out = composed_grouped_norm(x, w, b, eps)
    return out.reshape(tuple(input.shape))
