"""Capture a function's forward as a graph without compiling it: what exporters read.

numdiff.onnx and the TensorBoard writer's ``add_graph`` run the function once under the tracer,
with grad mode off (nothing to differentiate), and read the forward graph: its inputs, the
tensors it captured (a module's parameters and buffers) and the op calls between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.compile.graph import Graph
from numdiff.compile.trace import Tracer, Tracing
from numdiff.tensor import Tensor


@dataclass
class CapturedGraph:
    """A traced forward: `graph` (outputs set), its input tensors and the tensors it read from outside."""

    graph: Graph
    inputs: list
    captured: list
    result: Any


def _tensors_in(result: Any) -> Any:
    """The tensors of a result, depth first: a tensor, or tuples, lists and dicts holding them."""
    if isinstance(result, Tensor):
        yield result
    elif isinstance(result, (tuple, list)):
        for item in result:
            yield from _tensors_in(item)
    elif isinstance(result, dict):
        for item in result.values():
            yield from _tensors_in(item)


def capture_forward(fn: Any, args: tuple, kwargs: dict | None = None) -> CapturedGraph:
    """Run ``fn(*args, **kwargs)`` once, recording its op calls; tensors in `args` are the inputs.

    >>> captured = capture_forward(numdiff.nn.Linear(3, 2), (numdiff.ones(1, 3),))
    >>> [call.op_name for call in captured.graph.calls]
    ['linear']
    """
    kwargs = kwargs or {}
    inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    tracer = Tracer()
    for slot, t in enumerate(inputs):
        tracer.add_input(t, slot)
    with no_grad(), Tracing(tracer):
        result = fn(*args, **kwargs)
        outputs = list(_tensors_in(result))
        tracer.forward.outputs = [tracer.value_for(t) for t in outputs]
    return CapturedGraph(tracer.forward, inputs, tracer.captured, result)
