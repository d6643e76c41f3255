"""ONNX translators of numdiff's shape ops: reshape, expand and indexing, written so that they hold
for the dynamic axes of an export (numdiff.onnx._ops holds the table of every op)."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.compile.graph import ValueRef
from numdiff.onnx._builder import Builder, UnsupportedOperatorError

BIG = 2**62  # an ONNX Slice bound past any axis's end


def _other_trace(b: Builder, call: Any) -> tuple[Any, tuple]:
    """The same call in the trace made at other sizes of the dynamic axes, and its input's shape."""
    other = b.alt_graph.calls[b.position]
    return other, b.alt_graph.values[other.inputs[0]].shape


def reshape(b: Builder, call: Any, out: Any) -> str:
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


def expand(b: Builder, call: Any, out: Any) -> str:
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
        return (0 if k.start is None else int(k.start)), (BIG if k.stop is None else int(k.stop)), step
    return (-1 if k.start is None else int(k.start)), (-BIG if k.stop is None else int(k.stop)), step


def getitem(b: Builder, call: Any, out: Any) -> str:
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
            ends.append(index + 1 if index != -1 else BIG)
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


def axis_blend(b: Builder, call: Any, out: Any) -> str:
    """numdiff.ops._axis_blend's resize of x (B, D, R) to (B, O, R) by its (O, K) tables, ``out[b, o] = sum_k
    weight[o, k] * x[b, index[o, k]]`` (interpolate, reflect/replicate/circular pad): Gather the K source rows of every
    output row, scale them and sum over K. Holds for any B and R at run time (a dynamic batch axis)."""

    def table(item: Any, dtype: Any) -> str:  # a traced table is a graph value; an untraced one an array
        if isinstance(item, ValueRef):
            return b.cast(b.names[item.index], dtype)
        return b.constant(np.asarray(item), dtype)

    index, weight = table(call.attrs["index"], np.int64), table(call.attrs["weight"], out.dtype)
    taps = b.node("Gather", [b.names[call.inputs[0]], index], axis=1)  # (B, O, K, R)
    scaled = b.node("Mul", [taps, b.node("Unsqueeze", [weight, b.ints([0, 3])])])  # weight as (1, O, K, 1)
    return b.reduce("ReduceSum", scaled, [2], False)
