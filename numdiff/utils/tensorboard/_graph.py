"""A model's traced forward as a TensorBoard GraphDef (``SummaryWriter.add_graph``).

The graph comes from numdiff.compile's tracer (numdiff.compile.capture): one node per op call,
one per input and one per parameter or buffer, named by the module's own names (``fc1.weight``),
each with its output shape, so TensorBoard's graph view shows the model as numdiff runs it.
"""

from __future__ import annotations

from typing import Any

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from numdiff.compile.capture import capture_forward
from numdiff.compile.codegen import attr_refs
from numdiff.tensor import Tensor


def _shape_attr(shape: tuple, dtype: Any) -> dict:
    proto = TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(n)) for n in shape])
    return {
        "_output_shapes": AttrValue(list=AttrValue.ListValue(shape=[proto])),
        "dtype": AttrValue(s=str(dtype).encode()),
    }


def graph_def(model: Any, inputs: tuple) -> GraphDef:
    """The GraphDef of ``model(*inputs)`` traced once in eval mode (so batch norm reads its statistics)."""
    was_training = getattr(model, "training", None)
    if was_training:
        model.eval()
    try:
        captured = capture_forward(model, inputs)
    finally:
        if was_training:
            model.train()
    names_of: dict[int, str] = {}
    if hasattr(model, "named_parameters"):
        names_of.update({id(t._data): name for name, t in model.named_parameters()})
        names_of.update({id(t._data): name for name, t in model.named_buffers()})
    graph = captured.graph
    node_of: dict[int, str] = {}
    nodes = []
    for value in graph.values:
        if value.kind == "input":
            node_of[value.index] = f"input/x{value.slot}"
        elif value.kind == "captured":
            tensor: Tensor = captured.captured[value.slot]
            node_of[value.index] = "params/" + names_of.get(id(tensor._data), f"captured{value.slot}")
        elif value.kind == "const":
            node_of[value.index] = f"constants/c{value.index}"
        else:
            continue
        nodes.append(NodeDef(name=node_of[value.index], op=value.kind.capitalize(), attr=_shape_attr(value.shape, value.dtype)))
    for position, call in enumerate(graph.calls):
        out = graph.values[call.output]
        name = f"{call.op_name}_{position}"
        reads = [i for i in call.inputs if not isinstance(i, tuple)] + attr_refs(call)
        attrs = _shape_attr(out.shape, out.dtype)
        for key, value in call.attrs.items():
            if isinstance(value, (int, float, str, bool, tuple)) and len(repr(value)) < 200:
                attrs[f"attr_{key}"] = AttrValue(s=repr(value).encode())
        nodes.append(NodeDef(name=name, op=call.op_name, input=[node_of[i] for i in reads if i in node_of], attr=attrs))
        node_of[call.output] = name
        for index in call.ctx_outputs.values():
            node_of[index] = name
    for slot, index in enumerate(graph.outputs):
        value = graph.values[index]
        nodes.append(NodeDef(name=f"output/y{slot}", op="Output", input=[node_of.get(index, f"input/x{value.slot}")],
                             attr=_shape_attr(value.shape, value.dtype)))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
