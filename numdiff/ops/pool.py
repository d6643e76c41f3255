"""Pooling: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d, adaptive_max_pool2d.

Registered ops, each with a differentiable backward:

* ``max_pool2d`` / ``adaptive_max_pool2d``: the kernel computes values and argmax indices; the
  op returns the values and keeps the indices on its node; return_indices asks the twin op
  (``MaxPool2dIndices``) for them. The backward is ``max_pool_scatter`` (scatter-add of the gradient at the indices), whose backward
  is ``max_pool_gather`` (gather at the indices), whose backward is the scatter again.
* ``avg_pool2d`` and ``avg_pool2d_backward`` are each other's adjoint (both linear), and so are
  ``adaptive_avg_pool2d`` and ``adaptive_avg_pool2d_backward``.

1-d pooling is 2-d pooling with H = 1. Arguments are validated before any kernel runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._ground.pool_geometry import pool_output_size
from numdiff.autograd.function import Function
from numdiff.backend import backend_for, like_host, to_host
from numdiff.ops._pool_args import (
    batched_input,
    divisor,
    indices_tensor,
    pool_window,
    resolve_output_size,
    unbatch,
)
from numdiff.ops.registry import register
from numdiff.overrides import ForeignOperandError, dispatch_call, hands_over
from numdiff.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "max_pool1d",
    "max_pool2d",
]


def _c(x: Any) -> Any:
    return np.ascontiguousarray(x, like=x)


def _indices_on(indices: Any, like: Any) -> Any:
    """Argmax indices on `like`'s device (an op called with host indices on a device tensor)."""
    if type(indices) is type(like):
        return indices
    return like_host(to_host(indices), like)


# ----------------------------------------------------------------------------- max pooling


class _MaxPoolWithIndices(Function):
    """A max pooling that records the argmax of each window; its backward scatters by them.

    The indices stay on the node (``ctx.indices``) for backward; callers that want them
    (return_indices) get them from the op's twin below, so each op has exactly one output.
    """

    @staticmethod
    def backward(ctx, grad):
        return (MaxPoolScatter.apply(grad, indices=ctx.indices, input_shape=ctx.input_shape),)


def _max_pool2d_arrays(x, kernel_size, stride, padding, dilation, ceil_mode):
    oh, ow = (
        pool_output_size(x.shape[2 + i], kernel_size[i], stride[i], padding[i], dilation[i], ceil_mode)
        for i in (0, 1)
    )
    out = np.empty(x.shape[:2] + (oh, ow), dtype=x.dtype, like=x)
    indices = np.empty(out.shape, dtype=np.int64, like=x)
    backend_for(x).max_pool2d_forward(_c(x), out, indices, kernel_size, stride, padding, dilation, ceil_mode)
    return out, indices


def _adaptive_max_pool2d_arrays(x, output_size):
    out = np.empty(x.shape[:2] + tuple(output_size), dtype=x.dtype, like=x)
    indices = np.empty(out.shape, dtype=np.int64, like=x)
    backend_for(x).adaptive_max_pool2d_forward(_c(x), out, indices)
    return out, indices


@register("max_pool2d", compile="kernel", launchers=("max_pool2d_forward",))
class MaxPool2d(_MaxPoolWithIndices):
    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, dilation, ceil_mode):
        out, ctx.indices = _max_pool2d_arrays(x, kernel_size, stride, padding, dilation, ceil_mode)
        ctx.input_shape = x.shape
        return out


@register("adaptive_max_pool2d", compile="kernel", launchers=("adaptive_max_pool2d_forward",))
class AdaptiveMaxPool2d(_MaxPoolWithIndices):
    @staticmethod
    def forward(ctx, x, *, output_size):
        out, ctx.indices = _adaptive_max_pool2d_arrays(x, output_size)
        ctx.input_shape = x.shape
        return out


class MaxPool2dIndices(Function):
    """max_pool2d's argmax indices (int64, flat over H*W), from the same attrs as max_pool2d.

    Integer-valued, so never differentiated and not in OPS (like argmax); an array op all the same,
    so a tracer replays it as ``MaxPool2dIndices.forward(ctx, x, **attrs)``.
    """

    array_forward = True
    op_name = "max_pool2d_indices"

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, dilation, ceil_mode):
        return _max_pool2d_arrays(x, kernel_size, stride, padding, dilation, ceil_mode)[1]


class AdaptiveMaxPool2dIndices(Function):
    """adaptive_max_pool2d's argmax indices (int64); see MaxPool2dIndices."""

    array_forward = True
    op_name = "adaptive_max_pool2d_indices"

    @staticmethod
    def forward(ctx, x, *, output_size):
        return _adaptive_max_pool2d_arrays(x, output_size)[1]


@register("max_pool_scatter", compile="kernel", launchers=("max_pool_backward",))
class MaxPoolScatter(Function):
    """grad_in[n, c].flat[indices[n, c, o]] += grad[n, c, o]: the backward of max pooling."""

    @staticmethod
    def forward(ctx, grad, *, indices, input_shape):
        ctx.indices = indices = _indices_on(indices, grad)
        out = np.empty(input_shape, dtype=grad.dtype, like=grad)
        backend_for(grad).max_pool_backward(_c(grad), indices, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (MaxPoolGather.apply(grad, indices=ctx.indices),)


@register("max_pool_gather", compile="kernel", launchers=("max_pool_gather",))
class MaxPoolGather(Function):
    """out[n, c, o] = src[n, c].flat[indices[n, c, o]]: the backward of the scatter."""

    @staticmethod
    def forward(ctx, src, *, indices):
        indices = _indices_on(indices, src)
        ctx.indices, ctx.input_shape = indices, src.shape
        out = np.empty(indices.shape, dtype=src.dtype, like=src)
        backend_for(src).max_pool_gather(_c(src), indices, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (MaxPoolScatter.apply(grad, indices=ctx.indices, input_shape=ctx.input_shape),)


# ----------------------------------------------------------------------------- average pooling


@register("avg_pool2d", compile="kernel", launchers=("avg_pool2d_forward",))
class AvgPool2d(Function):
    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        ctx.options = dict(
            kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
            count_include_pad=count_include_pad, divisor_override=divisor_override,
        )  # fmt: skip
        ctx.input_shape = x.shape
        oh, ow = (
            pool_output_size(x.shape[2 + i], kernel_size[i], stride[i], padding[i], 1, ceil_mode)
            for i in (0, 1)
        )
        out = np.empty(x.shape[:2] + (oh, ow), dtype=x.dtype, like=x)
        backend_for(x).avg_pool2d_forward(_c(x), out, **ctx.options)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (AvgPool2dBackward.apply(grad, input_shape=ctx.input_shape, **ctx.options),)


@register("avg_pool2d_backward", compile="kernel", launchers=("avg_pool2d_backward",))
class AvgPool2dBackward(Function):
    """The adjoint of avg_pool2d: spreads each output gradient over its window."""

    @staticmethod
    def forward(ctx, grad, *, input_shape, **options):
        ctx.options = options
        out = np.empty(input_shape, dtype=grad.dtype, like=grad)
        backend_for(grad).avg_pool2d_backward(_c(grad), out, **options)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (AvgPool2d.apply(grad, **ctx.options),)


@register("adaptive_avg_pool2d", compile="kernel", launchers=("adaptive_avg_pool2d_forward",))
class AdaptiveAvgPool2d(Function):
    @staticmethod
    def forward(ctx, x, *, output_size):
        ctx.input_shape = x.shape
        out = np.empty(x.shape[:2] + tuple(output_size), dtype=x.dtype, like=x)
        backend_for(x).adaptive_avg_pool2d_forward(_c(x), out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (AdaptiveAvgPool2dBackward.apply(grad, input_shape=ctx.input_shape),)


@register("adaptive_avg_pool2d_backward", compile="kernel", launchers=("adaptive_avg_pool2d_backward",))
class AdaptiveAvgPool2dBackward(Function):
    """The adjoint of adaptive_avg_pool2d."""

    @staticmethod
    def forward(ctx, grad, *, input_shape):
        ctx.output_size = grad.shape[2:]
        out = np.empty(input_shape, dtype=grad.dtype, like=grad)
        backend_for(grad).adaptive_avg_pool2d_backward(_c(grad), out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (AdaptiveAvgPool2d.apply(grad, output_size=ctx.output_size),)


# ----------------------------------------------------------------------------- public functions


def _max_poolnd(op, dims, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    try:
        x, unbatched = batched_input(op, input, dims)
    except ForeignOperandError:  # a Proxy: the public function named `op` hands the call over
        return dispatch_call(globals()[op], locals())
    k, s, p, d = pool_window(op, x._data.shape, dims, kernel_size, stride, padding, dilation, ceil_mode)
    if dims == 1:
        x, k, s, p, d = x.unsqueeze(2), (1,) + k, (1,) + s, (0,) + p, (1,) + d
    attrs = dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=bool(ceil_mode))
    out = unbatch(MaxPool2d.apply(x, **attrs), unbatched, dims == 1)
    if not return_indices:
        return out
    return out, indices_tensor(MaxPool2dIndices.apply(x, **attrs), unbatched, dims == 1)


@hands_over
def max_pool1d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:  # fmt: skip
    """Max over sliding windows of (N, C, L) input; with return_indices, also the argmax
    positions along L (int64).

    >>> F = numdiff.nn.functional
    >>> F.max_pool1d(numdiff.tensor([[[1.0, 3.0, 2.0, 5.0]]]), 2)
    tensor([[[3., 5.]]])
    """
    return _max_poolnd(
        "max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


@hands_over
def max_pool2d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:  # fmt: skip
    """Max over sliding windows of (N, C, H, W) input; with return_indices, also the argmax as
    flat positions ``h*W + w`` in each input plane (int64). Ties keep the first maximum, NaN
    propagates.

    >>> F = numdiff.nn.functional
    >>> F.max_pool2d(numdiff.arange(16.0).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    return _max_poolnd(
        "max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


@hands_over
def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a fixed (H_out, W_out) over windows
    ``[floor(i*In/Out), ceil((i+1)*In/Out))``; None in output_size keeps that input size.

    >>> F = numdiff.nn.functional
    >>> F.adaptive_max_pool2d(numdiff.ones(1, 2, 5, 7), (2, 3)).shape
    numdiff.Size([1, 2, 2, 3])
    """
    try:
        op = "adaptive_max_pool2d"
        x, unbatched = batched_input(op, input, 2)
        size = resolve_output_size(op, output_size, tuple(x.shape))
        out = unbatch(AdaptiveMaxPool2d.apply(x, output_size=size), unbatched, False)
        if not return_indices:
            return out
        return out, indices_tensor(AdaptiveMaxPool2dIndices.apply(x, output_size=size), unbatched, False)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(adaptive_max_pool2d, locals())


def _avg_poolnd(
    op, dims, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    try:
        x, unbatched = batched_input(op, input, dims)
    except ForeignOperandError:  # a Proxy: the public function named `op` hands the call over
        return dispatch_call(globals()[op], locals())
    k, s, p, _ = pool_window(op, x._data.shape, dims, kernel_size, stride, padding, 1, ceil_mode)
    divisor_override = divisor(op, divisor_override)
    if dims == 1:
        x, k, s, p = x.unsqueeze(2), (1,) + k, (1,) + s, (0,) + p
    out = AvgPool2d.apply(
        x, kernel_size=k, stride=s, padding=p, ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad), divisor_override=divisor_override,
    )  # fmt: skip
    return unbatch(out, unbatched, dims == 1)


@hands_over
def avg_pool1d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:  # fmt: skip
    """Mean over sliding windows of (N, C, L) input (PyTorch's padding and ceil_mode rules).

    >>> F = numdiff.nn.functional
    >>> F.avg_pool1d(numdiff.tensor([[[1.0, 3.0, 5.0, 7.0]]]), 2)
    tensor([[[2., 6.]]])
    """
    return _avg_poolnd(
        "avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None
    )


@hands_over
def avg_pool2d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True, divisor_override: int | None = None,
) -> Tensor:  # fmt: skip
    """Mean over sliding windows of (N, C, H, W) input. With count_include_pad the divisor is the
    window clipped to the padded input, otherwise the in-image count; divisor_override replaces
    both.

    >>> F = numdiff.nn.functional
    >>> F.avg_pool2d(numdiff.arange(16.0).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 2.5000,  4.5000],
              [10.5000, 12.5000]]]])
    """
    return _avg_poolnd(
        "avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


@hands_over
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Mean pooling to a fixed (H_out, W_out); None in output_size keeps that input size.

    >>> F = numdiff.nn.functional
    >>> F.adaptive_avg_pool2d(numdiff.ones(1, 2, 5, 7), (1, 1)).shape
    numdiff.Size([1, 2, 1, 1])
    """
    try:
        op = "adaptive_avg_pool2d"
        x, unbatched = batched_input(op, input, 2)
        size = resolve_output_size(op, output_size, tuple(x.shape))
        return unbatch(AdaptiveAvgPool2d.apply(x, output_size=size), unbatched, False)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(adaptive_avg_pool2d, locals())


@hands_over
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Mean pooling of (N, C, L) input to a fixed length.

    >>> F = numdiff.nn.functional
    >>> F.adaptive_avg_pool1d(numdiff.tensor([[[1.0, 2.0, 3.0]]]), 2)
    tensor([[[1.5000, 2.5000]]])
    """
    try:
        op = "adaptive_avg_pool1d"
        x, unbatched = batched_input(op, input, 1)
        (size,) = resolve_output_size(op, output_size, tuple(x.shape))
        out = AdaptiveAvgPool2d.apply(x.unsqueeze(2), output_size=(1, size))
        return unbatch(out, unbatched, True)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(adaptive_avg_pool1d, locals())
