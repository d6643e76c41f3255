"""The backward walk: replay recorded ops from the outputs back to the leaves, without recursion.

The graph is discovered with an explicit stack, each node counting the consumers whose gradient it
still waits for. A node runs once every consumer has handed its gradient in, so ops replay in
reverse execution order without a sort, and a chain of any depth never touches Python's recursion
limit. This module is the only code that seeds gradients, sums broadcast dimensions back to an
input's shape, applies hooks, writes `.grad` and frees saved state; ops only do the maths.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from numdiff import _profiling
from numdiff.autograd import _graph_task, anomaly
from numdiff.autograd import function as _function
from numdiff.autograd._grad_buffers import (
    accumulate_sparse,
    add_in_place,
    backward_into_buffer,
    is_sparse_gradient,
    sum_gradients,
    unshared,
)
from numdiff.autograd._hook_calls import apply_hooks, refuse_post_hook_result
from numdiff.autograd._walk_plan import discover, narrowed, plan_for_inputs
from numdiff.autograd.grad_mode import _state
from numdiff.autograd.node import AccumulateGrad, Node, leaf_accumulator
from numdiff.autograd.transform_state import anywhere, transforms
from numdiff.backend import is_host

if TYPE_CHECKING:
    from numdiff.tensor import Tensor

# Writing a leaf's `.grad` (the None check, then `+=` or taking over the buffer) holds a lock picked
# by the leaf's identity, so backward passes in several threads into one leaf lose nothing (NumPy
# releases the GIL inside `+=`). PyTorch keeps one mutex per AccumulateGrad node; a fixed pool
# gives each leaf one lock too, without creating a lock per node on every step of a single-thread
# loop. Two leaves that share a lock only wait for each other while one of them is written.
_GRAD_LOCK_MASK = 63
_GRAD_LOCKS = tuple(threading.Lock() for _ in range(_GRAD_LOCK_MASK + 1))


class BackwardInTransformError(RuntimeError):
    """backward() was called inside a numdiff.func transform (grad, vjp, jvp, vmap, jacrev...)."""


def _root_node(tensor: Tensor, index: int) -> Node | AccumulateGrad:
    if tensor._base is not None:
        _function.check_view_is_current(tensor, "backward")
    if tensor._grad_fn is not None:
        return tensor._grad_fn
    if tensor._requires_grad:
        return leaf_accumulator(tensor)
    raise RuntimeError(
        f"element {index} of tensors does not require grad and does not have a grad_fn: "
        f"the tensor of shape {tuple(tensor.shape)} was not produced by a recorded op. Set "
        "requires_grad=True on the leaves you want gradients for, before computing it, and make "
        "sure the computation did not run under no_grad()."
    )


def _seed(tensor: Tensor, grad: Tensor | None, index: int) -> Tensor:
    if grad is None:
        data = tensor._data
        if data.size != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs, but output {index} has "
                f"shape {tuple(tensor.shape)}. Reduce it first (e.g. out.sum().backward()) or pass "
                "gradient= with a tensor of the output's shape."
            )
        if is_host(data) and data.dtype.kind == "f":  # a CPU loss: no factory needed
            return _function.Tensor._wrap(np.ones(data.shape, data.dtype), None, None)
        from numdiff.creation import ones_like

        return ones_like(tensor)
    if not isinstance(grad, _function.Tensor):
        raise TypeError(f"gradient must be a Tensor, got {type(grad).__name__}")
    grad_data, data = grad._data, tensor._data
    if grad_data.shape != data.shape:
        raise RuntimeError(
            f"Mismatch in shape: gradient has shape {tuple(grad.shape)} but output {index} has "
            f"shape {tuple(tensor.shape)}"
        )
    if not (is_host(grad_data) and is_host(data)) and grad.device != tensor.device:
        raise RuntimeError(
            f"gradient for output {index} is on {grad.device} but the output is on {tensor.device}"
        )
    if grad_data.dtype is not data.dtype and grad_data.dtype != data.dtype:
        # As PyTorch does: the gradient takes the output's dtype, so `.grad` keeps the leaf's.
        grad = grad.to(tensor.dtype)
    return grad


def sum_to_shape(grad: Tensor, shape: tuple) -> Tensor:
    """Sum a broadcast gradient back down to an input's shape."""
    # The array's shape, not grad.shape: that property makes a Size per access (one per dim here).
    grad_shape = grad._data.shape
    lead = len(grad_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        [i + lead for i, size in enumerate(shape) if size == 1 and grad_shape[i + lead] != 1]
    )
    if axes:
        # Only leading axes (a bias's gradient): summed away, they leave the input's shape, with
        # no reshape op after the sum.
        grad = grad.sum(dim=axes, keepdim=len(axes) != lead)
    if grad._data.shape != tuple(shape):
        grad = grad.reshape(shape)
    return grad


def _accumulate_into(tensor: Tensor, grad: Tensor, create_graph: bool, unshared: bool = False) -> None:
    """`tensor.grad += grad`, allocating on first write; never aliases a buffer someone else holds."""
    held = tensor._grad
    if (type(grad) is not _function.Tensor and is_sparse_gradient(grad)) or (
        held is not None and type(held) is not _function.Tensor and is_sparse_gradient(held)
    ):
        accumulate_sparse(tensor, grad)  # a sparse gradient (an embedding's with sparse=True)
        return
    if tensor._grad is None:
        if create_graph or unshared:
            tensor._grad = grad
        else:
            tensor._grad = grad.detach().clone()
    elif create_graph or tensor._grad._requires_grad:
        tensor._grad = tensor._grad + grad
    else:
        tensor._grad._data += grad._data
        tensor._grad._version_counter[0] += 1


def run_backward(
    outputs: Sequence[Tensor],
    grad_outputs: Sequence[Tensor | None],
    retain_graph: bool,
    create_graph: bool,
    inputs: Sequence[Tensor] | None = None,
    capture: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...] | None:
    """Backpropagate from `outputs`.

    With ``capture=False`` (``Tensor.backward``) gradients accumulate into `.grad` of the leaves
    that require grad (only those in `inputs`, if given). With ``capture=True``
    (``autograd.grad``) the gradients of `inputs` are returned and no `.grad` is touched. This
    thread's innermost interpreter may refuse the pass first (numdiff.compile's trace).
    """
    if anywhere.levels:
        if not capture and (transforms.vmap_depth or transforms.grad_depth):
            raise BackwardInTransformError(
                "backward() called inside a numdiff.func transform (grad, vjp, jvp, vmap, jacrev, "
                "jacfwd or hessian): it would write .grad of the transform's own inputs and captured "
                "tensors behind its back. Return the loss from the function and let numdiff.func.grad "
                "or vjp differentiate it, or call backward() outside the transform."
            )
        top = transforms.interpreter
        if not capture and len(outputs) == 1 and top is not None:
            options = {"gradient": grad_outputs[0], "retain_graph": retain_graph,
                       "create_graph": create_graph, "inputs": inputs}
            if top.defer_backward(outputs[0], options):
                return None
        as_ops = top is not None and top.backward(capture, create_graph)
    else:
        as_ops = False
    if len(outputs) == 1:  # Tensor.backward: one root, nothing to merge
        root = _root_node(outputs[0], 0)
        roots = [root]
        buffers: dict = {root: _seed(outputs[0], grad_outputs[0], 0)}
    else:
        roots = [_root_node(t, i) for i, t in enumerate(outputs)]
        seeds = [_seed(t, g, i) for i, (t, g) in enumerate(zip(outputs, grad_outputs))]
        buffers = {}
        for node, seed in zip(roots, seeds):
            buffers[node] = buffers[node] + seed if node in buffers else seed
    dependencies = discover(roots)

    target_nodes: dict = {}
    if inputs is not None:
        for i, t in enumerate(inputs):
            if t._grad_fn is not None:
                target_nodes[t._grad_fn] = i
            elif t._requires_grad:
                target_nodes[leaf_accumulator(t)] = i
            else:
                raise RuntimeError(
                    f"input {i} (shape {tuple(t.shape)}) does not require grad and is not the "
                    "result of a recorded op, so no gradient can be computed for it"
                )
        needed, masks = plan_for_inputs(roots, dependencies, target_nodes)
    else:
        needed, masks = None, None
    captured: dict = {}

    ready = [r for r in buffers if r not in dependencies]  # buffers: the roots, each once, in order
    previous_mode = _state.enabled
    check = anomaly._state.enabled and anomaly._state.check_nan
    plain = needed is None and not target_nodes  # every node runs and none is a target
    pop_buffer = buffers.pop
    dense = _function.Tensor  # anything else reaching a buffer is a sparse gradient (or a subclass)
    # Backward formulas, hooks and gradient sums are recorded only when a graph of the backward
    # pass itself is wanted, or an interpreter must see them as ops (`as_ops`: the results are
    # detached below, as without create_graph).
    _state.enabled = create_graph or as_ops
    # First order only: a recorded backward must stay a graph of ops.
    into_allowed = not _state.enabled and not check and _profiling.recorder is None
    walk = _graph_task.GraphTask(roots, dependencies, needed, target_nodes) if _graph_task.wanted else None
    if walk is not None:
        _graph_task.push(walk)
    try:
        while ready:
            node = ready.pop()
            grad = pop_buffer(node, None)
            if type(node) is AccumulateGrad:
                if grad is None:
                    continue
                sparse = type(grad) is not dense and is_sparse_gradient(grad)
                if not sparse and grad._data.dtype is not node.variable._data.dtype and (
                    grad._data.dtype != node.variable._data.dtype
                ):
                    # A custom Function's backward may return another float dtype: `.grad` keeps
                    # the leaf's (PyTorch casts likewise).
                    grad = grad.to(node.variable.dtype)
                variable = node.variable
                if variable._hooks:
                    grad = apply_hooks(variable._hooks, grad)
                if capture and node in target_nodes:
                    captured[node] = grad
                elif needed is None or node in target_nodes:
                    refs = sys.getrefcount(grad)  # its own statement: a call's arguments count too
                    owned = sparse or unshared(grad, refs)
                    with _GRAD_LOCKS[(id(variable) >> 4) & _GRAD_LOCK_MASK]:
                        _accumulate_into(variable, grad, create_graph, owned)
                    post_hooks = variable._post_accumulate_hooks
                    if post_hooks:
                        for hook in tuple(post_hooks.values()):
                            if hook(variable) is not None:
                                refuse_post_hook_result(hook, variable)
                continue
            if grad is None:
                run = False
            elif plain and node._pre_hooks is None and node._retained is None:
                run = True  # the common case: no hooks, no retain_grad, every node runs
            else:
                if node._pre_hooks:
                    grad = apply_hooks(node._pre_hooks, grad)
                if node._retained is not None:
                    retained = node._retained()
                    if retained is not None:
                        _accumulate_into(retained, grad, create_graph)
                if target_nodes and node in target_nodes:
                    if capture:
                        captured[node] = grad
                    else:
                        _accumulate_into(inputs[target_nodes[node]], grad, create_graph)
                run = needed is None or node in needed
            if run and into_allowed and getattr(node.function, "backward_into", None) is not None and (
                backward_into_buffer(node, grad, buffers, _function.Tensor._wrap)
            ):
                run = False  # written into the input's buffer: only the counts below remain
            if run:
                # A built-in op that this call needs fewer input gradients of than it records sees
                # the narrower needs_input_grad (numdiff.autograd._walk_plan).
                ctx = narrowed(node, masks[node]) if masks and node in masks else node
                if _profiling.recorder is None:
                    grads = node.function.backward(ctx, grad)
                else:
                    grads = _profiling.recorder.record(
                        f"{node.function.__name__}Backward", "backward", node.function.backward, ctx, grad
                    )
                if type(grads) is not tuple or len(grads) != len(node.next_nodes):
                    grads = _as_tuple(grads, node)
                if check:
                    anomaly.check_gradients(node, grads)
                for next_node, g, shape in zip(node.next_nodes, grads, node.input_shapes):
                    if next_node is None:
                        continue
                    if g is not None:
                        sparse = type(g) is not dense and is_sparse_gradient(g)
                        if not sparse and shape is not None and g._data.shape != shape:  # None: an output port
                            g = _reduce(g, node, shape)
                        pending = pop_buffer(next_node, None)
                        if pending is None:
                            buffers[next_node] = g
                        elif into_allowed and type(pending) is type(g) is _function.Tensor and add_in_place(pending, g):
                            buffers[next_node] = pending  # a buffer only the engine holds: summed in place
                        elif sparse or (type(pending) is not dense and is_sparse_gradient(pending)):
                            buffers[next_node] = sum_gradients(pending, g)
                        else:
                            buffers[next_node] = pending + g
                    count = dependencies[next_node] - 1
                    dependencies[next_node] = count
                    if count == 0:
                        ready.append(next_node)
                # Drop this frame's references, so the reference counts that let a leaf take over a
                # gradient buffer (see _grad_buffers.unshared) see only the holders that matter.
                grads = g = pending = ctx = None
            else:
                for next_node in node.next_nodes:
                    if next_node is not None:
                        count = dependencies[next_node] - 1
                        dependencies[next_node] = count
                        if count == 0:
                            ready.append(next_node)
            if not retain_graph:
                # Free what the node saved. Sizes and flags (plain ctx attributes) stay: a second
                # backward through a node that saved no tensors works, as in PyTorch; one that did
                # gets SavedTensorFreedError from saved_tensors.
                node._saved = ()
                node._saved_versions = ()
                node._freed = True
    finally:
        if walk is not None:
            _graph_task.pop()
        _state.enabled = previous_mode

    if not capture:
        return None
    results = []
    for i, t in enumerate(inputs):
        node = t._grad_fn if t._grad_fn is not None else leaf_accumulator(t)
        grad = captured.get(node)
        if grad is None and not allow_unused:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {i}, shape {tuple(t.shape)}) appears to "
                "not have been used in the graph. Set allow_unused=True if this is the desired "
                "behavior."
            )
        results.append(grad.detach() if as_ops and not create_graph and grad is not None else grad)
    return tuple(results)


def _as_tuple(grads: object, node: Node) -> tuple:
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != len(node.next_nodes):
        raise RuntimeError(
            f"{node.name()}.backward returned {len(grads)} gradients but its forward had "
            f"{len(node.next_nodes)} inputs: backward must return one entry (or None) per input"
        )
    return grads


def _reduce(grad: Tensor, node: Node, shape: tuple) -> Tensor:
    try:
        return sum_to_shape(grad, shape)
    except (ValueError, RuntimeError):
        raise RuntimeError(
            f"{node.name()} returned a gradient of shape {tuple(grad.shape)} for an input of shape "
            f"{tuple(shape)}"
        ) from None
