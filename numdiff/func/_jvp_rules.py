"""Forward-mode rules: the tangent of an op's output from its inputs' tangents, keyed by op name.

A rule is ``rule(inputs, attrs, tangents, out) -> tangent`` where `tangents` has one entry per
input (None for an input without a tangent, and for every non-tensor input) and `out` is the op's
result. It computes with numdiff ops, so the tangent is itself recorded on the tape (grad of jvp)
and pushed forward again by an outer jvp level (jacfwd of jacfwd).

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
from numdiff.ops import OPS
from numdiff.ops.elementwise import _as_gradient, _tensor_where, _TensorMath
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

JvpRule = Callable[[tuple, dict, list, Any], Any]


def _constant(value: float, like: Tensor) -> Tensor:
    """A Python number operand as a 0-d tensor in `like`'s dtype and device (as backward's
    saved numbers are), so the derivative expressions compute on tensors only."""
    dtype = like._data.dtype if like._data.dtype.kind == "f" else np.dtype(np.float32)
    return Tensor._wrap(like_host(np.asarray(value, dtype=dtype), like._data), None, None)


def _scalar_rule(rule: ScalarRule) -> JvpRule:
    """tangent_out = sum over inputs with a tangent of t_i * d out/d x_i (the vjp expression with
    the tangent in the gradient's place: for an elementwise op the two products are the same)."""
    codes = [compile(vjp_expression(rule, i, "g"), f"<jvp of {rule.name}>", "eval") for i in range(rule.arity)]
    names = rule.inputs

    def push(inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
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


def _multilinear(bias: int | None, channel_bias: bool = False) -> Callable[[type], JvpRule]:
    """One term per input with a tangent, linear in each input (matmul, conv), with an optional
    bias input at index `bias` that enters additively: along the last dim, or along dim 1 (a
    convolution's channels) with `channel_bias`."""

    def for_op(op: type) -> JvpRule:
        def push(inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
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
                    term = op.apply(*args, **attrs)
                total = term if total is None else total + term
            return total

        return push

    return for_op


def _for_linear(op: type) -> JvpRule:
    """The op applied to the tangents: zeros for a floating input without one and for a number
    operand (where's constant branch), other inputs (index tensors, conditions) as they are."""

    def push(inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
        args = [_tangent_or_zero(x, t) for x, t in zip(inputs, tangents)]
        return op.apply(*args, **attrs)

    return push


def _tangent_or_zero(x: Any, tangent: Any) -> Any:
    if tangent is not None:
        return tangent
    if isinstance(x, Tensor):
        return zeros_like(x) if x.is_floating_point() else x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return 0.0
    return x


def _log_softmax(inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
    """d log_softmax(x) = t - sum(softmax(x) * t) along dim."""
    (tangent,) = tangents
    return tangent - (out.exp() * tangent).sum(attrs["dim"], keepdim=True)


def _logcumsumexp(inputs: tuple, attrs: dict, tangents: list, out: Any) -> Any:
    """tangent_i = sum_{k <= i} exp(x_k - out_i) t_k, from the positive and the negative parts of t
    each summed in log space by the op itself (no exp overflows). Its double vjp is zero: the
    backward splits the output gradient by sign, which at the dummy cotangent 0 takes neither part."""
    (x,), (tangent,), dim = inputs, tangents, attrs["dim"]
    op = OPS["logcumsumexp"]
    parts = []
    for mask in (tangent > 0, tangent < 0):
        logs = where(mask, where(mask, tangent.abs(), 1.0).log(), -math.inf)
        parts.append((op.apply(x + logs, dim=dim) - out).exp())
    return parts[0] - parts[1]


# Ops linear in their floating inputs taken together.
LINEAR = (
    "adaptive_avg_pool2d", "avg_pool2d", "avg_pool2d_backward", "cat", "clone", "cumsum", "diagonal",
    "expand", "flip", "gather", "getitem", "index_add_into_zeros", "index_put", "max_pool_gather",
    "max_pool_scatter", "permute", "reshape", "scatter", "scatter_add", "sum", "to_device", "to_dtype",
    "tril", "triu", "where",
)  # fmt: skip
# Ops linear in each input separately: the index of the bias input added to the result, and
# whether it is a per-channel bias (dim 1).
MULTILINEAR = {
    "matmul": (None, False),
    "conv_transpose2d": (None, False),
    "conv2d_weight_grad": (None, False),
    "linear": (2, False),
    "conv2d": (2, True),
}


SPECIAL = {"log_softmax": _log_softmax, "logcumsumexp": _logcumsumexp}
RULED = frozenset(SCALAR_RULES) | frozenset(LINEAR) | frozenset(MULTILINEAR) | frozenset(SPECIAL)
_MADE: dict[str, JvpRule] = {}


def rule_for(name: str | None) -> JvpRule | None:
    """The forward-mode rule of the registered op `name`, or None (made on first use, from the op
    registered then)."""
    if name not in RULED:
        return None
    rule = _MADE.get(name)
    if rule is None:
        if name in SCALAR_RULES:
            rule = _scalar_rule(SCALAR_RULES[name])
        elif name in MULTILINEAR:
            rule = _multilinear(*MULTILINEAR[name])(OPS[name])
        elif name in SPECIAL:
            rule = SPECIAL[name]
        else:
            rule = _for_linear(OPS[name])
        _MADE[name] = rule
    return rule
