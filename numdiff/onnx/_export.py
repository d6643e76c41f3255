"""numdiff.onnx.export: a model's traced forward written as an ONNX model (needs the onnx package)."""

from __future__ import annotations

import enum
import io
import os
import warnings
from typing import Any

import numpy as np
import onnx
from onnx import helper

from numdiff.backend import is_numpy, to_host
from numdiff.compile.capture import capture_forward
from numdiff.compile.trace import GraphBreakError, UnsupportedInCompileError
from numdiff.onnx import _ops
from numdiff.onnx._builder import Builder, UnsupportedOperatorError, check, onnx_dtype, tensor_proto
from numdiff.onnx._state import exporting
from numdiff.tensor import Tensor

DEFAULT_OPSET = 17


class OnnxExporterError(RuntimeError):
    """The model could not be traced or written as ONNX; the message says why."""


class TrainingMode(enum.IntEnum):
    """torch.onnx.TrainingMode: EVAL (the default) traces in eval mode, PRESERVE in the model's own."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


_exporting = exporting  # numdiff.onnx._state's flag: layers read it without importing onnx


def is_in_onnx_export() -> bool:
    """True while numdiff.onnx.export traces a model."""
    return _exporting[0]


def _dims(shape: tuple, symbolic: dict[int, str]) -> list:
    return [symbolic.get(i, n) for i, n in enumerate(shape)]


def _symbolic_axes(dynamic_axes: dict | None, name: str) -> dict[int, str]:
    axes = (dynamic_axes or {}).get(name)
    if axes is None:
        return {}
    if isinstance(axes, dict):
        return {int(k): str(v) for k, v in axes.items()}
    return {int(k): f"{name}_dynamic_axes_{int(k) + 1}" for k in axes}


def _trace(model: Any, args: tuple, kwargs: dict, training: TrainingMode) -> Any:
    mode = getattr(model, "training", None)
    if training == TrainingMode.EVAL and mode:
        model.eval()
    elif training == TrainingMode.TRAINING and mode is False:
        model.train()
    _exporting[0] = True
    try:
        return capture_forward(model, args, kwargs)
    except (GraphBreakError, UnsupportedInCompileError) as error:
        raise OnnxExporterError(f"numdiff.onnx.export: the model cannot be traced into one graph: {error}") from error
    finally:
        _exporting[0] = False
        if mode is not None and getattr(model, "training", None) != mode:
            model.train(mode)


def _grown(args: tuple, kwargs: dict, names: list[str], dynamic_axes: dict) -> tuple[tuple, dict]:
    """`args` and `kwargs` with each tensor's dynamic axes one longer (its first slice repeated)."""
    slot = 0

    def grow(value: Any) -> Any:
        nonlocal slot
        if not isinstance(value, Tensor):
            return value
        name = names[slot] if slot < len(names) else f"input_{slot}"
        slot += 1
        array = value.detach().cpu()._data  # the storage: bfloat16 too
        for axis in sorted(_symbolic_axes(dynamic_axes, name)):
            array = np.concatenate([array, np.take(array, [0], axis=axis)], axis=axis)
        return Tensor._wrap(np.ascontiguousarray(array), None, None).to(value.device)

    grown_args = tuple(grow(a) for a in args)
    return grown_args, {k: grow(v) for k, v in kwargs.items()}


def export(model: Any, args: Any, f: str | os.PathLike | io.IOBase | None = None, *, kwargs: dict | None = None,
           export_params: bool = True, verbose: bool = False, training: TrainingMode = TrainingMode.EVAL,
           input_names: list[str] | None = None, output_names: list[str] | None = None,
           opset_version: int | None = None, dynamic_axes: dict | None = None,
           keep_initializers_as_inputs: bool = False, do_constant_folding: bool = True,
           dynamo: bool = False, **ignored: Any) -> onnx.ModelProto:
    """Trace ``model(*args)`` and write it as an ONNX model to `f` (a path or a binary file); also return it.

    >>> model = numdiff.nn.Linear(4, 2)
    >>> numdiff.onnx.export(model, (numdiff.randn(1, 4),), "linear.onnx", input_names=["x"],
    ...                     output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    """
    args = args if isinstance(args, tuple) else (args,)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]  # torch.onnx's (args..., {kwargs}) form
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset < DEFAULT_OPSET:
        warnings.warn(f"numdiff.onnx.export writes opset {DEFAULT_OPSET} or later; opset {opset} was asked for, "
                      f"so the model uses opset {DEFAULT_OPSET}", stacklevel=2)
        opset = DEFAULT_OPSET
    captured = _trace(model, args, kwargs or {}, TrainingMode(training))
    graph = captured.graph
    alt_graph = None
    if dynamic_axes:
        alt_args, alt_kwargs = _grown(args, kwargs or {}, list(input_names or []), dynamic_axes)
        alt_graph = _trace(model, alt_args, alt_kwargs, TrainingMode(training)).graph
        if [c.op_name for c in alt_graph.calls] != [c.op_name for c in graph.calls]:
            raise OnnxExporterError(
                "numdiff.onnx.export: the traced graph changes with the sizes of the dynamic axes "
                f"{dynamic_axes}, so one ONNX graph cannot serve every size; export with fixed sizes"
            )
        constants = [(v.shape, w.shape) for v, w in zip(*([x for x in g.values if x.kind in ("const", "captured")]
                                                           for g in (graph, alt_graph))) if v.shape != w.shape]
        if constants:
            raise OnnxExporterError(
                "numdiff.onnx.export: the forward creates a tensor whose size follows a dynamic axis (of shape "
                f"{constants[0][0]} here, e.g. numdiff.zeros(batch, ...) for an initial state); it would be a "
                "constant of one size in ONNX. Pass it as an input, or export with fixed sizes"
            )
    b = Builder(opset, alt_graph)
    param_names: dict[int, str] = {}
    if hasattr(model, "named_parameters"):
        param_names.update({id(t._data): n for n, t in model.named_parameters()})
        param_names.update({id(t._data): n for n, t in model.named_buffers()})
    input_names = list(input_names or [])
    graph_inputs, initializers = [], []
    for value in graph.values:
        if value.kind == "input":
            name = input_names[value.slot] if value.slot < len(input_names) else f"input_{value.slot}"
            b.bind(value.index, name, value.dtype, value.shape)
            graph_inputs.append(helper.make_tensor_value_info(name, onnx_dtype(value.dtype),
                                                              _dims(value.shape, _symbolic_axes(dynamic_axes, name))))
        elif value.kind in ("captured", "const"):
            array = captured.captured[value.slot]._data if value.kind == "captured" else value.constant
            if not (is_numpy(array) or isinstance(array, np.generic)):
                array = to_host(array)  # a CUDA array: initializers are host bytes
            # "traced_": the Builder names its own constants const_1, const_2, ... from one counter.
            name = param_names.get(id(array), f"traced_{value.kind}_{value.index}")
            b.bind(value.index, name, value.dtype, value.shape)
            initializers.append(tensor_proto(name, array))
            if value.kind == "captured" and (keep_initializers_as_inputs or not export_params):
                graph_inputs.append(helper.make_tensor_value_info(name, onnx_dtype(value.dtype), list(value.shape)))
    for position, call in enumerate(graph.calls):
        b.position = position
        out = graph.values[call.output]
        name = _ops.translate(b, call, out)
        b.bind(call.output, name, out.dtype, out.shape)
    output_names = list(output_names or [])
    graph_outputs = []
    for position, index in enumerate(graph.outputs):
        value = graph.values[index]
        name = output_names[position] if position < len(output_names) else f"output_{position}"
        b.node("Identity", [b.names[index]], [name])
        graph_outputs.append(helper.make_tensor_value_info(name, onnx_dtype(value.dtype),
                                                           _dims(value.shape, _symbolic_axes(dynamic_axes, name))))
    onnx_graph = helper.make_graph(b.nodes, type(model).__name__, graph_inputs, graph_outputs,
                                   initializer=(initializers + b.initializers) if export_params else b.initializers)
    proto = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="numdiff")
    proto.ir_version = min(proto.ir_version, 9)
    check(proto)
    if verbose:
        print(helper.printable_graph(proto.graph))
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as handle:
                handle.write(data)
        else:
            f.write(data)
    return proto


supported_ops = _ops.supported_ops


__all__ = ["OnnxExporterError", "TrainingMode", "UnsupportedOperatorError", "export", "is_in_onnx_export",
           "supported_ops"]
