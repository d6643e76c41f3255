"""ONNX translators of numdiff's layer ops: convolutions, pooling, and the grouped norms behind
BatchNorm, LayerNorm, GroupNorm and InstanceNorm (numdiff.onnx._ops holds the table of every op)."""

from __future__ import annotations

from typing import Any

from numdiff.onnx._builder import Builder, UnsupportedOperatorError


def conv2d(b: Builder, call: Any, out: Any) -> str:
    a = call.attrs
    top, bottom, left, right = a["padding"]
    inputs = [b.operand(i, out.dtype) for i in call.inputs[:2]]
    bias = call.inputs[2]
    if not (isinstance(bias, tuple) and bias[1] is None):
        inputs.append(b.operand(bias, out.dtype))
    return b.node("Conv", inputs, strides=list(a["stride"]), pads=[top, left, bottom, right],
                  dilations=list(a["dilation"]), group=a["groups"])


def conv_transpose2d(b: Builder, call: Any, out: Any) -> str:
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


def max_pool2d(b: Builder, call: Any, out: Any) -> str:
    a = call.attrs
    ph, pw = a["padding"]
    return b.node("MaxPool", [b.names[call.inputs[0]]], kernel_shape=list(a["kernel_size"]), strides=list(a["stride"]),
                  pads=[ph, pw, ph, pw], dilations=list(a["dilation"]), ceil_mode=int(a["ceil_mode"]))


def avg_pool2d(b: Builder, call: Any, out: Any) -> str:
    a = call.attrs
    if a["divisor_override"] is not None:
        raise UnsupportedOperatorError("numdiff.onnx: avg_pool2d with divisor_override has no ONNX form")
    ph, pw = a["padding"]
    return b.node("AveragePool", [b.names[call.inputs[0]]], kernel_shape=list(a["kernel_size"]),
                  strides=list(a["stride"]), pads=[ph, pw, ph, pw], ceil_mode=int(a["ceil_mode"]),
                  count_include_pad=int(a["count_include_pad"]))


def adaptive_pool(global_op: str, pool_op: str):
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


def _group_moments(b: Builder, x: str, dtype: Any, keepdims: bool) -> tuple[str, str, str]:
    """(mean, x - mean, biased variance) over axes (1, 3, 4) of a (B, N, G, K, S) value."""
    mean = b.reduce("ReduceMean", x, [1, 3, 4], True)
    centred = b.node("Sub", [x, mean])
    var = b.reduce("ReduceMean", b.node("Mul", [centred, centred]), [1, 3, 4], keepdims)
    return (mean if keepdims else b.reduce("ReduceMean", x, [1, 3, 4], False)), centred, var


def _is_none(item: Any) -> bool:
    return isinstance(item, tuple) and item[1] is None


def grouped_norm(b: Builder, call: Any, out: Any) -> str:
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


def grouped_moments(b: Builder, call: Any, out: Any) -> str:
    """numdiff.ops.norm's grouped_moments: [mean, biased variance] of each (b, g), shape (2, B, G)."""
    x = b.operand(call.inputs[0], out.dtype)
    mean, _, var = _group_moments(b, x, out.dtype, False)
    one = b.ints([1, out.shape[1], out.shape[2]])
    return b.node("Concat", [b.node("Reshape", [mean, one]), b.node("Reshape", [var, one])], axis=0)
