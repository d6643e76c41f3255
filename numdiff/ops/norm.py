"""Fused group normalisation: ``grouped_norm`` and its backward, ``grouped_norm_backward``.

BatchNorm (training), InstanceNorm, GroupNorm and LayerNorm normalise a 5-D view (B, N, G, K, S) of
their input (the attr ``view``; the ops take and return the input's own shape): statistics per
(b, g) over (n, k, s), a scale and shift per (g, k) (numdiff.kernels.norm has the formulas and
which layer is which view). The forward saves each group's mean and
1 / sqrt(var + eps); the backward op returns dx, dweight and dbias flat, side by side, sliced
apart here. The backward op is differentiated by recomputing the normalisation from numdiff ops
(``composed_grouped_norm``), so second derivatives are exact. ``grouped_moments`` gives the same
view's per-group mean and biased variance in one kernel, for the running statistics, and
``running_stat`` moves one running estimate towards a row of them in one more.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._dtype import bfloat16, float16, float32, float64
from numdiff.autograd import grad as autograd_grad
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import backward_is_differentiated, enable_grad, is_grad_enabled
from numdiff.backend import CPU, backend_for, is_host
from numdiff.creation import ones, zeros, zeros_like
from numdiff.ops.joining import cat, stack
from numdiff.ops.registry import register
from numdiff.tensor import Tensor

__all__ = ["composed_grouped_norm", "grouped_moments", "grouped_norm", "running_stat_update"]

_STAT_DIMS = (1, 3, 4)
_KERNEL_DTYPES = (float32, float64)
_REDUCED = (float16, bfloat16)


def _c(x: Any) -> Any:
    return np.ascontiguousarray(x, like=x)


def _affine(param: Any, fill: float, view: tuple, like: Any) -> Any:
    """The (G, K) scale or shift a kernel reads: the given per-channel one, or `fill` where the
    layer has none."""
    shape = (view[2], view[3])
    return np.full(shape, fill, dtype=like.dtype, like=like) if param is None else _c(param).reshape(shape)


def composed_grouped_norm(x: Tensor, view: tuple, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    """What ``grouped_norm`` returns, from numdiff ops (biased variance over (n, k, s) per (b, g) of
    x seen as `view`), in x's shape."""
    xv = x.reshape(view)
    mean = xv.mean(_STAT_DIMS, keepdim=True)
    out = (xv - mean) * (xv.var(_STAT_DIMS, correction=0, keepdim=True) + eps).rsqrt()
    per_channel = (1, 1, view[2], view[3], 1)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out.reshape(tuple(x.shape))


@register("grouped_norm", compile="kernel", launchers=("group_norm_forward",))
class GroupedNorm(Function):
    """x of any shape seen as view (B, N, G, K, S), weight and bias (G * K,) or None -> x normalised
    per (b, g), scaled and shifted per (g, k), in x's shape (attrs: view, eps). The output is no
    view of anything, as PyTorch's, so an in-place activation may follow it."""

    @staticmethod
    def forward(ctx, x, weight, bias, *, view, eps):
        ctx.view, ctx.eps = view, eps
        xv = _c(x).reshape(view)
        out = np.empty(view, dtype=x.dtype, like=x)
        mean = np.empty((view[0], view[2]), dtype=x.dtype, like=x)
        rstd = np.empty_like(mean)
        backend_for(x).group_norm_forward(
            xv, _affine(weight, 1.0, view, xv), _affine(bias, 0.0, view, xv), eps, out, mean, rstd
        )
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.bias_shape = None if bias is None else bias.shape
        return out.reshape(x.shape)

    @staticmethod
    def backward(ctx, grad):
        x, weight, mean, rstd = ctx.saved_tensors
        if not is_grad_enabled() and is_host(grad._data) and grad._data.dtype == x._data.dtype:
            return _grouped_norm_backward_arrays(ctx, grad._data, x._data, weight, mean._data, rstd._data)
        res = GroupedNormBackward.apply(grad, x, weight, mean, rstd, view=ctx.view, eps=ctx.eps)
        size, params = x.numel(), ctx.view[2] * ctx.view[3]
        d_x = res[:size].reshape(x.shape)
        d_weight = res[size : size + params].reshape(weight.shape) if weight is not None else None
        d_bias = res[size + params :].reshape(ctx.bias_shape) if ctx.bias_shape is not None else None
        return d_x, d_weight, d_bias


def _grouped_norm_backward_arrays(ctx: Any, grad: Any, x: Any, weight: Tensor | None, mean: Any, rstd: Any) -> tuple:
    """GroupedNorm's first-order backward on host arrays: the kernel grouped_norm_backward runs,
    called directly into three arrays. Without create_graph nothing is recorded, and the op call
    and the six slicing and reshaping ops that part its flat result cost more than the kernel on
    small layers (BatchNorm2d 8x16x8x8 training step, one thread: 150 -> 125 us)."""
    view = ctx.view
    param_shape = (view[2], view[3])
    dx = np.empty(x.shape, dtype=x.dtype)
    d_weight = np.empty(param_shape, dtype=x.dtype)
    d_bias = np.empty(param_shape, dtype=x.dtype)
    xv = np.ascontiguousarray(x).reshape(view)
    backend_for(x).group_norm_backward(
        np.ascontiguousarray(grad).reshape(view), xv, _affine(None if weight is None else weight._data, 1.0, view, xv), np.ascontiguousarray(mean),
        np.ascontiguousarray(rstd), dx.reshape(view), d_weight, d_bias,
    )  # fmt: skip
    wrap = Tensor._wrap
    return (
        wrap(dx, None, None),
        None if weight is None else wrap(d_weight.reshape(weight.shape), None, None),
        None if ctx.bias_shape is None else wrap(d_bias.reshape(ctx.bias_shape), None, None),
    )


@register("grouped_norm_backward", compile="kernel", launchers=("group_norm_backward",))
class GroupedNormBackward(Function):
    """grad and x (x's shape, seen as view (B, N, G, K, S)), weight (G * K,) or None, the forward's
    mean and rstd (B, G) -> (x.size + 2 * G * K,): dx, dweight and dbias flat (attrs: view, eps)."""

    @staticmethod
    def forward(ctx, grad, x, weight, mean, rstd, *, view, eps):
        ctx.view, ctx.eps = view, eps
        size, params = x.size, view[2] * view[3]
        res = np.empty(size + 2 * params, dtype=x.dtype, like=x)
        xv = _c(x).reshape(view)
        param_shape = (view[2], view[3])
        backend_for(x).group_norm_backward(
            _c(grad).reshape(view), xv, _affine(weight, 1.0, view, xv), _c(mean), _c(rstd), res[:size].reshape(view),
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
        channels = ctx.view[2] * ctx.view[3]
        with enable_grad():
            # Without a weight the kernel still fills the dweight slot: d/dscale at scale 1.
            scale = leaves[2] if weight is not None else ones(channels, dtype=x.dtype, device=x.device, requires_grad=True)
            shift = zeros(channels, dtype=x.dtype, device=x.device, requires_grad=True)
            out = composed_grouped_norm(leaves[1], ctx.view, scale, shift, ctx.eps)
            streams = autograd_grad(out, [leaves[1], scale, shift], leaves[0], create_graph=True)
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


@register("running_stat", compile="kernel", launchers=("running_stat_update",))
class RunningStat(Function):
    """running (C,), moments (2, 1, C) -> (C,): ``running * (1 - momentum) + moments[row, 0] * factor
    * momentum`` (attrs: row, momentum, factor), BatchNorm's running-estimate update;
    numdiff.kernels.norm_running has the rounding."""

    @staticmethod
    def forward(ctx, running, moments, *, row, momentum, factor):
        ctx.row, ctx.momentum, ctx.factor = row, momentum, factor
        out = np.empty(running.shape, dtype=running.dtype, like=running)
        backend_for(running).running_stat_update(_c(running), _c(moments), row, momentum, factor, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        d_running = grad * (1.0 - ctx.momentum) if needs[0] else None
        d_moments = None
        if needs[1]:
            step = (grad * (ctx.factor * ctx.momentum)).reshape(1, 1, -1)
            rows = [step, zeros_like(step)] if ctx.row == 0 else [zeros_like(step), step]
            d_moments = cat(rows, 0)
        return d_running, d_moments


def running_stat_update(running: Tensor, moments: Tensor, row: int, momentum: float, factor: float = 1.0) -> Tensor:
    """`running` (C,) moved by `momentum` towards ``moments[row, 0] * factor``, moments being
    grouped_moments' (2, 1, C) of BatchNorm's view (row 0 the mean, row 1 the biased variance, which
    factor ``count / (count - 1)`` makes unbiased); one kernel where running and moments share a
    float dtype and device, else the composed form (same formula, in running's dtype).

    >>> moments = numdiff.tensor([[[2.0]], [[4.0]]])
    >>> running_stat_update(numdiff.zeros(1), moments, 1, 0.5, 2.0).tolist()
    [4.0]
    """
    channels = running.shape[0] if running.ndim == 1 else -1
    if channels < 0 or tuple(moments.shape) != (2, 1, channels):
        raise ValueError(
            f"running_stat_update: expected running of shape (C,) and moments of shape (2, 1, C), "
            f"got {tuple(running.shape)} and {tuple(moments.shape)}"
        )
    if row not in (0, 1):
        raise ValueError(f"running_stat_update: row must be 0 (mean) or 1 (variance), got {row!r}")
    if _fusable(moments, running) and moments.dtype in _KERNEL_DTYPES:
        return RunningStat.apply(running, moments, row=row, momentum=float(momentum), factor=float(factor))
    stat = moments[row, 0].to(running.dtype)
    if factor != 1.0:
        stat = stat * factor
    return running * (1 - momentum) + stat * momentum


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
    dtype = input.dtype
    if not dtype.is_floating_point or dtype.is_complex:
        return False
    data = input._data
    backend = backend_for(data)
    for p in params:
        if p is None:
            continue
        # Equal array dtypes and one backend with a single device (the host) settle it without
        # building numdiff dtypes and devices, which cost more than the test.
        other = p._data
        if other.dtype != data.dtype and p.dtype != dtype:
            return False
        if not (backend is CPU and backend_for(other) is CPU) and p.device != input.device:
            return False
    return True


def grouped_norm(
    input: Tensor, view: tuple[int, int, int, int, int], weight: Tensor | None, bias: Tensor | None, eps: float
) -> Tensor:
    """`input` seen as `view` (B, N, G, K, S), normalised per (b, g) and scaled and shifted by the
    per-channel `weight` and `bias` (C = G * K entries each), returned in input's shape; the composed
    form where the kernels do not apply (other dtypes, mixed dtypes or devices). A float16 or
    bfloat16 input with float32 parameters (autocast's mix) is widened to float32 and the result
    rounded back once, as PyTorch's kernels compute it: the composed form would round every
    intermediate to the half type (instance_norm's bfloat16 input gradient was 6.8% off float64's,
    PyTorch's 2.3%).

    >>> x = numdiff.randn(4, 3, 5)
    >>> out = grouped_norm(x, (1, 4, 3, 1, 5), None, None, 1e-5)   # batch_norm's training form
    >>> tuple(out.shape)
    (4, 3, 5)
    """
    if _fusable(input, weight, bias):
        return GroupedNorm.apply(input, weight, bias, view=tuple(view), eps=float(eps))
    if input.dtype in _REDUCED and any(p is not None and p.dtype is float32 for p in (weight, bias)):
        widened = input.to(float32)
        if _fusable(widened, weight, bias):
            return GroupedNorm.apply(widened, weight, bias, view=tuple(view), eps=float(eps)).to(input.dtype)
    return composed_grouped_norm(input, tuple(view), weight, bias, eps)
