"""`Function.apply` for user-defined Functions: PyTorch's custom Function contract.

A user's forward receives Tensors and runs with grad mode off. It may return one tensor or a tuple
mixing tensors and other values; every differentiable tensor output is recorded on the one node
that is the Function's `ctx`. A single output's grad_fn is that node; with several outputs, each
gets a port node leading into it, so the node's backward receives one gradient per output.

The leaf contract holds through a Function as through built-in ops:

- an output that shares memory with an input (the input itself, or a view of it) becomes a view
  of that input: it shares the input's version counter, and an in-place op on it is refused
  while its base requires grad, as PyTorch refuses it;
- an output that shares memory with an earlier output is a view of that one;
- an input modified in place must be marked with ``ctx.mark_dirty`` and returned; a leaf that
  requires grad may not be modified at all while recording.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from numdiff.autograd import function as _function
from numdiff.autograd import graph as _graph
from numdiff.autograd import node as _node
from numdiff.autograd._function_contract import CustomFunctionError as CustomFunctionError
from numdiff.autograd.grad_mode import _state
from numdiff.autograd.transform_state import anywhere, transforms


class _UnrecordedCtx:
    """ctx of a forward that records nothing (grad mode off, or no input requires grad)."""

    materialize_grads = True

    def __init__(self, count: int) -> None:
        self.needs_input_grad = (False,) * count
        self._dirty = ()
        self._non_differentiable = ()

    def save_for_backward(self, *items: Any) -> None:
        pass

    def save_for_forward(self, *items: Any) -> None:
        self.saved_for_forward = items

    def mark_dirty(self, *tensors: Any) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        self._non_differentiable = outputs

    def set_materialize_grads(self, value: bool) -> None:
        pass


class _OutputGrads:
    """The gradients that reached a several-output node so far, one slot per output (None: none
    yet). The engine sums what the ports hand in with `+`."""

    __slots__ = ("grads",)

    def __init__(self, grads: list) -> None:
        self.grads = grads

    def __add__(self, other: _OutputGrads) -> _OutputGrads:
        return _OutputGrads(
            [a if b is None else b if a is None else a + b for a, b in zip(self.grads, other.grads)]
        )


def _adapter(cls: type) -> type:
    """The `function` of a user Function's node and of its output ports. On a port (grad_fn of one
    of several outputs) backward hands the gradient to the node's slot for that output; on the
    node it runs the user's backward on one gradient per output and checks what it returned."""
    adapter = _ADAPTERS.get(cls)
    if adapter is None:

        def backward(ctx: _node.Node, grad: Any) -> tuple:
            if type(ctx) is not _node.Node:  # numdiff.compile replays it on a ctx of its own
                return cls.backward(ctx, grad)
            output_nr = ctx.__dict__.get("output_nr")
            if output_nr is not None:
                slots = [None] * ctx.output_count
                slots[output_nr] = grad
                return (_OutputGrads(slots),)
            grads = _materialized(ctx, grad.grads) if type(grad) is _OutputGrads else (grad,)
            return _checked_gradients(cls, ctx, cls.backward(ctx, *grads))

        # A subclass, so everything else the user's class defines (forward, jvp, vmap, flags)
        # is still found on the node's function.
        adapter = type(cls.__name__, (cls,), {"backward": staticmethod(backward), "user_function": cls})
        adapter.__qualname__ = cls.__qualname__
        _ADAPTERS[cls] = adapter
    return adapter


_ADAPTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _output_port(node: _node.Node, output_nr: int, output_count: int) -> _node.Node:
    """grad_fn of output `output_nr` of a Function with several outputs: a node leading into the
    Function's node. Hooks and retain_grad on that output attach here."""
    port = _node.Node(node.function, ())
    port.next_nodes = [node]
    port.input_shapes = [None]  # what it hands on is the slots object, which has no shape
    port.needs_input_grad = (True,)
    port.__dict__["output_nr"] = output_nr
    port.__dict__["output_count"] = output_count
    return port


def _materialized(ctx: _node.Node, grads: list) -> list:
    """Missing output gradients as zeros (or None after ``ctx.set_materialize_grads(False)``)."""
    if not ctx.materialize_grads:
        return grads
    result = []
    for grad, (shape, dtype, device) in zip(grads, ctx._output_meta):
        if grad is None and shape is not None:
            grad = _function.Tensor._wrap(np.zeros(shape, dtype), None, None)
            if device.type != "cpu":
                grad = grad.to(device)
        result.append(grad)
    return result


def _checked_gradients(cls: type, ctx: _node.Node, grads: Any) -> tuple:
    """One gradient (or None) per forward input; trailing Nones past the inputs are dropped."""
    count = len(ctx.next_nodes)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) > count and all(g is None for g in grads[count:]):
        grads = grads[:count]
    if len(grads) != count:
        raise CustomFunctionError(
            f"{cls.__name__}Backward returned {len(grads)} gradients but its forward had {count} inputs: "
            f"{cls.__name__}.backward must return one gradient per forward argument (None for a "
            "non-tensor argument or one that needs no gradient)"
        )
    checked = []
    for index, (grad, shape) in enumerate(zip(grads, ctx.input_shapes)):
        if grad is None:
            checked.append(None)
            continue
        if not isinstance(grad, _function.Tensor):
            raise CustomFunctionError(
                f"{cls.__name__}.backward returned a {type(grad).__name__} as the gradient of argument "
                f"{index}: a gradient must be a Tensor or None"
            )
        if shape is None:
            raise CustomFunctionError(
                f"{cls.__name__}.backward returned a gradient for argument {index}, which was not a "
                "Tensor in forward: return None in its place"
            )
        checked.append(grad if ctx.next_nodes[index] is not None else None)
    return tuple(checked)


def _check_static(cls: type) -> None:
    """forward and backward must be static methods (PyTorch's new-style Function)."""
    if cls in _CHECKED:
        return
    for name in ("forward", "backward", "setup_context", "vmap", "jvp"):
        for klass in cls.__mro__:
            if name in klass.__dict__:
                if not isinstance(klass.__dict__[name], (staticmethod, classmethod)):
                    raise TypeError(
                        f"{cls.__name__}.{name} must be a @staticmethod taking ctx first "
                        f"(def {name}(ctx, ...)); it is an instance method, which Function.apply "
                        "cannot call"
                    )
                break
    _CHECKED.add(cls)


_CHECKED: weakref.WeakSet = weakref.WeakSet()


def apply_custom(cls: type, inputs: tuple, attrs: dict) -> Any:
    """Run a user Function's forward and record its outputs (see the module docstring)."""
    _check_static(cls)
    tensor_type = _function.Tensor
    tensors = [(i, t) for i, t in enumerate(inputs) if isinstance(t, tensor_type)]
    enabled = _state.enabled
    if enabled:
        for _, t in tensors:
            if t._base is not None:
                _function.check_view_is_current(t, cls.__name__)
    record = enabled and any(t._requires_grad for _, t in tensors)
    versions = [t._version_counter[0] for _, t in tensors]
    if record:
        ctx = _node.Node(_adapter(cls), inputs, attrs)
    else:
        ctx = _UnrecordedCtx(len(inputs))
    if anywhere.levels and transforms.forward_ctx:  # forward mode reads this ctx (numdiff.func._forward)
        for box in transforms.forward_ctx:
            if not box:
                box.append(ctx)
    _state.enabled = False
    try:
        if getattr(cls, "setup_context", None) is None:
            raw = cls.forward(ctx, *inputs, **attrs)
        else:  # PyTorch's functorch style: forward without ctx, then setup_context(ctx, inputs, output)
            raw = cls.forward(*inputs, **attrs)
            cls.setup_context(ctx, inputs, raw)
    finally:
        _state.enabled = enabled
    several = isinstance(raw, tuple)
    outputs = list(raw) if several else [raw]
    if isinstance(raw, list):
        raise CustomFunctionError(
            f"{cls.__name__}.forward returned a list: return a tuple for several outputs (a list is "
            "not unpacked into outputs)"
        )
    dirty = _check_dirty(cls, ctx, tensors, versions, outputs, record)
    ports = record and several
    non_differentiable = {id(t) for t in ctx._non_differentiable} if ctx._non_differentiable else ()
    results: list = []
    meta = []
    for index, out in enumerate(outputs):
        if not isinstance(out, tensor_type):
            if hasattr(out, "dtype") and hasattr(out, "shape"):  # an array: made a tensor, as before
                out = tensor_type._wrap(_function._as_array(out), None, None)
            elif several:
                results.append(out)
                meta.append((None, None, None))
                continue
            else:
                raise CustomFunctionError(
                    f"{cls.__name__}.forward must return a Tensor, got {type(out).__name__}"
                )
        differentiable = record and out._data.dtype.kind in "fcV" and id(out) not in non_differentiable
        grad_fn = None
        if differentiable:
            grad_fn = _output_port(ctx, index, len(outputs)) if ports else ctx
        results.append(_output_tensor(cls, out, grad_fn, tensors, results, dirty, index))
        # Every tensor output gets zeros in backward when no gradient reached it, non-differentiable
        # ones included (of their own dtype: an argmax gets int64 zeros), as PyTorch materializes.
        meta.append((out._data.shape, out._data.dtype, results[-1].device))
    if record:
        ctx.__dict__["_output_meta"] = meta
        if ctx._saved:
            _bind_saved(ctx, inputs, outputs, results, dirty)
    return tuple(results) if several else results[0]


def _check_dirty(cls: type, ctx: Any, tensors: list, versions: list, outputs: list, record: bool) -> set:
    """The ids of inputs forward modified in place: each must be marked dirty and returned, and
    none may be a leaf that requires grad while recording."""
    dirty = {id(t) for t in getattr(ctx, "_dirty", ())}
    output_ids = {id(o) for o in outputs}
    for (index, t), version in zip(tensors, versions):
        changed = t._version_counter[0] != version
        if id(t) in dirty and id(t) not in output_ids:
            raise CustomFunctionError(
                f"{cls.__name__}.forward marked argument {index} dirty (ctx.mark_dirty) but did not "
                "return it: a tensor modified in place must be returned as an output"
            )
        if not (changed or id(t) in dirty) or not record:
            continue
        if t._grad_fn is None and t._requires_grad:
            raise _function.InPlaceOnLeafError(
                f"{cls.__name__}.forward modified argument {index} in place, a leaf tensor of shape "
                f"{tuple(t.shape)} that requires grad: a leaf that requires grad cannot be used in an "
                "in-place operation. Compute out of place in forward (return x * 2, not x.mul_(2)), or "
                "update the leaf under numdiff.no_grad()."
            )
        if id(t) not in dirty:
            raise CustomFunctionError(
                f"{cls.__name__}.forward modified argument {index} (shape {tuple(t.shape)}) in place "
                "without ctx.mark_dirty(it): its recorded history would be wrong. Call "
                "ctx.mark_dirty on it and return it, or compute out of place."
            )
        if t._base is not None and t._base._requires_grad:
            raise CustomFunctionError(
                f"{cls.__name__}.forward modified in place argument {index}, a view (shape "
                f"{tuple(t.shape)}) of a tensor that requires grad: numdiff cannot rebase a view onto "
                "a custom Function. Pass the base tensor itself, or a clone() of the view."
            )
    return dirty


def _output_tensor(
    cls: type, out: Any, grad_fn: Any, tensors: list, earlier: list, dirty: set, index: int
) -> Any:
    """The tensor handed back for output `index`: a dirty input rebased onto the node, a view of
    the input or earlier output it shares memory with, or a new tensor."""
    tensor_type = _function.Tensor
    if id(out) in dirty:
        if grad_fn is not None:
            if out._retains_grad and out._grad_fn is not None:
                out._grad_fn._retained = None
                grad_fn._retained = weakref.ref(out)
            out._grad_fn = grad_fn
            out._requires_grad = True
        return out
    data = out._data
    aliased = None
    for _, t in tensors:
        if np.may_share_memory(data, t._data):
            aliased = t
            break
    if aliased is None:
        for other in earlier:
            if isinstance(other, tensor_type) and np.may_share_memory(data, other._data):
                aliased = other
                break
    if aliased is None:
        # A view made inside forward (of a captured tensor, or of an intermediate), or a captured
        # tensor that requires grad returned as-is (forward creates nothing that requires grad).
        aliased = out._base if out._base is not None else out if out._requires_grad else None
    if aliased is None:
        result = tensor_type._wrap(data, grad_fn, out._version_counter if grad_fn is None else None)
        return result
    result = tensor_type._wrap(data, grad_fn, aliased._version_counter)
    base = aliased._base if aliased._base is not None else aliased
    result._base = base
    result._base_node = base._grad_fn
    result._view_replay = None  # forward's own view: it cannot be replayed without running forward
    if grad_fn is None and base._requires_grad:
        # A view made without recording: PyTorch marks it requires_grad=False; in-place ops on it
        # with grad mode on are refused as for any view made under no_grad.
        result._requires_grad = False
    return result


def _bind_saved(ctx: _node.Node, inputs: tuple, outputs: list, results: list, dirty: set) -> None:
    """Saved outputs are kept as `_SavedOutput` (no reference cycle through the node); saved
    inputs and other tensors as themselves, with the version each had when saved. A tensor that
    forward got as an input and returned (as-is, not dirty) is saved as the input."""
    tensor_type = _function.Tensor
    input_ids = {id(t) for t in inputs if isinstance(t, tensor_type)} - dirty
    returned = {id(out): result for out, result in zip(outputs, results) if isinstance(result, tensor_type)}
    saved, versions = [], []
    for item in ctx._saved:
        if item is None:
            saved.append(None)
            versions.append(None)
            continue
        if isinstance(item, tensor_type):
            result = None if id(item) in input_ids else returned.get(id(item))
            if result is not None and result._grad_fn is ctx:
                saved.append(_node._SavedOutput(result._data, result._version_counter))
                versions.append(result._version_counter[0])
                continue
            if result is not None:
                saved.append(result)  # an output of a several-output node: its port is its grad_fn
                versions.append(result._version_counter[0])
                continue
            saved.append(item)
            versions.append(item._version_counter[0])
        else:
            raise TypeError(
                f"{ctx.name()[: -len('Backward')]}: save_for_backward can only save tensors (or None), "
                f"but argument {len(saved)} is a {type(item).__name__}; keep other values as ctx "
                "attributes (ctx.scale = scale)"
            )
    ctx._saved = saved
    ctx._saved_versions = versions
    if _graph.active_pair() is not None:
        _node.pack_saved(ctx)
