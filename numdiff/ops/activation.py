"""Activations and log_softmax/softmax: the functions of numdiff.nn.functional's activations.

The elementwise activations are rows of the scalar rule table (numdiff/_ground/scalar_rules.py). A
row that says ``functional="plain"`` or ``"inplace"`` gets its function generated here (silu, mish,
logsigmoid, ...: the rule's attrs as arguments, and PyTorch's ``inplace``); the others (relu,
leaky_relu, elu, softplus, gelu, hardtanh, celu, ...) are written here with their argument checks.
Every public function of this module is an activation of numdiff.nn.functional.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._ground.scalar_expressions import ScalarRule
from numdiff._ground.scalar_rules import RULES
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import backend_for
from numdiff.ops._util import half_computed_in_float32, normalize_dim
from numdiff.ops.elementwise import FUNCTIONS, eager_unary
from numdiff.ops.registry import register
from numdiff.ops.selection import clamp
from numdiff.overrides import dispatch, dispatch_call, honours_protocol, is_overridable
from numdiff.tensor import Tensor


def _check_float(op: str, x: Tensor) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x._data.dtype.kind not in "fV":
        raise TypeError(f"{op}: expected a floating point tensor, got dtype {x.dtype!r}")


def _is_integral(x: object) -> bool:
    return isinstance(x, Tensor) and x._data.dtype.kind in "iu"


def _integral_clamp(input: Tensor, low: float | None, high: float | None, inplace: bool) -> Tensor:
    """relu and hardtanh of an integer tensor: a clamp to integer bounds, in its dtype (no gradient)."""
    low = None if low is None else int(np.ceil(low))
    high = None if high is None else int(np.floor(high))
    return input.clamp_(low, high) if inplace else clamp(input, low, high)


Relu, LeakyRelu, Elu = FUNCTIONS["relu"], FUNCTIONS["leaky_relu"], FUNCTIONS["elu"]
Softplus, Gelu, GeluTanh = FUNCTIONS["softplus"], FUNCTIONS["gelu"], FUNCTIONS["gelu_tanh"]
Prelu = FUNCTIONS["prelu"]


def _maybe_inplace(op: str, input: Tensor, compute, inplace: bool) -> Tensor:
    if not inplace:
        return compute(input)
    from numdiff._inplace import apply_inplace

    return apply_inplace(input, op, compute)


@honours_protocol
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); integer tensors too, as in PyTorch."""
    return _relu(input, True) if inplace else _relu_eager(input)


def _relu(input: Tensor, inplace: bool = False) -> Tensor:
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch(relu, (input,), {"inplace": inplace} if inplace else {})
    if _is_integral(input):
        return _integral_clamp(input, 0, None, inplace)
    _check_float("relu", input)
    return _maybe_inplace("relu_", input, Relu.apply, inplace) if inplace else Relu.apply(input)


# Float tensors on the host, eagerly: ops/_elementwise_eager.py; everything else: _relu.
_relu_eager = eager_unary(Relu, _relu)


@honours_protocol
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope * x."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(leaky_relu, locals())
    _check_float("leaky_relu", input)
    return _maybe_inplace("leaky_relu_", input, lambda x: LeakyRelu.apply(x, negative_slope=float(negative_slope)), inplace)


@honours_protocol
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1)."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(elu, locals())
    _check_float("elu", input)
    return _maybe_inplace("elu_", input, lambda x: Elu.apply(x, alpha=float(alpha)), inplace)


@honours_protocol
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """A smooth relu: log(1 + exp(beta x)) / beta."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(softplus, locals())
    _check_float("softplus", input)
    if beta == 0:
        raise ValueError("softplus: beta must be non-zero")
    return Softplus.apply(input, beta=float(beta), threshold=float(threshold))


@honours_protocol
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; approximate="tanh" for the tanh form."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(gelu, locals())
    _check_float("gelu", input)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return GeluTanh.apply(input) if approximate == "tanh" else Gelu.apply(input)


def _rule_activation(name: str, inplace: bool, input: Tensor, **attrs: float) -> Tensor:
    """Apply the activation rule `name` (checked floating input), in place if asked."""
    _check_float(name, input)
    function = FUNCTIONS[name]
    return _maybe_inplace(f"{name}_", input, lambda x: function.apply(x, **attrs), inplace)


@honours_protocol
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val], with zero gradient outside."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(hardtanh, locals())
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    if _is_integral(input):
        return _integral_clamp(input, min_val, max_val, inplace)
    return _rule_activation("hardtanh", inplace, input, min_val=float(min_val), max_val=float(max_val))


@honours_protocol
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(relu6, locals())
    return hardtanh(input, 0.0, 6.0, inplace)


@honours_protocol
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x / alpha) - 1)."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(celu, locals())
    if alpha == 0:
        raise ValueError("celu: alpha must be non-zero (it divides x)")
    return _rule_activation("celu", inplace, input, alpha=float(alpha))


@honours_protocol
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x moved `lambd` toward 0, and 0 within `lambd` of it."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(softshrink, locals())
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be at least 0, got {lambd}")
    return _rule_activation("softshrink", False, input, lambd=float(lambd))


@honours_protocol
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(threshold, locals())
    return _rule_activation("threshold", inplace, input, threshold=float(threshold), value=float(value))


def _attr_values(op: str, attrs: dict[str, Any]) -> dict[str, float]:
    values = {}
    for key, value in attrs.items():
        try:
            if isinstance(value, (bool, str)):
                raise TypeError
            values[key] = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{op}: {key} must be a number, got {value!r}") from None
    return values


def _make_functional(rule: ScalarRule) -> Callable[..., Tensor]:
    """numdiff.nn.functional.<rule.name>(input, <attrs>[, inplace]) for a rule that asks for one."""
    name, takes_inplace = rule.name, rule.functional == "inplace"
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [inspect.Parameter("input", keyword, annotation="Tensor")]
    parameters += [inspect.Parameter(key, keyword, default=default, annotation="float") for key, default in rule.attrs]
    if takes_inplace:
        parameters.append(inspect.Parameter("inplace", keyword, default=False, annotation="bool"))
    signature = inspect.Signature(parameters, return_annotation="Tensor")

    if rule.attrs:  # the arguments by PyTorch's signature (hardshrink(x, 0.5), hardshrink(x, lambd=0.5))
        defaults = {**dict(rule.attrs), **({"inplace": False} if takes_inplace else {})}
        order = tuple(defaults)

        def functional(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
            # Matched by hand: inspect.Signature.bind cost more than the op itself.
            if len(args) > len(order):
                raise TypeError(f"{name}{signature}: takes {len(order) + 1} arguments, got {len(args) + 1}")
            values = {**defaults, **dict(zip(order, args))}
            for key, value in kwargs.items():
                if key not in defaults or key in order[: len(args)]:
                    problem = "unexpected keyword argument" if key not in defaults else "got a second value for"
                    raise TypeError(f"{name}{signature}: {problem} {key!r}")
                values[key] = value
            inplace = values.pop("inplace", False)
            return _rule_activation(name, inplace, input, **_attr_values(name, values))

    elif takes_inplace:

        def functional(input: Tensor, inplace: bool = False) -> Tensor:
            return _rule_activation(name, inplace, input)

    else:

        def functional(input: Tensor) -> Tensor:
            return _rule_activation(name, False, input)

    functional.__signature__ = signature
    functional.__name__ = functional.__qualname__ = name
    functional.__module__ = __name__
    functional.__doc__ = f"{rule.doc}\n\n    >>> numdiff.nn.functional.{name}(numdiff.tensor([-1.0, 2.0]))  # doctest: +SKIP\n"
    return functional


GENERATED = {rule.name: _make_functional(rule) for rule in RULES.values() if rule.functional}
"""The activations generated from their scalar rules, by name (silu, mish, logsigmoid, ...)."""
globals().update(GENERATED)


@honours_protocol
def softmin(input: Tensor, dim: int, dtype=None) -> Tensor:
    """softmax(-x) along `dim`."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(softmin, locals())
    _check_float("softmin", input)
    return softmax(-input, dim, dtype)


@honours_protocol
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, with one learned slope for all channels or one per channel
    (dim 1, or dim 0 of a 1-D input)."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(prelu, locals())
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
    if weight.dtype != input.dtype:
        raise TypeError(f"prelu: weight has dtype {weight.dtype} but input has dtype {input.dtype}; give both one dtype")
    return Prelu.apply(input, weight)


@honours_protocol
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: a * sigmoid(b), with a and b the two halves of `input` along `dim`."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(glu, locals())
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


def _lines(shape: tuple[int, ...], dim: int) -> tuple[int, ...]:
    """The fused kernels' view of `shape`: rows (outer, n) along the last dim, else (outer, n, inner)."""
    shape = shape or (1,)  # a 0-d tensor is one line of one value
    if dim == len(shape) - 1 and shape[dim]:  # a classifier's rows: no products
        return math.prod(shape) // shape[dim], shape[dim]
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])


def _as_lines(array: Any, view: tuple[int, ...], like: Any) -> Any:
    """`array` C-contiguous as `like`'s type in shape `view`: itself if it is one (no view made)."""
    array = np.ascontiguousarray(array, like=like)
    return array if array.shape == view else array.reshape(view)


def _fused_softmax(x: Any, dim: int, log: bool) -> Any:
    """softmax (log_softmax if `log`) of array x along `dim`, by the device's fused kernel
    (numdiff.kernels.softmax)."""
    view = _lines(x.shape, dim)
    out = np.empty(x.shape, dtype=x.dtype, like=x)
    backend_for(x).softmax_forward(_as_lines(x, view, x), _as_lines(out, view, x), log)
    return out


def _fused_softmax_backward(grad: Tensor, out: Tensor, dim: int, log: bool) -> Tensor:
    """The first-order input gradient of _fused_softmax for `grad`, from its saved output."""
    o = out._data
    view = _lines(o.shape, dim)
    dx = np.empty(o.shape, dtype=o.dtype, like=o)
    backend_for(o).softmax_backward(_as_lines(grad._data, view, o), _as_lines(o, view, o), _as_lines(dx, view, o), log)
    return Tensor._wrap(dx, None, None)


@register("log_softmax", compile="call", launchers=("softmax_forward", "softmax_backward"))
class LogSoftmax(Function):
    """x - logsumexp(x) along `dim`, in one op: the heart of every classification loss.

    Shifting by the row maximum keeps exp from overflowing; the gradient is
    grad - softmax * sum(grad), with softmax = exp(out) from the saved output.
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.dim = dim
        out = _fused_softmax(x, dim, log=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        if not is_grad_enabled() and grad._data.dtype == out._data.dtype:
            return (_fused_softmax_backward(grad, out, ctx.dim, log=True),)
        return (grad - out.exp() * grad.sum(ctx.dim, keepdim=True),)


@honours_protocol
def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """log(softmax(x)) along `dim`, stable for any input magnitude."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(log_softmax, locals())
    if dtype is not None:
        input = input.to(dtype)
    _check_float("log_softmax", input)
    dim = normalize_dim("log_softmax", dim, input.ndim)
    if input._data.size == 0:
        return input * 1
    if input._data.dtype.char in "fd":  # computes in its own dtype: no half-precision wrapper and closure
        return LogSoftmax.apply(input, dim=dim)
    return half_computed_in_float32(input, lambda x: LogSoftmax.apply(x, dim=dim), "log_softmax")


@register("softmax", compile="call", launchers=("softmax_forward", "softmax_backward"))
class Softmax(Function):
    """exp(x - max) / sum(exp(x - max)) along `dim`, in one op (attention's probabilities).

    The gradient is out * (grad - sum(grad * out)) from the saved output. Composed as
    exp(log_softmax(x)) it took seven NumPy passes forward and two exps more backward: 3.1 ms for a
    float32 (16, 4, 64, 64) forward and backward against PyTorch's 0.5 (one thread).
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.dim = dim
        out = _fused_softmax(x, dim, log=False)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        if not is_grad_enabled() and grad._data.dtype == out._data.dtype:
            return (_fused_softmax_backward(grad, out, ctx.dim, log=False),)
        return (out * (grad - (grad * out).sum(ctx.dim, keepdim=True)),)


@honours_protocol
def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, shifted by the maximum so that exp cannot overflow."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(softmax, locals())
    if dtype is not None:
        input = input.to(dtype)
    _check_float("softmax", input)  # checked here too, so that a bad call names softmax
    dim = normalize_dim("softmax", dim, input.ndim)
    if input._data.size == 0:
        return input * 1
    if input._data.dtype.char in "fd":  # computes in its own dtype: no half-precision wrapper and closure
        return Softmax.apply(input, dim=dim)
    return half_computed_in_float32(input, lambda x: Softmax.apply(x, dim=dim), "softmax")
