"""Boxes and edges of a traced forward graph, for numdiff.viz.draw_graph."""

from __future__ import annotations

from typing import Any

from numdiff._graph_layout import Box
from numdiff.compile.codegen import attr_refs
from numdiff.compile.graph import Graph

_KINDS = {"input": "leaf", "captured": "leaf", "const": "constant", "grad": "leaf"}


def traced_graph(obj: Any) -> Graph | None:
    """The latest traced forward graph of a compiled function, module or CompiledFunction."""
    compiled = getattr(obj, "compiled", obj)
    traces = getattr(compiled, "traces", None)
    if not isinstance(traces, dict):
        return None
    latest = [t for group in traces.values() for t in group]
    if not latest:
        raise ValueError("draw_graph: the compiled function has not been called yet, so nothing is traced")
    return latest[-1].program.graph


def graph_boxes(graph: Graph) -> tuple[dict, list]:
    """One box per op call and per input, captured tensor or constant it reads; edges by value."""
    boxes: dict[Any, Box] = {}
    producer: dict[int, Any] = {}
    counts: dict[tuple, int] = {}
    for position, call in enumerate(graph.calls):
        key = ("call", position)
        out = graph.values[call.output]
        boxes[key] = Box(key, "op", [call.op_name, f"{out.dtype}{list(out.shape)}"])
        producer[call.output] = key
        for index in call.ctx_outputs.values():
            producer[index] = key
        for index in [i for i in call.inputs if not isinstance(i, tuple)] + attr_refs(call):
            source = producer.get(index)
            if source is None:
                value = graph.values[index]
                source = ("value", index)
                boxes[source] = Box(source, _KINDS.get(value.kind, "constant"),
                                    [f"{value.kind} {value.name}", f"{value.dtype}{list(value.shape)}"])
                producer[index] = source
            counts[(source, key)] = counts.get((source, key), 0) + 1
    for slot, index in enumerate(graph.outputs):
        key = ("output", slot)
        value = graph.values[index]
        boxes[key] = Box(key, "output", [f"output {slot}", f"{value.dtype}{list(value.shape)}"])
        if index in producer:
            counts[(producer[index], key)] = 1
    return boxes, [(u, v, n) for (u, v), n in counts.items()]
