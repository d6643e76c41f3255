"""Forward-mode rules: the tangent of an op's output from its inputs' tangents.

Each rule is attached to its op's spec (``attach(name, jvp=rule)``, read as ``cls.spec.jvp``)
when this module is imported, as numdiff/func/_batch_rules.py attaches the batching rules. A rule
is ``rule(cls, inputs, attrs, tangents, out) -> tangent`` where `cls` is the op's Function,
`tangents` has one entry per input (None for an input without a tangent, and for every non-tensor
input) and `out` is the op's result. It computes with numdiff ops, so the tangent is itself
recorded on the tape (grad of jvp) and pushed forward again by an outer jvp level (jacfwd of
jacfwd).

Three families cover most ops:

- the scalar rules (numdiff/_ground/scalar_rules.py): tangent_out = sum_i d out/d x_i * t_i, read
  from the same derivative expressions as the backward, in one pass;
- linear ops (views, reshapes, indexing, cat, sum, pooling by averages, where): the op itself
  applied to the tangents, with zeros in the place of a missing one;
- multilinear ops (matmul, linear, conv): one term per input with a tangent, that input replaced
  by its tangent and a bias by None (its tangent is added, broadcast to the output).

An op without a rule is pushed forward by a double vjp (numdiff.func._forward).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._ground.scalar_expressions import ScalarRule, vjp_expression
from numdiff._ground.scalar_rules import RULES as SCALAR_RULES
from numdiff.backend import like_host
from numdiff.creation import zeros_like
from numdiff.ops.elementwise import _as_gradient, _tensor_where, _TensorMath
from numdiff.ops.registry import attach
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

JvpRule = Callable[[type, tuple, dict, list, Any], Any]


def _constant(value: float, like: Tensor) -> Tensor:
    """A Python number operand as a 0-d tensor in `like`'s dtype and device (as backward's
    saved numbers are), so the derivative expressions compute on tensors only."""
    dtype = like._data.dtype if like._data.dtype.kind == "f" else np.dtype(np.float32)
    return Tensor._wrap(like_host(np.asarray(value, dtype=dtype), like._data), None, None)


def _scalar_rule(rule: ScalarRule) -> JvpRule:
    """tangent_out = sum over inputs with a tangent of t_i * d out/d x_i (the vjp expression with
    the tangent in the gradient's place: for an elementwise op the two products are the same).
    The expressions are compiled on the rule's first use (import stays cheap)."""
    codes: list = []
    names = rule.inputs

    def push(cls: type, inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
        if not codes:
            codes.extend(
                compile(vjp_expression(rule, i, "g"), f"<jvp of {rule.name}>", "eval") for i in range(rule.arity)
            )
        scope = {**attrs, "out": out, "math": _TensorMath(), "where": _tensor_where}
        for name, value in zip(names, inputs):
            scope[name] = value if isinstance(value, Tensor) else _constant(value, out)
        total = None
        for code, tangent in zip(codes, tangents):
            if tangent is None:
                continue
            scope["g"] = tangent
            term = _as_gradient(eval(code, scope), tangent)
            total = term if total is None else total + term
        return total

    return push


def _multilinear(bias: int | None = None, channel_bias: bool = False) -> JvpRule:
    """One term per input with a tangent, linear in each input (matmul, conv), with an optional
    bias input at index `bias` that enters additively: along the last dim, or along dim 1 (a
    convolution's channels) with `channel_bias`."""

    def push(cls: type, inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
        total = None
        for i, tangent in enumerate(tangents):
            if tangent is None:
                continue
            if i == bias:
                term = tangent.reshape(-1, *[1] * (out.ndim - 2)) if channel_bias else tangent
            else:
                args = list(inputs)
                args[i] = tangent
                if bias is not None:
                    args[bias] = None
                term = cls.apply(*args, **attrs)
            total = term if total is None else total + term
        return total

    return push


def linear(cls: type, inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
    """The op applied to the tangents: zeros for a floating input without one and for a number
    operand (where's constant branch), other inputs (index tensors, conditions) as they are."""
    args = [_tangent_or_zero(x, t) for x, t in zip(inputs, tangents)]
    return cls.apply(*args, **attrs)


def _tangent_or_zero(x: Any, tangent: Any) -> Any:
    if tangent is not None:
        return tangent
    if isinstance(x, Tensor):
        return zeros_like(x) if x.is_floating_point() else x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return 0.0
    return x


def log_softmax(cls: type, inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
    """d log_softmax(x) = t - sum(softmax(x) * t) along dim."""
    (tangent,) = tangents
    return tangent - (out.exp() * tangent).sum(attrs["dim"], keepdim=True)


def softmax(cls: type, inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
    """d softmax(x) = out * (t - sum(out * t)) along dim."""
    (tangent,) = tangents
    return out * (tangent - (out * tangent).sum(attrs["dim"], keepdim=True))


def logcumsumexp(cls: type, inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
    """tangent_i = sum_{k <= i} exp(x_k - out_i) t_k, from the positive and the negative parts of t
    each summed in log space by the op itself (no exp overflows). Its double vjp is zero: the
    backward splits the output gradient by sign, which at the dummy cotangent 0 takes neither part."""
    (x,), (tangent,), dim = inputs, tangents, attrs["dim"]
    parts = []
    for mask in (tangent > 0, tangent < 0):
        logs = where(mask, where(mask, tangent.abs(), 1.0).log(), -math.inf)
        parts.append((cls.apply(x + logs, dim=dim) - out).exp())
    return parts[0] - parts[1]


def _attach(rule: JvpRule, *names: str) -> None:
    for name in names:
        attach(name, jvp=rule)


for row in SCALAR_RULES.values():
    _attach(_scalar_rule(row), row.name)
# Ops linear in their floating inputs taken together.
_attach(
    linear, "adaptive_avg_pool2d", "avg_pool2d", "avg_pool2d_backward", "cat", "clone", "cumsum", "diagonal",
    "expand", "flip", "gather", "getitem", "index_add_into_zeros", "index_put", "max_pool_gather",
    "max_pool_scatter", "permute", "reshape", "roll", "scatter", "scatter_add", "sum", "to_device", "to_dtype",
    "tril", "triu", "where", "keep_where",
)  # fmt: skip
# Ops linear in each input separately, with the index of a bias input added to the result (a
# convolution's along dim 1).
_attach(_multilinear(), "matmul", "conv_transpose2d", "conv2d_weight_grad")
_attach(_multilinear(bias=2), "linear")
_attach(_multilinear(bias=2, channel_bias=True), "conv2d")
_attach(log_softmax, "log_softmax")
_attach(softmax, "softmax")
_attach(logcumsumexp, "logcumsumexp")
