"""Activations (primitives with their derivatives) and softmax/log_softmax (composed)."""

from __future__ import annotations

import math

import numpy as np

from numdiff.autograd.function import Function
from numdiff.ops._util import as_result, normalize_dim
from numdiff.ops.registry import register
from numdiff.ops.selection import where
from numdiff.tensor import Tensor


def _check_float(op: str, x: Tensor) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x._data.dtype.kind != "f":
        raise TypeError(f"{op}: expected a floating point tensor, got dtype {x.dtype!r}")


@register("relu")
class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        out = np.maximum(x, 0)
        # NaN propagates through maximum, as in PyTorch.
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (where(out > 0, grad, grad * 0),)


@register("leaky_relu")
class LeakyRelu(Function):
    @staticmethod
    def forward(ctx, x, *, negative_slope):
        ctx.negative_slope = negative_slope
        ctx.save_for_backward(x)
        return np.where(x > 0, x, x * x.dtype.type(negative_slope))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (where(x > 0, grad, grad * ctx.negative_slope),)


@register("elu")
class Elu(Function):
    @staticmethod
    def forward(ctx, x, *, alpha):
        ctx.alpha = alpha
        ctx.save_for_backward(x)
        return np.where(x > 0, x, np.expm1(np.minimum(x, 0)) * x.dtype.type(alpha))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (where(x > 0, grad, grad * ctx.alpha * x.clamp(max=0).exp()),)


@register("softplus")
class Softplus(Function):
    """log(1 + exp(beta x)) / beta, linear above `threshold` as PyTorch."""

    @staticmethod
    def forward(ctx, x, *, beta, threshold):
        ctx.beta, ctx.threshold = beta, threshold
        ctx.save_for_backward(x)
        scaled = x * x.dtype.type(beta)
        soft = np.logaddexp(0, scaled).astype(x.dtype, copy=False) / x.dtype.type(beta)
        return np.where(scaled > threshold, x, soft)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        scaled = x * ctx.beta
        return (where(scaled > ctx.threshold, grad, grad * scaled.sigmoid()),)


@register("gelu")
class Gelu(Function):
    """x * Phi(x) with the exact erf form, or PyTorch's tanh approximation."""

    @staticmethod
    def forward(ctx, x, *, approximate):
        from numdiff.backend import backend_for

        ctx.approximate = approximate
        ctx.save_for_backward(x)
        if approximate == "tanh":
            inner = x.dtype.type(math.sqrt(2 / math.pi)) * (x + x.dtype.type(0.044715) * x**3)
            return x.dtype.type(0.5) * x * (1 + np.tanh(inner))
        # as_result: a 0-d x times a NumPy scalar is a NumPy scalar, which no backend takes.
        scaled = as_result(x * x.dtype.type(1 / math.sqrt(2)))
        return x * x.dtype.type(0.5) * (1 + backend_for(scaled).erf(scaled))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            k = math.sqrt(2 / math.pi)
            inner = k * (x + 0.044715 * x * x * x)
            t = inner.tanh()
            d_inner = k * (1 + 3 * 0.044715 * x * x)
            return (grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner),)
        cdf = 0.5 * (1 + (x * (1 / math.sqrt(2))).erf())
        pdf = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
        return (grad * (cdf + x * pdf),)


def _maybe_inplace(op: str, input: Tensor, compute, inplace: bool) -> Tensor:
    if not inplace:
        return compute(input)
    from numdiff._inplace import apply_inplace

    return apply_inplace(input, op, compute)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    _check_float("relu", input)
    return _maybe_inplace("relu_", input, Relu.apply, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope * x."""
    _check_float("leaky_relu", input)
    return _maybe_inplace("leaky_relu_", input, lambda x: LeakyRelu.apply(x, negative_slope=float(negative_slope)), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1)."""
    _check_float("elu", input)
    return _maybe_inplace("elu_", input, lambda x: Elu.apply(x, alpha=float(alpha)), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """A smooth relu: log(1 + exp(beta x)) / beta."""
    _check_float("softplus", input)
    if beta == 0:
        raise ValueError("softplus: beta must be non-zero")
    return Softplus.apply(input, beta=float(beta), threshold=float(threshold))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; approximate="tanh" for the tanh form."""
    _check_float("gelu", input)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(input, approximate=approximate)


@register("log_softmax")
class LogSoftmax(Function):
    """x - logsumexp(x) along `dim`, in one op: the heart of every classification loss.

    Shifting by the row maximum keeps exp from overflowing; the gradient is
    grad - softmax * sum(grad), with softmax = exp(out) from the saved output.
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.dim = dim
        shift = np.max(x, axis=dim, keepdims=True)
        shift = np.where(np.isfinite(shift), shift, 0).astype(x.dtype, copy=False)
        shifted = x - shift
        out = shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad - out.exp() * grad.sum(ctx.dim, keepdim=True),)


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """log(softmax(x)) along `dim`, stable for any input magnitude."""
    if dtype is not None:
        input = input.to(dtype)
    _check_float("log_softmax", input)
    dim = normalize_dim("log_softmax", dim, input.ndim)
    if input._data.size == 0:
        return input * 1
    return LogSoftmax.apply(input, dim=dim)


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`: exp of the stable log_softmax."""
    return log_softmax(input, dim, dtype).exp()
