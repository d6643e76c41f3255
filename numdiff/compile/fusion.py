"""Emitting a graph's op calls: runs of elementwise ops fused into one generated Numba loop.

(This first version emits every call as a direct call of the op's array forward; the fused
loops come from the scalar rules table, numdiff.ops.scalar_rules.)
"""

from __future__ import annotations

from numdiff.compile.codegen import Emitter


def emit_calls(emitter: Emitter, calls: list, values: list, live_after: set, kernels: list,
               check_shapes: bool) -> None:
    """Append the source lines of `calls` to `emitter` (fused kernels' sources to `kernels`)."""
    graph_values = _GraphView(values)
    for call in calls:
        emitter.emit_call(call, graph_values, check_shapes)


class _GraphView:
    """What Emitter.emit_call reads of a graph: its values."""

    def __init__(self, values: list) -> None:
        self.values = values
