"""Several results of one recorded op: `unstack_outputs` hands out the k results that an op stacks
along dim 0 of its output (lstm_cell_step's (2, N, H): h', then c') as k tensors of its one node.

An op's output stays one stacked array, so vmap's batching rules, jvp's rules and compile's trace,
which each take one output per op, see the op unchanged: under any of them the results are the
stacked output's rows. Eagerly, each result gets a port node leading into the
op's node, as a user Function's several outputs do (numdiff.autograd.custom_function): backward
collects one gradient per result and hands the op's own backward their stack, zeros where a result
got no gradient (the last step's c' of a cell loop). The two recorded getitems this replaces cost
an LSTMCell step 14 us forward (16 x 32 -> 64, float32, one thread, thread CPU time) and were views
of an output nobody else saw; PyTorch's cells return h' and c' as tensors of their own, as these are.
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
    count = data.shape[0]
    node.function = _adapter(node.function)
    results = []
    for i in range(count):
        results.append(Tensor._wrap(data[i], _port(node, i, count), None))
    return tuple(results)


class _Port(Node):
    """grad_fn of one result: hands its gradient to the op's node in slot `output_nr`."""

    __slots__ = ("output_nr", "output_count")


def _port(node: Node, index: int, count: int) -> _Port:
    # Filled field by field, as Function.apply fills its nodes: Node.__init__ walks inputs a port
    # does not have.
    port = _new_node(_Port)
    port.function = node.function
    port.attrs = _NO_ATTRS
    port.next_nodes = [node]
    port.input_shapes = [None]  # what it hands on is the slots object, which has no shape
    port.needs_input_grad = (True,)
    port._saved = ()
    port._saved_versions = ()
    port._freed = False
    port.output_nr = index
    port.output_count = count
    return port


_new_node = object.__new__
_NO_ATTRS: dict = {}


def _adapter(cls: type) -> type:
    """The function of the op's node and of its ports: a port puts its gradient in its slot; the
    node runs `cls.backward` on the slots' stack."""
    if cls.__dict__.get("unstacked_outputs"):  # already the adapter
        return cls
    adapter = _ADAPTERS.get(cls)
    if adapter is None:

        def backward(ctx: Node, grad: Any) -> Any:
            if type(ctx) is _Port:
                slots = [None] * ctx.output_count
                slots[ctx.output_nr] = grad
                return (_OutputGrads(slots),)
            return cls.backward(ctx, _stacked(grad.grads))

        # A subclass, so the op's name, spec and flags are still found on the node's function.
        adapter = type(cls.__name__, (cls,), {"backward": staticmethod(backward), "unstacked_outputs": True})
        adapter.__qualname__ = cls.__qualname__
        _ADAPTERS[cls] = adapter
    return adapter


_ADAPTERS: dict[type, type] = {}  # built-in ops' classes, which live as long as numdiff


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
