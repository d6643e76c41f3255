"""Convolutions: conv1d, conv2d, conv_transpose1d, conv_transpose2d.

Three registered ops form a family closed under differentiation (each is bilinear in its two
tensor inputs, and the derivative of each is another member with the roles swapped):

* ``conv2d(x, w)``             -> out      (kernel: conv2d_forward, bias fused)
* ``conv_transpose2d(g, w)``   -> x-shaped (kernel: conv2d_backward_input)
* ``conv2d_weight_grad(x, g)`` -> w-shaped (kernel: conv2d_backward_weight)

so ``conv2d``'s input gradient is a transposed conv, its weight gradient is
``conv2d_weight_grad``, and every backward is itself differentiable. 1-d convolutions are the
2-d ones with H = 1. The public functions validate every argument before any kernel runs and
resolve ``"same"``/``"valid"`` and output_padding into explicit per-side padding
``(top, bottom, left, right)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._ground.args import check_output_elements, int_tuple, is_int, remember_checks
from numdiff._ground.conv_geometry import conv_output_size
from numdiff._memory_format import channels_last
from numdiff.amp import casts_on
from numdiff.autograd.function import Function
from numdiff.backend import backend_for, holds_values
from numdiff.kernels import layout_copy
from numdiff.ops._util import check_same_device, ensure_tensor
from numdiff.ops.registry import register
from numdiff.overrides import ForeignOperandError, dispatch_call, hands_over
from numdiff.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


def _c(x: Any) -> Any:
    return layout_copy.contiguous(x)


@register("conv2d", compile="kernel", launchers=("conv2d_forward",))
class Conv2d(Function):
    @staticmethod
    def forward(ctx, x, w, b, *, stride, padding, dilation, groups):
        ctx.geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        ctx.save_for_backward(x, w)
        kh, kw = w.shape[2:]
        oh = conv_output_size(x.shape[2], kh, stride[0], padding[0], padding[1], dilation[0])
        ow = conv_output_size(x.shape[3], kw, stride[1], padding[2], padding[3], dilation[1])
        out = np.empty((x.shape[0], w.shape[0], oh, ow), dtype=x.dtype, like=x)
        bias = None if b is None else _c(b)
        backend_for(x).conv2d_forward(_c(x), _c(w), bias, out, stride, padding, dilation, groups)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_x = ConvTranspose2d.apply(grad, w, size=tuple(x.shape[2:]), **ctx.geometry) if needs[0] else None
        grad_w = (
            Conv2dWeightGrad.apply(x, grad, size=tuple(w.shape[2:]), **ctx.geometry) if needs[1] else None
        )
        grad_b = grad.sum((0, 2, 3)) if len(needs) > 2 and needs[2] else None
        return grad_x, grad_w, grad_b


@register("conv_transpose2d", compile="kernel", launchers=("conv2d_backward_input",))
class ConvTranspose2d(Function):
    """The adjoint of conv2d in its input: g (N, Co, OH, OW), w (Co, C/groups, KH, KW) ->
    (N, C, *size). Bias, if any, is added by the caller."""

    @staticmethod
    def forward(ctx, g, w, *, size, stride, padding, dilation, groups):
        ctx.geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        ctx.save_for_backward(g, w)
        out = np.empty((g.shape[0], w.shape[1] * groups) + tuple(size), dtype=g.dtype, like=g)
        backend_for(g).conv2d_backward_input(_c(g), _c(w), out, stride, padding, dilation, groups)
        return out

    @staticmethod
    def backward(ctx, grad):
        g, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_g = Conv2d.apply(grad, w, None, **ctx.geometry) if needs[0] else None
        grad_w = (
            Conv2dWeightGrad.apply(grad, g, size=tuple(w.shape[2:]), **ctx.geometry) if needs[1] else None
        )
        return grad_g, grad_w


@register("conv2d_weight_grad", compile="kernel", launchers=("conv2d_backward_weight",))
class Conv2dWeightGrad(Function):
    """The adjoint of conv2d in its weight: x (N, C, H, W), g (N, Co, OH, OW) ->
    (Co, C/groups, *size)."""

    @staticmethod
    def forward(ctx, x, g, *, size, stride, padding, dilation, groups):
        ctx.geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        ctx.save_for_backward(x, g)
        out = np.empty((g.shape[1], x.shape[1] // groups) + tuple(size), dtype=x.dtype, like=x)
        backend_for(x).conv2d_backward_weight(_c(x), _c(g), out, stride, padding, dilation, groups)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, g = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_x = ConvTranspose2d.apply(g, grad, size=tuple(x.shape[2:]), **ctx.geometry) if needs[0] else None
        grad_g = Conv2d.apply(x, grad, None, **ctx.geometry) if needs[1] else None
        return grad_x, grad_g


# ----------------------------------------------------------------------------- argument checks


def _tensors(op: str, input: Any, weight: Any, bias: Any) -> tuple[Tensor, Tensor, Tensor | None]:
    """Check that input, weight and bias are Tensors of one floating dtype on one device."""
    x = ensure_tensor(op, input, "input")
    w = ensure_tensor(op, weight, "weight")
    tensors = [x, w]
    if bias is not None:
        bias = ensure_tensor(op, bias, "bias")
        tensors.append(bias)
    dtype = x._data.dtype
    if not (w._data.dtype is dtype and (bias is None or bias._data.dtype is dtype) and dtype.kind == "f"):
        for t, name in zip(tensors, ("input", "weight", "bias")):
            if t.dtype.numpy.kind not in "fV":
                raise TypeError(f"{op}: {name} must be a floating-point tensor, got {t.dtype}")
        if len({t.dtype for t in tensors}) > 1 and not casts_on(x):
            listed = ", ".join(f"{n}={t.dtype}" for t, n in zip(tensors, ("input", "weight", "bias")))
            raise TypeError(f"{op}: input, weight and bias must share one dtype, got {listed}")
    check_same_device(op, *tensors)
    return x, w, bias


def _check_ranks(op: str, dims: int, x_shape: tuple, w_shape: tuple) -> bool:
    """Input and weight ranks and sizes; returns whether the input is unbatched."""
    if len(x_shape) not in (dims + 1, dims + 2):
        raise ValueError(
            f"{op}: expected a {dims + 2}-D (batched) or {dims + 1}-D (unbatched) input, got shape {x_shape}"
        )
    if len(w_shape) != dims + 2:
        raise ValueError(f"{op}: expected a {dims + 2}-D weight, got shape {w_shape}")
    if 0 in w_shape:
        raise ValueError(f"{op}: weight must have no zero-size dimension, got shape {w_shape}")
    if 0 in x_shape[-dims:]:
        raise ValueError(f"{op}: spatial dimensions must be non-empty, got input {x_shape}")
    return len(x_shape) == dims + 1


def _check_groups(op: str, groups: Any, in_channels: int, out_channels: int) -> int:
    """groups is a positive int dividing both channel counts."""
    if not is_int(groups):
        raise TypeError(f"{op}: groups must be a positive int, got {groups!r} ({type(groups).__name__})")
    (groups,) = int_tuple(op, "groups", (groups,), 1, 1)
    if in_channels % groups or out_channels % groups:
        raise ValueError(
            f"{op}: groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}"
        )
    return int(groups)


def _check_bias(op: str, bias_shape: tuple | None, channels: int) -> None:
    if bias_shape is not None and bias_shape != (channels,):
        raise ValueError(f"{op}: bias must have shape ({channels},), got {bias_shape}")


def _conv_padding(op: str, padding: Any, kernel: tuple, dilation: tuple, stride: tuple) -> tuple[int, ...]:
    """Per-side padding (lo, hi) per spatial dim, flattened: resolves "same" and "valid"."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * len(kernel))
        if padding != "same":
            raise ValueError(f'{op}: padding must be "same", "valid", an int or a tuple, got {padding!r}')
        if any(s != 1 for s in stride):
            raise ValueError(
                f'{op}: padding="same" is not supported for strided convolutions (stride {stride})'
            )
        sides: list[int] = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            sides += [total // 2, total - total // 2]
        return tuple(sides)
    per_dim = int_tuple(op, "padding", padding, len(kernel), 0, expand=True)
    return tuple(p for p in per_dim for _ in range(2))


def _check_fits(op: str, spatial: tuple, kernel: tuple, dilation: tuple, sides: tuple) -> None:
    for i, (size, k, d) in enumerate(zip(spatial, kernel, dilation)):
        padded = size + sides[2 * i] + sides[2 * i + 1]
        if padded < d * (k - 1) + 1:
            raise ValueError(
                f"{op}: kernel size {tuple(kernel)} (dilation {tuple(dilation)}) is larger than the padded "
                f"input {tuple(s + sides[2 * j] + sides[2 * j + 1] for j, s in enumerate(spatial))}"
            )


# ----------------------------------------------------------------------------- public functions


@remember_checks
def _conv_config(op, dims, x_shape, w_shape, b_shape, stride, padding, dilation, groups, limited=True):
    """Check a convolution's shapes and arguments; returns the normalised ``(stride, sides,
    dilation, groups, unbatched)``, sides being the per-side padding."""
    unbatched = _check_ranks(op, dims, x_shape, w_shape)
    if unbatched:
        x_shape = (1,) + x_shape
    stride = int_tuple(op, "stride", stride, dims, 1, expand=True)
    dilation = int_tuple(op, "dilation", dilation, dims, 1, expand=True)
    kernel = w_shape[2:]
    groups = _check_groups(op, groups, x_shape[1], w_shape[0])
    if w_shape[1] * groups != x_shape[1]:
        raise ValueError(
            f"{op}: weight {w_shape} with groups={groups} expects input with {w_shape[1] * groups} "
            f"channels, got input {x_shape} with {x_shape[1]}"
        )
    _check_bias(op, b_shape, w_shape[0])
    sides = _conv_padding(op, padding, kernel, dilation, stride)
    _check_fits(op, x_shape[2:], kernel, dilation, sides)
    spatial = tuple(
        conv_output_size(n, k, s, sides[2 * i], sides[2 * i + 1], d)
        for i, (n, k, s, d) in enumerate(zip(x_shape[2:], kernel, stride, dilation))
    )
    if limited:  # on the meta device nothing is allocated, so any size goes, as in PyTorch
        check_output_elements(op, (x_shape[0], w_shape[0]) + spatial)
    return stride, sides, dilation, groups, unbatched


def _convnd(op: str, dims: int, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    x, w, b = _tensors(op, input, weight, bias)
    b_shape = None if b is None else b._data.shape
    stride, sides, dilation, groups, unbatched = _conv_config(
        op, dims, x._data.shape, w._data.shape, b_shape, stride, padding, dilation, groups, holds_values(x._data)
    )
    if unbatched:
        x = x.unsqueeze(0)
    if dims == 1:
        out = Conv2d.apply(
            x.unsqueeze(2), w.unsqueeze(2), b, stride=(1,) + stride, padding=(0, 0) + sides,
            dilation=(1,) + dilation, groups=groups,
        ).squeeze(2)  # fmt: skip
    else:
        out = Conv2d.apply(x, w, b, stride=stride, padding=sides, dilation=dilation, groups=groups)
        if not unbatched and not x._data.flags.c_contiguous and x.is_contiguous(memory_format=channels_last):
            out = out.contiguous(memory_format=channels_last)  # a channels_last input gives one, as in PyTorch
    return out.squeeze(0) if unbatched else out


@hands_over
def conv1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:  # fmt: skip
    """1-d convolution (cross-correlation) of (N, C_in, L) input with (C_out, C_in/groups, K)
    weight; padding is an int, a 1-tuple, "same" or "valid".

    >>> F = numdiff.nn.functional
    >>> F.conv1d(numdiff.ones(1, 2, 5), numdiff.ones(4, 2, 3)).shape
    numdiff.Size([1, 4, 3])
    """
    try:
        return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(conv1d, locals())


@hands_over
def conv2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:  # fmt: skip
    """2-d convolution (cross-correlation) of (N, C_in, H, W) input with (C_out, C_in/groups,
    KH, KW) weight; stride, padding and dilation are ints or pairs, padding also "same"/"valid".

    >>> F = numdiff.nn.functional
    >>> F.conv2d(numdiff.ones(1, 3, 8, 8), numdiff.ones(6, 3, 3, 3), padding=1).shape
    numdiff.Size([1, 6, 8, 8])
    """
    try:
        return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(conv2d, locals())


@remember_checks
def _conv_transpose_config(op, dims, x_shape, w_shape, b_shape, stride, padding, output_padding, groups, dilation, limited=True):
    """Check a transposed convolution's shapes and arguments; returns the normalised ``(size,
    stride, sides, dilation, groups, unbatched)``: the output's spatial size and the per-side
    padding of the conv whose adjoint it is."""
    unbatched = _check_ranks(op, dims, x_shape, w_shape)
    if unbatched:
        x_shape = (1,) + x_shape
    stride = int_tuple(op, "stride", stride, dims, 1, expand=True)
    dilation = int_tuple(op, "dilation", dilation, dims, 1, expand=True)
    if isinstance(padding, str):  # no "same"/"valid" here: a string is a wrong type, as in PyTorch
        raise TypeError(f"{op}: padding must be an int or a tuple, got {padding!r}")
    pads = int_tuple(op, "padding", padding, dims, 0, expand=True)
    extra = int_tuple(op, "output_padding", output_padding, dims, 0, expand=True)
    kernel = w_shape[2:]
    if w_shape[0] != x_shape[1]:
        raise ValueError(
            f"{op}: weight {w_shape} expects input with {w_shape[0]} channels, got input "
            f"{x_shape} with {x_shape[1]}"
        )
    groups = _check_groups(op, groups, x_shape[1], x_shape[1])  # out_channels = w.shape[1] * groups
    _check_bias(op, b_shape, w_shape[1] * groups)
    for e, s, d in zip(extra, stride, dilation):
        if e >= max(s, d):
            raise ValueError(
                f"{op}: output_padding {extra} must be smaller than either stride {stride} or dilation {dilation}"
            )
    size = tuple(
        (n - 1) * s - 2 * p + d * (k - 1) + e + 1
        for n, s, p, d, k, e in zip(x_shape[2:], stride, pads, dilation, kernel, extra)
    )
    if any(n < 1 for n in size):
        raise ValueError(f"{op}: output size {size} is not positive for input {x_shape} and padding {pads}")
    if limited:
        check_output_elements(op, (x_shape[0], w_shape[1] * groups) + size)
    # As the adjoint of a conv of the output: bottom/right padding shrinks by output_padding.
    sides = tuple(v for p, e in zip(pads, extra) for v in (p, p - e))
    return size, stride, sides, dilation, groups, unbatched


def _conv_transposend(
    op: str, dims: int, input, weight, bias, stride, padding, output_padding, groups, dilation
) -> Tensor:
    x, w, b = _tensors(op, input, weight, bias)
    b_shape = None if b is None else b._data.shape
    size, stride, sides, dilation, groups, unbatched = _conv_transpose_config(
        op, dims, x._data.shape, w._data.shape, b_shape, stride, padding, output_padding, groups, dilation,
        holds_values(x._data),
    )
    if unbatched:
        x = x.unsqueeze(0)
    if dims == 1:
        out = ConvTranspose2d.apply(
            x.unsqueeze(2), w.unsqueeze(2), size=(1,) + size, stride=(1,) + stride, padding=(0, 0) + sides,
            dilation=(1,) + dilation, groups=groups,
        ).squeeze(2)  # fmt: skip
    else:
        out = ConvTranspose2d.apply(
            x, w, size=size, stride=stride, padding=sides, dilation=dilation, groups=groups
        )
    if b is not None:
        out = out + b.reshape((-1,) + (1,) * dims)
    return out.squeeze(0) if unbatched else out


@hands_over
def conv_transpose1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:  # fmt: skip
    """Transposed 1-d convolution: input (N, C_in, L), weight (C_in, C_out/groups, K).

    >>> F = numdiff.nn.functional
    >>> F.conv_transpose1d(numdiff.ones(1, 2, 5), numdiff.ones(2, 3, 3), stride=2).shape
    numdiff.Size([1, 3, 11])
    """
    try:
        return _conv_transposend(
            "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups, dilation
        )
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(conv_transpose1d, locals())


@hands_over
def conv_transpose2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:  # fmt: skip
    """Transposed 2-d convolution (the input gradient of conv2d, as a layer): input
    (N, C_in, H, W), weight (C_in, C_out/groups, KH, KW).

    >>> F = numdiff.nn.functional
    >>> F.conv_transpose2d(numdiff.ones(1, 2, 4, 4), numdiff.ones(2, 3, 3, 3), stride=2).shape
    numdiff.Size([1, 3, 9, 9])
    """
    try:
        return _conv_transposend(
            "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups, dilation
        )
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(conv_transpose2d, locals())
