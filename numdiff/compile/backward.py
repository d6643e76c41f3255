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

from numdiff import _dtype
from numdiff.autograd.engine import sum_to_shape
from numdiff.autograd.grad_mode import _state
from numdiff.autograd.node import leaf_accumulator
from numdiff.backend import is_host
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
        folded = _fold_chains(tracer, outputs)
        for node in sorted(tracer.node_call, key=tracer.node_call.get, reverse=True):
            grad = buffers.pop(node, None)
            if grad is None:
                continue
            if node in folded:
                # A whole elementwise chain at once: its input's gradient is grad times the
                # derivative the forward computed (see _fold_chains).
                first, derivative, position = folded[node]
                g = (grad * derivative).to(_dtype.from_numpy(grad._data.dtype))
                target = first.next_nodes[position]
                pending = buffers.get(target)
                buffers[target] = g if pending is None else pending + g
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


def _fold_chains(tracer: Tracer, outputs: list[Tensor]) -> dict:
    """Forward-mode derivatives of float32 elementwise chains, computed by the forward graph.

    A chain is a run of elementwise ops (scalar rules), each with one differentiable input of its
    output's shape, where every link's output feeds only the next link (x -> sin -> mul 0.9 ->
    exp -> ...). Its Jacobian is diagonal, so the gradient of its input is the output's gradient
    times one array: the product of the links' derivatives. Run through the links in forward order,
    each link's own backward formula applied to the running product computes exactly that product,
    and the forward graph computes it beside the values (in the same fused loop): the backward then
    reads one array instead of every link's saved inputs and outputs (a 100-op sin/exp chain saved
    50 arrays), and does one multiply.

    The product runs in float64, so it cannot overflow or underflow where the float32 gradient the
    eager backward computes would not (every factor is at most float32's largest value, and a
    float64 product of up to eight such factors still fits; a longer product out of float64's range
    would also be out of float32's once multiplied by any float32 gradient). Its rounding differs
    from the eager backward's by the order of the products, well within float32's accuracy.

    Returns {last node of a chain: (first node, derivative tensor, position of the first node's
    differentiable input)}. Only chains of two or more links are folded, and only on the CPU: a GPU
    would run the float64 product at a fraction of its float32 rate.
    """
    if not all(is_host(out._data) for out in outputs):
        return {}
    consumers: dict = {}
    for node in tracer.node_call:
        for next_node in node.next_nodes:
            if next_node is not None:
                consumers[next_node] = consumers.get(next_node, 0) + 1
    seeded = {out._grad_fn for out in outputs if out._grad_fn is not None}

    def link_input(node: Any) -> int | None:
        """The position of a chain link's one differentiable input, or None if it is no link."""
        function = node.function
        if getattr(function, "rule", None) is None or not backward_is_traced(function) or node._pre_hooks:
            return None
        positions = [p for p, n in enumerate(node.next_nodes) if n is not None]
        if len(positions) != 1:
            return None
        call = tracer.forward.calls[tracer.node_call[node]]
        output = tracer.forward.values[call.output]
        if output.dtype != np.float32 or tuple(node.input_shapes[positions[0]]) != tuple(output.shape):
            return None
        return positions[0]

    links = {node: link_input(node) for node in tracer.node_call}
    links = {node: position for node, position in links.items() if position is not None}
    # A link continues the chain of its input's node when that node is a link whose only consumer it is.
    previous = {}
    for node, position in links.items():
        before = node.next_nodes[position]
        if before in links and consumers.get(before) == 1 and before not in seeded and not before._retained:
            previous[node] = before
    has_next = set(previous.values())
    folded = {}
    for last in links:
        if last in has_next or last not in previous:
            continue
        chain = [last]
        while chain[-1] in previous:
            chain.append(previous[chain[-1]])
        chain.reverse()
        folded[last] = (chain[0], _chain_derivative(tracer, chain, links), links[chain[0]])
    return folded


def _chain_derivative(tracer: Tracer, chain: list, links: dict) -> Tensor:
    """The product of a chain's derivatives, traced into the forward graph (see _fold_chains)."""
    shape = tracer.forward.values[tracer.forward.calls[tracer.node_call[chain[0]]].output].shape
    tracer.graph = tracer.forward
    try:
        one = Tensor._wrap(np.ones((), dtype=np.float64), None, None)
        tracer.constant(one._data)
        derivative = one.expand(shape)
        for node in chain:
            grads = node.function.backward(node, derivative)
            derivative = grads[links[node]] if isinstance(grads, tuple) else grads
    finally:
        tracer.graph = tracer.backward
    return derivative


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
