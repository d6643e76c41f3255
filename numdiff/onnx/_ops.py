"""How each traced numdiff op is written in ONNX: one translator per op name.

A translator gets the `Builder`, the traced `OpCall` and the output value (its dtype and shape as
traced) and returns the ONNX name holding the result. Elementwise ops compute in the output's
dtype, as numdiff did: operands are cast to it and Python numbers become constants of it.
Ops missing from TRANSLATORS raise UnsupportedOperatorError naming the op.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff.compile.graph import ValueRef
from numdiff.onnx._builder import Builder, UnsupportedOperatorError, onnx_dtype
from numdiff.onnx._ops_layers import (
    adaptive_pool,
    avg_pool2d,
    conv2d,
    conv_transpose2d,
    grouped_moments,
    grouped_norm,
    max_pool2d,
)
from numdiff.onnx._ops_shape import BIG as _BIG
from numdiff.onnx._ops_shape import axis_blend, expand, getitem, reshape


def _arith(op: str):
    def translate(b: Builder, call: Any, out: Any) -> str:
        return b.node(op, [b.operand(i, out.dtype) for i in call.inputs])

    return translate


def _unary(op: str, **fixed: Any):
    def translate(b: Builder, call: Any, out: Any) -> str:
        return b.node(op, [b.operand(call.inputs[0], out.dtype)], **fixed)

    return translate


def _composite(build):
    """An op written with several ONNX nodes: ``build(b, x, c)``, `c` making constants of x's dtype."""

    def translate(b: Builder, call: Any, out: Any) -> str:
        x = b.operand(call.inputs[0], out.dtype)
        return build(b, x, lambda v: b.constant(v, out.dtype), **call.attrs)

    return translate


def _compare(op: str, negate: bool = False):
    def translate(b: Builder, call: Any, out: Any) -> str:
        tensors = [b.dtypes[b.names[i]] for i in call.inputs if not isinstance(i, tuple)]
        literal_float = any(isinstance(i, tuple) and isinstance(i[1], float) for i in call.inputs)
        dtype = np.result_type(*tensors) if tensors else np.float32
        if literal_float and dtype.kind in "biu":
            dtype = np.dtype(np.float32)
        result = b.node(op, [b.operand(i, dtype) for i in call.inputs])
        return b.node("Not", [result]) if negate else result

    return translate


def _gelu(b, x, c):
    return b.node("Mul", [b.node("Mul", [x, c(0.5)]), b.node("Add", [c(1.0), b.node("Erf", [b.node("Mul", [x, c(1 / math.sqrt(2))])])])])


def _gelu_tanh(b, x, c):
    inner = b.node("Mul", [c(math.sqrt(2 / math.pi)), b.node("Add", [x, b.node("Mul", [c(0.044715), b.node("Mul", [x, b.node("Mul", [x, x])])])])])
    return b.node("Mul", [b.node("Mul", [x, c(0.5)]), b.node("Add", [c(1.0), b.node("Tanh", [inner])])])


def _softplus(b, x, c, beta=1.0, threshold=20.0):
    scaled = b.node("Mul", [x, c(beta)])
    smooth = b.node("Div", [b.node("Softplus", [scaled]), c(beta)])
    return b.node("Where", [b.node("Greater", [scaled, c(threshold)]), x, smooth])


def _trunc(b, x, c):
    return b.node("Mul", [b.node("Sign", [x]), b.node("Floor", [b.node("Abs", [x])])])


_COMPOSITES = {
    "rsqrt": lambda b, x, c: b.node("Reciprocal", [b.node("Sqrt", [x])]),
    "square": lambda b, x, c: b.node("Mul", [x, x]),
    "exp2": lambda b, x, c: b.node("Pow", [c(2.0), x]),
    "expm1": lambda b, x, c: b.node("Sub", [b.node("Exp", [x]), c(1.0)]),
    "log1p": lambda b, x, c: b.node("Log", [b.node("Add", [x, c(1.0)])]),
    "log2": lambda b, x, c: b.node("Div", [b.node("Log", [x]), c(math.log(2.0))]),
    "log10": lambda b, x, c: b.node("Div", [b.node("Log", [x]), c(math.log(10.0))]),
    "erfc": lambda b, x, c: b.node("Sub", [c(1.0), b.node("Erf", [x])]),
    "silu": lambda b, x, c: b.node("Mul", [x, b.node("Sigmoid", [x])]),
    "mish": lambda b, x, c: b.node("Mul", [x, b.node("Tanh", [b.node("Softplus", [x])])]),
    "logsigmoid": lambda b, x, c: b.node("Neg", [b.node("Softplus", [b.node("Neg", [x])])]),
    "tanhshrink": lambda b, x, c: b.node("Sub", [x, b.node("Tanh", [x])]),
    "trunc": _trunc,
    "frac": lambda b, x, c: b.node("Sub", [x, _trunc(b, x, c)]),
    "logit": lambda b, x, c: b.node("Log", [b.node("Div", [x, b.node("Sub", [c(1.0), x])])]),
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "softplus": _softplus,
    "hardtanh": lambda b, x, c, min_val=-1.0, max_val=1.0: b.node("Clip", [x, c(min_val), c(max_val)]),
    "threshold": lambda b, x, c, threshold, value: b.node("Where", [b.node("Greater", [x, c(threshold)]), x, c(value)]),
}


def _remainder(b: Builder, call: Any, out: Any) -> str:
    x, y = (b.operand(i, out.dtype) for i in call.inputs)
    if out.dtype.kind in "iu":
        return b.node("Mod", [x, y], fmod=0)
    return b.node("Sub", [x, b.node("Mul", [b.node("Floor", [b.node("Div", [x, y])]), y])])


def _axis(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def _rank(b: Builder, call: Any) -> int:
    return len(b.shapes[b.names[call.inputs[0]]])


def _reduction(op: str):
    def translate(b: Builder, call: Any, out: Any) -> str:
        x = b.operand(call.inputs[0], b.dtypes[b.names[call.inputs[0]]])
        dims = call.attrs.get("dims")
        rank = _rank(b, call)
        axes = list(range(rank)) if dims in (None, ()) else [_axis(d, rank) for d in dims]
        return b.cast(b.reduce(op, x, axes, call.attrs.get("keepdim", False)), out.dtype)

    return translate


def _linear(b: Builder, call: Any, out: Any) -> str:
    x, w = (b.operand(i, out.dtype) for i in call.inputs[:2])
    bias = call.inputs[2]
    has_bias = not (isinstance(bias, tuple) and bias[1] is None)
    if _rank(b, call) == 2:
        inputs = [x, w] + ([b.operand(bias, out.dtype)] if has_bias else [])
        return b.node("Gemm", inputs, transB=1)
    y = b.node("MatMul", [x, b.node("Transpose", [w], perm=[1, 0])])
    return b.node("Add", [y, b.operand(bias, out.dtype)]) if has_bias else y


def _clamp(b: Builder, call: Any, out: Any) -> str:
    y = b.operand(call.inputs[0], out.dtype)
    for name, op in (("min", "Max"), ("max", "Min")):
        bound = call.attrs.get(name)
        if bound is None:
            continue
        other = b.cast(b.names[bound.index], out.dtype) if isinstance(bound, ValueRef) else b.constant(bound, out.dtype)
        y = b.node(op, [y, other])
    return y


def _where(b: Builder, call: Any, out: Any) -> str:
    condition = b.operand(call.inputs[0], np.bool_)
    return b.node("Where", [condition] + [b.operand(i, out.dtype) for i in call.inputs[1:]])


def _shrink(bias_is_lambd: bool):
    def translate(b: Builder, call: Any, out: Any) -> str:
        lambd = float(call.attrs.get("lambd", 0.5))
        return b.node("Shrink", [b.names[call.inputs[0]]], lambd=lambd, bias=lambd if bias_is_lambd else 0.0)

    return translate


def _attr_unary(op: str, **renames: str):
    def translate(b: Builder, call: Any, out: Any) -> str:
        attrs = {onnx_name: float(call.attrs[ours]) for onnx_name, ours in renames.items() if ours in call.attrs}
        return b.node(op, [b.operand(call.inputs[0], out.dtype)], **attrs)

    return translate


def _dim_op(op: str):
    def translate(b: Builder, call: Any, out: Any) -> str:
        return b.node(op, [b.names[call.inputs[0]]], axis=_axis(call.attrs["dim"], _rank(b, call)))

    return translate


def _arg(op: str):
    def translate(b: Builder, call: Any, out: Any) -> str:
        x = b.names[call.inputs[0]]
        dim = call.inputs[1][1] if len(call.inputs) > 1 else call.attrs.get("dim")
        keep = int(bool(call.attrs.get("keepdim", False)))
        if dim is None:
            x, dim = b.node("Reshape", [x, b.ints([-1])]), 0
        return b.node(op, [x], axis=_axis(dim, len(b.shapes[b.names[call.inputs[0]]])), keepdims=keep)

    return translate


def _logical_reduction(op: str):
    def translate(b: Builder, call: Any, out: Any) -> str:
        x = b.cast(b.operand(call.inputs[0], np.bool_), np.int32)
        dim = call.inputs[1][1] if len(call.inputs) > 1 else call.attrs.get("dim")
        rank = len(b.shapes[b.names[call.inputs[0]]])
        dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
        axes = list(range(rank)) if dims is None else [_axis(d, rank) for d in dims]
        return b.cast(b.reduce(op, x, axes, call.attrs.get("keepdim", False)), np.bool_)

    return translate


TRANSLATORS: dict[str, Any] = {
    **{name: _arith(op) for name, op in {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
                                          "maximum": "Max", "minimum": "Min", "prelu": "PRelu"}.items()},
    **{name: _unary(name.capitalize()) for name in ("abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil",
                                                    "cos", "cosh", "erf", "exp", "floor", "log", "neg", "reciprocal",
                                                    "relu", "round", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan",
                                                    "tanh", "softsign")},
    "hardswish": _unary("HardSwish"),
    "hardsigmoid": _unary("HardSigmoid", alpha=1 / 6, beta=0.5),
    "selu": _unary("Selu", alpha=1.6732632423543772, gamma=1.0507009873554805),
    "leaky_relu": _attr_unary("LeakyRelu", alpha="negative_slope"),
    "elu": _attr_unary("Elu", alpha="alpha"),
    "celu": _attr_unary("Celu", alpha="alpha"),
    "hardshrink": _shrink(False),
    "softshrink": _shrink(True),
    **{name: _composite(build) for name, build in _COMPOSITES.items()},
    "remainder": _remainder,
    "fmod": lambda b, call, out: b.node("Mod", [b.operand(i, out.dtype) for i in call.inputs], fmod=1),
    "linear": _linear,
    "grouped_norm": grouped_norm,
    "grouped_moments": grouped_moments,
    "matmul": _arith("MatMul"),
    "conv2d": conv2d,
    "conv_transpose2d": conv_transpose2d,
    "max_pool2d": max_pool2d,
    "avg_pool2d": avg_pool2d,
    "adaptive_avg_pool2d": adaptive_pool("GlobalAveragePool", "AveragePool"),
    "adaptive_max_pool2d": adaptive_pool("GlobalMaxPool", "MaxPool"),
    "reshape": reshape,
    "expand": expand,
    "getitem": getitem,
    "axis_blend": axis_blend,
    "permute": lambda b, call, out: b.node("Transpose", [b.names[call.inputs[0]]], perm=list(call.attrs["dims"])),
    "cat": lambda b, call, out: b.node("Concat", [b.operand(i, out.dtype) for i in call.inputs],
                                       axis=_axis(call.attrs["dim"], len(out.shape))),
    "clone": lambda b, call, out: b.node("Identity", [b.names[call.inputs[0]]]),
    "to_device": lambda b, call, out: b.node("Identity", [b.names[call.inputs[0]]]),
    "to_dtype": lambda b, call, out: b.node("Cast", [b.names[call.inputs[0]]], to=onnx_dtype(out.dtype)),
    "where": _where,
    "clamp": _clamp,
    "sum": _reduction("ReduceSum"),
    "amax": _reduction("ReduceMax"),
    "amin": _reduction("ReduceMin"),
    "prod": _reduction("ReduceProd"),
    "log_softmax": _dim_op("LogSoftmax"),
    "softmax": _dim_op("Softmax"),
    "cumsum": lambda b, call, out: b.node("CumSum", [b.operand(call.inputs[0], out.dtype),
                                                     b.constant(_axis(call.attrs["dim"], _rank(b, call)), np.int64)],
                                          reverse=int(call.attrs.get("reverse", False))),
    "flip": lambda b, call, out: b.node("Slice", [b.names[call.inputs[0]], b.ints([-1] * len(call.attrs["dims"])),
                                                  b.ints([-_BIG] * len(call.attrs["dims"])),
                                                  b.ints([_axis(d, _rank(b, call)) for d in call.attrs["dims"]]),
                                                  b.ints([-1] * len(call.attrs["dims"]))]),
    "tril": lambda b, call, out: b.node("Trilu", [b.names[call.inputs[0]], b.constant(call.attrs["diagonal"], np.int64)], upper=0),
    "triu": lambda b, call, out: b.node("Trilu", [b.names[call.inputs[0]], b.constant(call.attrs["diagonal"], np.int64)], upper=1),
    "gather": lambda b, call, out: b.node("GatherElements", [b.names[call.inputs[0]], b.cast(b.names[call.inputs[1]], np.int64)],
                                          axis=_axis(call.attrs["dim"], _rank(b, call))),
    # Host functions: comparisons and arg-reductions.
    "eq": _compare("Equal"), "ne": _compare("Equal", negate=True), "lt": _compare("Less"),
    "le": _compare("LessOrEqual"), "gt": _compare("Greater"), "ge": _compare("GreaterOrEqual"),
    "logical_not": lambda b, call, out: b.node("Not", [b.operand(call.inputs[0], np.bool_)]),
    "logical_and": lambda b, call, out: b.node("And", [b.operand(i, np.bool_) for i in call.inputs]),
    "logical_or": lambda b, call, out: b.node("Or", [b.operand(i, np.bool_) for i in call.inputs]),
    "logical_xor": lambda b, call, out: b.node("Xor", [b.operand(i, np.bool_) for i in call.inputs]),
    "isnan": lambda b, call, out: b.node("IsNaN", [b.names[call.inputs[0]]]),
    "all": _logical_reduction("ReduceMin"),
    "any": _logical_reduction("ReduceMax"),
    "argmax": _arg("ArgMax"),
    "argmin": _arg("ArgMin"),
}  # fmt: skip


def translate(b: Builder, call: Any, out: Any) -> str:
    """The ONNX name holding `call`'s result, cast to the traced dtype."""
    translator = TRANSLATORS.get(call.op_name)
    if translator is None:
        raise UnsupportedOperatorError(
            f"numdiff.onnx: the op {call.op_name!r} has no ONNX form in numdiff's exporter "
            f"(it exports {len(TRANSLATORS)} ops; see numdiff.onnx.supported_ops())"
        )
    return b.cast(translator(b, call, out), out.dtype)


def supported_ops() -> list[str]:
    """The numdiff op names the exporter writes."""
    return sorted(TRANSLATORS)
