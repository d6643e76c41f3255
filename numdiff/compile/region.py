"""A compiled call on the tape: one node whose backward runs the generated backward function.

The region's node has the region's differentiable tensors (arguments and captured Parameters)
as inputs, so the engine hands their gradients on exactly as for any op: leaves accumulate
`.grad`, hooks fire, broadcasting and version checks behave as in eager mode. A backward with
``create_graph=True`` (a second derivative) re-runs the function eagerly and differentiates that
graph instead, since the generated backward works on arrays and records nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.autograd import grad as autograd_grad
from numdiff.autograd.function import Function, Node, SavedTensorFreedError, SavedTensorModifiedError
from numdiff.autograd.grad_mode import _state, enable_grad
from numdiff.tensor import Tensor


class CompiledRegion(Function):
    """The Function of a compiled call's node (``grad_fn`` prints as CompiledRegionBackward)."""

    @staticmethod
    def forward(ctx: Node, *inputs: Any) -> Any:
        raise RuntimeError("CompiledRegion nodes are made by numdiff.compile, not applied")

    @staticmethod
    def backward(ctx: Node, grad: Tensor) -> tuple:
        if ctx._freed:
            raise SavedTensorFreedError(
                "Trying to backward through a compiled region a second time: its saved values were "
                "freed after the first backward. Pass retain_graph=True to the first backward()."
            )
        state = ctx._saved[0]
        for tensor, version in zip(state.saved_tensors, state.versions):
            if tensor._version_counter[0] != version:
                raise SavedTensorModifiedError(
                    f"A tensor of shape {tuple(tensor.shape)} saved by a compiled region for "
                    f"backward was modified in place (version {version} -> {tensor._version_counter[0]})."
                )
        if _state.enabled:
            return state.eager_gradients(ctx.output_slot, grad)
        grads = [None] * state.output_count
        for slot, like in state.grad_shapes:
            grads[slot] = grad._data if slot == ctx.output_slot else np.zeros(like.shape, like.dtype, like=like)
        results = state.program.backward(state.saved, grads)
        return tuple(None if g is None else Tensor._wrap(g, None, None) for g in results)


class RegionState:
    """What one compiled call keeps for its backward: saved arrays and how to redo it eagerly."""

    def __init__(self, program: Any, saved: tuple, differentiable: list, saved_tensors: list,
                 output_count: int, grad_shapes: list, rerun: Any) -> None:
        self.program = program
        self.saved = saved
        self.differentiable = differentiable
        self.saved_tensors = saved_tensors
        self.versions = [t._version_counter[0] for t in saved_tensors]
        self.output_count = output_count
        self.grad_shapes = grad_shapes
        self.rerun = rerun

    def eager_gradients(self, output_slot: int, grad: Tensor) -> tuple:
        """Second-order path: differentiate an eager re-run of the function, recording the graph."""
        with enable_grad():
            outputs = self.rerun()
        return tuple(autograd_grad([outputs[output_slot]], self.differentiable, [grad], create_graph=True,
                                   allow_unused=True))


def attach(outputs: list, state: RegionState, differentiable: list, grad_slots: set) -> list:
    """Wrap output arrays as tensors; each differentiable output gets a region node."""
    tensors = []
    for slot, array in enumerate(outputs):
        if slot not in grad_slots:
            tensors.append(Tensor._wrap(array, None, None))
            continue
        node = Node(CompiledRegion, tuple(differentiable))
        node._saved = (state,)
        node.output_slot = slot
        tensors.append(Tensor._wrap(array, node, None))
    return tensors
