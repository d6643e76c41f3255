"""The ONNX graph under construction: names, constants, casts and the nodes emitted so far.

Translators (numdiff.onnx._ops) emit nodes through a `Builder`; it hands out unique names, turns
Python numbers and baked arrays into initializers of the right dtype, and knows each graph
value's dtype and shape from the trace, so a translator can cast operands to the dtype numdiff
computed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from numdiff import _dtype

ONNX_DTYPE = {
    np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int16): TensorProto.INT16,
    np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL, _dtype.BFLOAT16_STORAGE: TensorProto.BFLOAT16,
}  # fmt: skip


class UnsupportedOperatorError(RuntimeError):
    """The traced model holds an op that numdiff.onnx cannot write as ONNX."""


def onnx_dtype(dtype: Any) -> int:
    dtype = np.dtype(dtype)
    if dtype not in ONNX_DTYPE:
        raise UnsupportedOperatorError(f"numdiff.onnx: dtype {dtype} has no ONNX form")
    return ONNX_DTYPE[dtype]


def tensor_proto(name: str, array: np.ndarray) -> TensorProto:
    """An initializer holding `array` (bfloat16 as its raw 2-byte patterns)."""
    if array.dtype == _dtype.BFLOAT16_STORAGE:
        return helper.make_tensor(name, TensorProto.BFLOAT16, array.shape, np.ascontiguousarray(array).tobytes(), raw=True)
    return numpy_helper.from_array(np.ascontiguousarray(array), name)


class Builder:
    """Collects nodes and initializers; `value_name`, `dtype_of` and `shape_of` read the trace."""

    def __init__(self, opset: int, alt_graph: Any = None) -> None:
        self.opset = opset
        # With dynamic axes: the same forward traced at other sizes of those axes, so translators can
        # tell the shapes baked into a call that follow them (alt_graph.calls[position] is this call).
        self.alt_graph = alt_graph
        self.position = 0
        self.nodes: list = []
        self.initializers: list = []
        self.names: dict[int, str] = {}  # graph value index -> ONNX name
        self.dtypes: dict[str, np.dtype] = {}
        self.shapes: dict[str, tuple] = {}
        self._count = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def bind(self, index: int, name: str, dtype: Any, shape: tuple) -> None:
        self.names[index] = name
        self.dtypes[name] = np.dtype(dtype)
        self.shapes[name] = tuple(shape)

    def node(self, op: str, inputs: list[str], outputs: int | list[str] = 1, **attrs: Any) -> Any:
        """Emit ``op``; returns its output name (or the list of names when `outputs` lists several)."""
        names = [self.fresh(op.lower()) for _ in range(outputs)] if isinstance(outputs, int) else outputs
        self.nodes.append(helper.make_node(op, inputs, names, name=self.fresh(f"n_{op}"), **attrs))
        return names[0] if len(names) == 1 else names

    def constant(self, value: Any, dtype: Any) -> str:
        array = np.asarray(value, dtype=np.dtype(dtype))
        name = self.fresh("const")
        self.initializers.append(tensor_proto(name, array))
        self.dtypes[name] = array.dtype
        self.shapes[name] = array.shape
        return name

    def ints(self, values: Any) -> str:
        return self.constant(np.asarray(list(values), dtype=np.int64), np.int64)

    def cast(self, name: str, dtype: Any) -> str:
        """`name` as `dtype`: itself when it already is, else a Cast node."""
        dtype = np.dtype(dtype)
        if self.dtypes.get(name) == dtype:
            return name
        out = self.node("Cast", [name], to=onnx_dtype(dtype))
        self.dtypes[out] = dtype
        return out

    def operand(self, item: Any, dtype: Any) -> str:
        """A call input (a value index or ("lit", number)) as an ONNX name of `dtype`."""
        if isinstance(item, tuple):
            return self.constant(item[1], dtype)
        return self.cast(self.names[item], dtype)

    def reduce(self, op: str, x: str, axes: list[int] | None, keepdims: bool) -> str:
        """A Reduce* node: axes as an input from opset 18 (13 for ReduceSum), an attribute before."""
        keep = int(bool(keepdims))
        if axes is None:
            return self.node(op, [x], keepdims=keep)
        if op == "ReduceSum" or self.opset >= 18:
            return self.node(op, [x, self.ints(axes)], keepdims=keep)
        return self.node(op, [x], axes=list(axes), keepdims=keep)


def check(model: Any) -> None:
    onnx.checker.check_model(model)
