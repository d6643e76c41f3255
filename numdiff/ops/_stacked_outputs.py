"""Several results of one recorded op: `unstack_outputs` hands out the k results that an op stacks
along dim 0 of its output (lstm_cell_step's (2, N, H): h', then c') as k tensors of its one node.

An op's output stays one stacked array, so vmap's batching rules, jvp's rules and compile's trace,
which each take one output per op, see the op unchanged: under any of them the results are the
stacked output's rows. Eagerly, each result gets a port node leading into the op's node, as a user
Function's several outputs do (numdiff.autograd.custom_function): backward collects one gradient
per result and hands the op's own backward their stack, zeros where a result got no gradient (the
last step's c' of a cell loop). The two recorded getitems this replaces cost an LSTMCell step 12-14
us forward, the ports 6 (16 x 32 -> 64, float32, one thread, thread CPU time), and were views of an
output nobody else saw; PyTorch's cells return h' and c' as tensors of their own, as these are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.autograd.custom_function import _OutputGrads
from numdiff.autograd.grad_mode import _state as _grad_state
from numdiff.autograd.node import Node
from numdiff.autograd.transform_state import anywhere
from numdiff.backend import is_host
from numdiff.creation import zeros_like
from numdiff.ops.joining import stack
from numdiff.tensor import Tensor

__all__ = ["unstack_outputs"]


def unstack_outputs(stacked: Tensor) -> tuple[Tensor, ...]:
    """The rows of `stacked`, the output an op has just made (before anything else used it), as
    tensors of their own whose gradients reach the op's node together.

    >>> z = numdiff.zeros
    >>> h, c = unstack_outputs(numdiff.ops.recurrent_cell.lstm_cell_step(z(2, 5), z(2, 3), z(2, 3), z(12, 5), z(12, 3)))
    >>> tuple(h.shape), tuple(c.shape)
    ((2, 3), (2, 3))
    """
    data = stacked._data
    node = stacked._grad_fn
    if anywhere.levels:  # a transform's tensor (batched, traced, carrying a tangent): its rows
        return tuple(stacked[i] for i in range(data.shape[0]))
    if node is None:  # nothing recorded: no input required grad, or grad mode was off
        return tuple(Tensor._wrap(data[i], None, None) for i in range(data.shape[0]))
    if node.function in _NODE_FUNCTIONS:
        raise RuntimeError(f"unstack_outputs: the output of {node.name()} was already unstacked; use those results")
    count = data.shape[0]
    node.function, port_function = _adapters(node.function)
    results = []
    for i in range(count):
        results.append(Tensor._wrap(data[i], _port(node, port_function, i, count), None))
    return tuple(results)


def _port(node: Node, function: type, index: int, count: int) -> Node:
    """grad_fn of result `index` of `count`: a node leading into the op's `node`, filled field by
    field as Function.apply fills its nodes (Node.__init__ walks inputs a port does not have).
    Its slot is an attribute, so a backward that narrows the node (autograd._walk_plan) keeps it."""
    port = _new_node(Node)
    port.function = function
    port.attrs = {"output_nr": index, "output_count": count}
    port.next_nodes = [node]
    port.input_shapes = [None]  # what it hands on is the slots object, which has no shape
    port.needs_input_grad = (True,)
    port._saved = ()
    port._saved_versions = ()
    port._freed = False
    return port


_new_node = object.__new__


def _adapters(cls: type) -> tuple[type, type]:
    """The functions of the op's node (`cls.backward` on the stack of the slots) and of its ports
    (the gradient put in its slot); subclasses of `cls`, so the op's name and spec are still found."""
    pair = _ADAPTERS.get(cls)
    if pair is None:

        def node_backward(ctx: Node, grad: Any) -> Any:
            return cls.backward(ctx, _stacked(grad.grads))

        def port_backward(ctx: Node, grad: Any) -> tuple:
            slots = [None] * ctx.attrs["output_count"]
            slots[ctx.attrs["output_nr"]] = grad
            return (_OutputGrads(slots),)

        pair = tuple(type(cls.__name__, (cls,), {"backward": staticmethod(b)}) for b in (node_backward, port_backward))
        for adapter in pair:
            adapter.__qualname__ = cls.__qualname__
        _ADAPTERS[cls] = pair
        _NODE_FUNCTIONS.add(pair[0])
    return pair


_ADAPTERS: dict[type, tuple[type, type]] = {}  # built-in ops' classes, which live as long as numdiff
_NODE_FUNCTIONS: set[type] = set()


def _stacked(grads: list) -> Tensor:
    """The results' gradients stacked along a new dim 0, zeros for those that got none."""
    present = next(g for g in grads if g is not None)
    if _grad_state.enabled or not all(g is None or is_host(g._data) for g in grads):
        return stack([zeros_like(present) if g is None else g for g in grads])  # recorded (create_graph)
    data = present._data
    out = np.empty((len(grads), *data.shape), dtype=data.dtype)
    for i, g in enumerate(grads):
        if g is None:
            out[i] = 0
        else:
            out[i] = g._data
    return Tensor._wrap(out, None, None)
