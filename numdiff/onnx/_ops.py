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

_BIG = 2**62


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


def _other_trace(b: Builder, call: Any) -> tuple[Any, tuple]:
    """The same call in the trace made at other sizes of the dynamic axes, and its input's shape."""
    other = b.alt_graph.calls[b.position]
    return other, b.alt_graph.values[other.inputs[0]].shape


def _reshape(b: Builder, call: Any, out: Any) -> str:
    shape = list(call.attrs["shape"])
    if b.alt_graph is not None:
        # Dims equal in both traces are constants; a dim that follows the input's dim at the same
        # position copies it (0); one dim left that moved with the dynamic axes is inferred (-1).
        other, other_source = _other_trace(b, call)
        source = b.shapes[b.names[call.inputs[0]]]
        moved = []
        for i, (n, m) in enumerate(zip(shape, other.attrs["shape"])):
            if n == m:
                continue
            if i < len(source) and n == source[i] and m == other_source[i]:
                shape[i] = 0
            else:
                moved.append(i)
        if len(moved) > 1:
            raise UnsupportedOperatorError(
                f"numdiff.onnx: a reshape to {tuple(call.attrs['shape'])} has {len(moved)} dims that follow the "
                "dynamic axes in different ways; export with fixed sizes (no dynamic_axes) or reshape with -1"
            )
        if moved:
            shape[moved[0]] = -1
    return b.node("Reshape", [b.names[call.inputs[0]], b.ints(shape)])


def _expand(b: Builder, call: Any, out: Any) -> str:
    source = b.shapes[b.names[call.inputs[0]]]
    shape = list(call.attrs["shape"])
    lead = len(shape) - len(source)
    # Where the input already has the size, 1 broadcasts to it: right for any size at run time.
    shape = [1 if i >= lead and n == source[i - lead] else n for i, n in enumerate(shape)]
    if b.alt_graph is not None:
        other, _ = _other_trace(b, call)
        if any(n != 1 and n != m for n, m in zip(shape, other.attrs["shape"])):
            raise UnsupportedOperatorError(f"numdiff.onnx: expand to {tuple(call.attrs['shape'])} depends on a dynamic axis")
    return b.node("Expand", [b.names[call.inputs[0]], b.ints(shape)])


def _slice_bounds(k: slice) -> tuple[int, int, int]:
    """Python's slice as ONNX Slice bounds that hold for any size of the axis (ONNX clamps as Python does)."""
    step = 1 if k.step is None else int(k.step)
    if step > 0:
        return (0 if k.start is None else int(k.start)), (_BIG if k.stop is None else int(k.stop)), step
    return (-1 if k.start is None else int(k.start)), (-_BIG if k.stop is None else int(k.stop)), step


def _getitem(b: Builder, call: Any, out: Any) -> str:
    x = b.names[call.inputs[0]]
    shape = b.shapes[x]
    key = call.attrs["key"]
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        at = key.index(Ellipsis)
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - used) + key[at + 1 :]
    starts, ends, axes, steps, squeeze, unsqueeze, gathers = [], [], [], [], [], [], []
    axis = position = 0
    for k in key:
        if k is None:
            unsqueeze.append(position)
            position += 1
        elif isinstance(k, slice):
            if k != slice(None):
                start, stop, step = _slice_bounds(k)
                starts.append(start)
                ends.append(stop)
                axes.append(axis)
                steps.append(step)
            axis += 1
            position += 1
        elif isinstance(k, (int, np.integer)):
            index = int(k)  # a negative index counts from the end, at any size
            starts.append(index)
            ends.append(index + 1 if index != -1 else _BIG)
            axes.append(axis)
            steps.append(1)
            squeeze.append(axis)
            axis += 1
        elif isinstance(k, ValueRef):
            gathers.append((axis, position, k.index))
            axis += 1
            position += 1
        else:
            raise UnsupportedOperatorError(f"numdiff.onnx: indexing with {type(k).__name__} has no ONNX form here")
    if len(gathers) > 1 or (gathers and (squeeze or unsqueeze)):
        raise UnsupportedOperatorError(
            "numdiff.onnx: indexing with several index tensors, or an index tensor mixed with ints or None, "
            f"has no ONNX form here (key {key!r})"
        )
    y = x
    if axes:
        y = b.node("Slice", [y, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)])
    if squeeze:
        y = b.node("Squeeze", [y, b.ints(squeeze)])
    if unsqueeze:
        y = b.node("Unsqueeze", [y, b.ints(unsqueeze)])
    for axis, _, index in gathers:
        indices = b.names[index]
        if b.dtypes[indices].kind == "b":
            raise UnsupportedOperatorError("numdiff.onnx: boolean-mask indexing has a data-dependent shape")
        y = b.node("Gather", [y, b.cast(indices, np.int64)], axis=axis)
    return y if y != x else b.node("Identity", [x])


def _conv2d(b: Builder, call: Any, out: Any) -> str:
    a = call.attrs
    top, bottom, left, right = a["padding"]
    inputs = [b.operand(i, out.dtype) for i in call.inputs[:2]]
    bias = call.inputs[2]
    if not (isinstance(bias, tuple) and bias[1] is None):
        inputs.append(b.operand(bias, out.dtype))
    return b.node("Conv", inputs, strides=list(a["stride"]), pads=[top, left, bottom, right],
                  dilations=list(a["dilation"]), group=a["groups"])


def _conv_transpose2d(b: Builder, call: Any, out: Any) -> str:
    a = call.attrs
    g, w = (b.operand(i, out.dtype) for i in call.inputs)
    top, bottom, left, right = a["padding"]
    in_h, in_w = b.shapes[b.names[call.inputs[0]]][2:]
    kh, kw = b.shapes[b.names[call.inputs[1]]][2:]
    pads_end, output_padding = [], []
    for n, k, s, d, begin, size in zip((in_h, in_w), (kh, kw), a["stride"], a["dilation"], (top, left), a["size"]):
        full = (n - 1) * s + (k - 1) * d + 1 - begin
        pads_end.append(max(full - size, 0))
        output_padding.append(max(size - full, 0))
    return b.node("ConvTranspose", [g, w], strides=list(a["stride"]), pads=[top, left, *pads_end],
                  dilations=list(a["dilation"]), group=a["groups"], output_padding=output_padding)


def _max_pool2d(b: Builder, call: Any, out: Any) -> str:
    a = call.attrs
    ph, pw = a["padding"]
    return b.node("MaxPool", [b.names[call.inputs[0]]], kernel_shape=list(a["kernel_size"]), strides=list(a["stride"]),
                  pads=[ph, pw, ph, pw], dilations=list(a["dilation"]), ceil_mode=int(a["ceil_mode"]))


def _avg_pool2d(b: Builder, call: Any, out: Any) -> str:
    a = call.attrs
    if a["divisor_override"] is not None:
        raise UnsupportedOperatorError("numdiff.onnx: avg_pool2d with divisor_override has no ONNX form")
    ph, pw = a["padding"]
    return b.node("AveragePool", [b.names[call.inputs[0]]], kernel_shape=list(a["kernel_size"]),
                  strides=list(a["stride"]), pads=[ph, pw, ph, pw], ceil_mode=int(a["ceil_mode"]),
                  count_include_pad=int(a["count_include_pad"]))


def _adaptive(global_op: str, pool_op: str):
    def translate(b: Builder, call: Any, out: Any) -> str:
        x = b.names[call.inputs[0]]
        size = b.shapes[x][2:]
        target = call.attrs["output_size"]
        if tuple(target) == (1, 1):
            return b.node(global_op, [x])
        if all(n % t == 0 for n, t in zip(size, target)) and b.alt_graph is None:
            kernel = [n // t for n, t in zip(size, target)]
            return b.node(pool_op, [x], kernel_shape=kernel, strides=kernel)
        raise UnsupportedOperatorError(
            f"numdiff.onnx: adaptive pooling of {tuple(size)} to {tuple(target)} has no fixed-window ONNX form"
        )

    return translate


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


def _group_moments(b: Builder, x: str, dtype: Any, keepdims: bool) -> tuple[str, str, str]:
    """(mean, x - mean, biased variance) over axes (1, 3, 4) of a (B, N, G, K, S) value."""
    mean = b.reduce("ReduceMean", x, [1, 3, 4], True)
    centred = b.node("Sub", [x, mean])
    var = b.reduce("ReduceMean", b.node("Mul", [centred, centred]), [1, 3, 4], keepdims)
    return (mean if keepdims else b.reduce("ReduceMean", x, [1, 3, 4], False)), centred, var


def _is_none(item: Any) -> bool:
    return isinstance(item, tuple) and item[1] is None


def _grouped_norm(b: Builder, call: Any, out: Any) -> str:
    """numdiff.ops.norm's grouped_norm: the input reshaped to its (B, N, G, K, S) view, normalised per
    (b, g) with ReduceMean and Sqrt, scaled and shifted per (g, k), and reshaped back to its own
    shape. A view size that follows a dynamic axis (it differs in the other trace) is written -1."""
    view = call.attrs["view"]
    if b.alt_graph is not None:
        other = b.alt_graph.calls[b.position].attrs["view"]
        view = [-1 if mine != theirs else mine for mine, theirs in zip(view, other)]
    x = b.operand(call.inputs[0], out.dtype)
    _, centred, var = _group_moments(b, b.node("Reshape", [x, b.ints(view)]), out.dtype, True)
    y = b.node("Div", [centred, b.node("Sqrt", [b.node("Add", [var, b.constant(call.attrs["eps"], out.dtype)])])])
    per_channel = b.ints([1, 1, view[2], view[3], 1])
    for item, op in zip(call.inputs[1:], ("Mul", "Add")):
        if not _is_none(item):
            y = b.node(op, [y, b.node("Reshape", [b.operand(item, out.dtype), per_channel])])
    return b.node("Reshape", [y, b.node("Shape", [x])])


def _grouped_moments(b: Builder, call: Any, out: Any) -> str:
    """numdiff.ops.norm's grouped_moments: [mean, biased variance] of each (b, g), shape (2, B, G)."""
    x = b.operand(call.inputs[0], out.dtype)
    mean, _, var = _group_moments(b, x, out.dtype, False)
    one = b.ints([1, out.shape[1], out.shape[2]])
    return b.node("Concat", [b.node("Reshape", [mean, one]), b.node("Reshape", [var, one])], axis=0)


TRANSLATORS: dict[str, Any] = {
    **{name: _arith(op) for name, op in {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
                                          "maximum": "Max", "minimum": "Min"}.items()},
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
    "grouped_norm": _grouped_norm,
    "grouped_moments": _grouped_moments,
    "matmul": _arith("MatMul"),
    "conv2d": _conv2d,
    "conv_transpose2d": _conv_transpose2d,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "adaptive_avg_pool2d": _adaptive("GlobalAveragePool", "AveragePool"),
    "adaptive_max_pool2d": _adaptive("GlobalMaxPool", "MaxPool"),
    "reshape": _reshape,
    "expand": _expand,
    "getitem": _getitem,
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
                                                     b.constant(_axis(call.attrs["dim"], _rank(b, call)), np.int64)]),
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
