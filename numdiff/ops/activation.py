"""Activations and log_softmax/softmax.

The elementwise activations (relu, leaky_relu, elu, softplus, gelu) are rows of the scalar rule
table (numdiff/_ground/scalar_rules.py); this module adds PyTorch's arguments (``inplace``, gelu's
``approximate``) and their checks.
"""

from __future__ import annotations

import numpy as np

from numdiff.autograd.function import Function
from numdiff.ops._util import half_computed_in_float32, normalize_dim
from numdiff.ops.elementwise import FUNCTIONS
from numdiff.ops.registry import register
from numdiff.ops.selection import where
from numdiff.tensor import Tensor


def _check_float(op: str, x: Tensor) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x._data.dtype.kind not in "fV":
        raise TypeError(f"{op}: expected a floating point tensor, got dtype {x.dtype!r}")


Relu, LeakyRelu, Elu = FUNCTIONS["relu"], FUNCTIONS["leaky_relu"], FUNCTIONS["elu"]
Softplus, Gelu, GeluTanh = FUNCTIONS["softplus"], FUNCTIONS["gelu"], FUNCTIONS["gelu_tanh"]


def _maybe_inplace(op: str, input: Tensor, compute, inplace: bool) -> Tensor:
    if not inplace:
        return compute(input)
    from numdiff._inplace import apply_inplace

    return apply_inplace(input, op, compute)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    _check_float("relu", input)
    return _maybe_inplace("relu_", input, Relu.apply, inplace) if inplace else Relu.apply(input)


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
    return GeluTanh.apply(input) if approximate == "tanh" else Gelu.apply(input)


def _rule_activation(name: str, inplace: bool, input: Tensor, **attrs: float) -> Tensor:
    """Apply the activation rule `name` (checked floating input), in place if asked."""
    _check_float(name, input)
    function = FUNCTIONS[name]
    return _maybe_inplace(f"{name}_", input, lambda x: function.apply(x, **attrs), inplace)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    return _rule_activation("silu", inplace, input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _rule_activation("mish", inplace, input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _rule_activation("hardswish", inplace, input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _rule_activation("hardsigmoid", inplace, input)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val], with zero gradient outside."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return _rule_activation("hardtanh", inplace, input, min_val=float(min_val), max_val=float(max_val))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), without overflow."""
    return _rule_activation("logsigmoid", False, input)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled elu with the self-normalising constants."""
    return _rule_activation("selu", inplace, input)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x / alpha) - 1)."""
    if alpha == 0:
        raise ValueError("celu: alpha must be non-zero (it divides x)")
    return _rule_activation("celu", inplace, input, alpha=float(alpha))


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return _rule_activation("softsign", False, input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x moved `lambd` toward 0, and 0 within `lambd` of it."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be at least 0, got {lambd}")
    return _rule_activation("softshrink", False, input, lambd=float(lambd))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x, but 0 within `lambd` of 0."""
    return _rule_activation("hardshrink", False, input, lambd=float(lambd))


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return _rule_activation("tanhshrink", False, input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    return _rule_activation("threshold", inplace, input, threshold=float(threshold), value=float(value))


def softmin(input: Tensor, dim: int, dtype=None) -> Tensor:
    """softmax(-x) along `dim`."""
    _check_float("softmin", input)
    return softmax(-input, dim, dtype)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, with one learned slope for all channels or one per channel
    (dim 1, or dim 0 of a 1-D input)."""
    _check_float("prelu", input)
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu: weight must be a Tensor, got {type(weight).__name__}")
    slopes = weight.numel()
    if slopes != 1:
        channel = 1 if input.ndim >= 2 else 0
        if input.ndim == 0 or input.shape[channel] != slopes:
            raise ValueError(
                f"prelu: weight has {slopes} slopes but input of shape {tuple(input.shape)} has "
                f"{input.shape[channel] if input.ndim else 0} channels (dim {channel}); give 1 slope or one per channel"
            )
        shape = [1] * input.ndim
        shape[channel] = slopes
        weight = weight.reshape(tuple(shape))
    else:
        weight = weight.reshape(())

    return where(input > 0, input, weight * input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: a * sigmoid(b), with a and b the two halves of `input` along `dim`."""
    if not isinstance(input, Tensor):
        raise TypeError(f"glu: expected a Tensor, got {type(input).__name__}")
    if input.ndim == 0:
        raise ValueError("glu: does not support a 0-d tensor")
    axis = normalize_dim("glu", dim, input.ndim)
    size = input.shape[axis]
    if size % 2:
        raise ValueError(f"glu: halving dimension {dim} must be even, but it has size {size} (shape {tuple(input.shape)})")
    a, b = input.split(size // 2, axis)
    return a * b.sigmoid()


@register("log_softmax", compile="call")
class LogSoftmax(Function):
    """x - logsumexp(x) along `dim`, in one op: the heart of every classification loss.

    Shifting by the row maximum keeps exp from overflowing; the gradient is
    grad - softmax * sum(grad), with softmax = exp(out) from the saved output.
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.dim = dim
        # A row holding +inf is NaN throughout (inf - inf), its gradient too, as in PyTorch; a row
        # of -inf is NaN as well. Finite rows never see an inf shift.
        shift = np.max(x, axis=dim, keepdims=True)
        with np.errstate(invalid="ignore"):
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
    return half_computed_in_float32(input, lambda x: LogSoftmax.apply(x, dim=dim))


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`: exp of the stable log_softmax."""
    if dtype is not None:
        input = input.to(dtype)
    _check_float("softmax", input)  # checked here too, so that a bad call names softmax
    dim = normalize_dim("softmax", dim, input.ndim)
    # float16: exp of a log_softmax already rounded to half would lose a few ulps more.
    return half_computed_in_float32(input, lambda x: log_softmax(x, dim).exp())
