"""The backward graph, traced by running each recorded op's own backward on the traced nodes.

After the forward trace, the nodes it recorded are walked in reverse execution order, exactly as
the engine would: each node's `backward` runs (its numdiff ops are traced into the backward
graph), broadcast gradients are summed back to input shapes and gradients meeting at one node
are added, all with traced ops. The gradients arriving at the region's boundary (the nodes of its
differentiable inputs) are the backward graph's results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.autograd.engine import sum_to_shape
from numdiff.autograd.function import leaf_accumulator
from numdiff.autograd.grad_mode import _state
from numdiff.compile.graph import OpCall
from numdiff.compile.rules import backward_is_traced
from numdiff.compile.trace import Suspended, Tracer
from numdiff.tensor import Tensor


def boundary_node(tensor: Tensor) -> Any:
    """The node gradients for `tensor` flow into: its grad_fn, or its leaf accumulator."""
    return tensor._grad_fn if tensor._grad_fn is not None else leaf_accumulator(tensor)


def trace_backward(tracer: Tracer, outputs: list[Tensor], differentiable: list[Tensor]) -> list:
    """Trace the gradients of `differentiable` given seeds for the outputs that have a grad_fn.

    Returns, per differentiable tensor, the value index of its gradient (None when no gradient
    reaches it). Seeds become "grad" values numbered by their output's position.
    """
    tracer.begin_backward()
    buffers: dict = {}
    for slot, out in enumerate(outputs):
        if out._grad_fn is None or out._grad_fn not in tracer.node_call:
            continue
        seed = np.ones(out._data.shape, dtype=out._data.dtype, like=out._data)
        tracer.add_grad(seed, slot)
        grad = Tensor._wrap(seed, None, None)
        node = out._grad_fn
        buffers[node] = grad if node not in buffers else buffers[node] + grad
    # Backward formulas run as with create_graph=True: that is the form every op writes with
    # numdiff ops (elementwise ops otherwise run one raw kernel, which a trace cannot see). The
    # traced backward is never differentiated itself, which ops may ask (backward_is_differentiated).
    previous = _state.enabled
    _state.enabled = _state.tracing_backward = True
    try:
        for node in sorted(tracer.node_call, key=tracer.node_call.get, reverse=True):
            grad = buffers.pop(node, None)
            if grad is None:
                continue
            if backward_is_traced(node.function):
                grads = node.function.backward(node, grad)
            else:
                grads = _eager_backward(tracer, node, grad)
            if not isinstance(grads, tuple):
                grads = (grads,)
            for next_node, g, shape in zip(node.next_nodes, grads, node.input_shapes):
                if next_node is None or g is None:
                    continue
                if g._data.shape != shape:
                    g = sum_to_shape(g, shape)
                pending = buffers.get(next_node)
                buffers[next_node] = g if pending is None else pending + g
    finally:
        _state.enabled = previous
        _state.tracing_backward = False
    results = []
    seen: set = set()
    for tensor in differentiable:
        node = boundary_node(tensor)
        grad = buffers.get(node) if node not in seen else None
        seen.add(node)
        results.append(None if grad is None else tracer.value_for(grad))
    return results


def _eager_backward(tracer: Tracer, node: Any, grad: Tensor) -> tuple:
    """Run a node's backward untraced; the generated backward will call it on the replayed ctx."""
    call = tracer.forward.calls[tracer.node_call[node]]
    with Suspended():
        grads = node.function.backward(node, grad)
    if not isinstance(grads, tuple):
        grads = (grads,)
    graph = tracer.graph
    together = graph.add_value((), None, "op")
    attrs = {"function": node.function, "needs": tuple(node.needs_input_grad)}
    graph.calls.append(OpCall(node.function, [tracer.value_for(grad), call.ctx_outputs[("object", "")]],
                              attrs, together, special="eager_backward"))
    for position, g in enumerate(grads):
        if g is not None:
            out = graph.add_value(g._data.shape, g._data.dtype, "op")
            graph.calls.append(OpCall(node.function, [together], {"position": position}, out, special="item"))
            tracer._bind(g._data, out)
    return grads
