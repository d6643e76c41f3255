"""Tracing: run the function once, eagerly, and record every `Function.apply` call into a graph.

While a trace runs, `Function.apply` is wrapped: the op still runs (and records its node on the
tape, so the backward can be traced from the real nodes afterwards), and the call is appended to
the graph with its attrs, the values it read and wrote, and the arrays its forward left on ctx.
Reading a computed tensor's value on the host (``if x.sum() > 0:``, ``.item()``, ``.numpy()``)
raises `GraphBreakError` naming the user's line, since replaying the graph would silently keep
the branch taken while tracing. In-place updates, random numbers and a backward pass inside the
function are not traced (`UnsupportedInCompileError`); the compiled function then runs eagerly.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import numpy as np

from numdiff._host_functions import TRACERS
from numdiff.autograd.function import Function, _SavedOutput
from numdiff.compile.effects import Effects, root, unreplayable_inplace
from numdiff.compile.graph import Graph, OpCall, ValueRef
from numdiff.compile.rules import backward_is_traced
from numdiff.tensor import Tensor

_NUMDIFF_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class GraphBreakError(RuntimeError):
    """Python control flow read a tensor's value while tracing a compiled function."""


class UnsupportedInCompileError(RuntimeError):
    """The traced function did something a compiled graph cannot replay (in-place, random)."""


def user_line() -> str:
    """The innermost stack frame outside numdiff: the user's line that triggered something."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(frame.filename).startswith(_NUMDIFF_DIR):
            return f'File "{frame.filename}", line {frame.lineno}, in {frame.name}: {frame.line}'
    return "<unknown line>"


def _is_array(x: Any) -> bool:
    return type(x) is np.ndarray or (hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "to_host"))


class Tracer:
    """Records op calls into a forward graph, then (with `begin_backward`) into a backward one."""

    def __init__(self) -> None:
        self.forward = Graph()
        self.backward = Graph(values=self.forward.values)
        self.graph = self.forward
        self.value_of: dict[int, int] = {}
        self.alive: list = []  # arrays whose id() is a key of value_of must outlive the trace
        self.captured: list[Tensor] = []
        self.constants: dict[int, Any] = {}  # value index -> baked array
        self.value_guarded: set[tuple] = set()  # ("input" | "captured", slot): values the trace depends on
        self.node_call: dict = {}  # recorded Node -> index of its call in the forward graph
        self.producer: dict = {}  # forward value index -> the OpCall that computes it
        self.effects = Effects()
        self.grad_guards: dict = {}  # (kind, slot) of a tensor whose .grad was read -> that grad
        self.leaf_hooks: dict = {}  # id of an outside tensor -> (tensor, its hook ids when first seen)

    # ------------------------------------------------------------------ values
    def _note_hooks(self, tensor: Tensor) -> None:
        if id(tensor) not in self.leaf_hooks:
            self.leaf_hooks[id(tensor)] = (tensor, _hook_ids(tensor))

    def _bind(self, array: Any, index: int) -> int:
        self.value_of[id(array)] = index
        self.alive.append(array)
        return index

    def add_input(self, tensor: Tensor, slot: int) -> int:
        known = self.value_of.get(id(tensor._data))
        if known is not None:
            return known
        data = tensor._data
        self._note_hooks(tensor)
        return self._bind(data, self.graph.add_value(data.shape, data.dtype, "input", slot))

    def add_grad(self, array: Any, slot: int) -> int:
        return self._bind(array, self.graph.add_value(array.shape, array.dtype, "grad", slot))

    def value_for(self, tensor: Tensor) -> int:
        known = self.value_of.get(id(tensor._data))
        if known is not None:
            return known
        data = tensor._data
        if self.graph is self.forward:
            # A tensor from outside (a Parameter, a buffer, a closure): read afresh on every call.
            if id(root(data)) in self.effects.written_roots:
                # It shares memory with a tensor written earlier in the trace: its value at the
                # start of each call would not be the one this read saw.
                self.unsupported("reading a tensor that views one the function wrote in place")
            self.captured.append(tensor)
            self._note_hooks(tensor)
            return self._bind(data, self.graph.add_value(data.shape, data.dtype, "captured", len(self.captured) - 1))
        return self.constant(data)

    def constant(self, array: Any) -> int:
        index = self._bind(array, self.graph.add_value(array.shape, array.dtype, "const"))
        self.constants[index] = array
        self.graph.values[index].constant = array
        return index

    def _attr(self, value: Any) -> Any:
        if _is_array(value):
            known = self.value_of.get(id(value))
            return ValueRef(known if known is not None else self.constant(value))
        if isinstance(value, Tensor):
            return ValueRef(self.value_for(value))
        if type(value) is tuple:
            # Index keys hold arrays inside tuples.
            return tuple(self._attr(item) for item in value)
        return value

    # ------------------------------------------------------------------ recording
    def record(self, cls: Any, inputs: tuple, attrs: dict, result: Tensor, host: bool = False) -> None:
        call_inputs = []
        for t in inputs:
            if isinstance(t, Tensor):
                call_inputs.append(self.value_for(t))
            else:
                call_inputs.append(("lit", t))
        recorded_attrs = {name: self._attr(value) for name, value in attrs.items()}
        data = result._data
        out = self.graph.add_value(data.shape, data.dtype, "op")
        call = OpCall(cls, call_inputs, recorded_attrs, out, tensor_forward=host or not cls.array_forward, host=host)
        self.graph.calls.append(call)
        if self.graph is self.forward:
            self.producer[out] = call
        node = result._grad_fn
        if node is not None and not host and self.graph is self.forward:
            self.node_call[node] = len(self.graph.calls) - 1
            self._record_ctx(node, call, inputs, data)
            if not backward_is_traced(cls):
                # The generated backward will hand the replayed ctx itself to the op's backward.
                call.ctx_outputs[("object", "")] = self.graph.add_value((), None, "ctx")
        # After the ctx arrays: a forward that returns an array it also saved maps to the output.
        self._bind(data, out)

    def record_host(self, function: Any, args: tuple, kwargs: dict, result: Any) -> None:
        """A call of a host function (numdiff._host_functions): a step rerun on each call's arrays,
        unless its result is already a value of the graph (it returned an op's output)."""
        if isinstance(result, Tensor) and id(result._data) not in self.value_of:
            self.record(function, args, kwargs, result, host=True)

    def _record_ctx(self, node: Any, call: OpCall, inputs: tuple, out: Any) -> None:
        """Arrays the forward left on ctx that are not its inputs or output become values."""
        input_arrays = {id(t._data) for t in inputs if isinstance(t, Tensor)}
        for name, value in node.__dict__.items():
            if _is_array(value) and id(value) not in input_arrays and value is not out:
                index = self.graph.add_value(value.shape, value.dtype, "ctx")
                call.ctx_outputs[("attr", name)] = self._bind(value, index)
                self.producer[index] = call
        for position, item in enumerate(node._saved):
            if type(item) is _SavedOutput or not isinstance(item, Tensor):
                continue
            data = item._data
            if id(data) in input_arrays or data is out or item._grad_fn is not None:
                continue
            if any(t is item for t in inputs):
                continue
            index = self.graph.add_value(data.shape, data.dtype, "ctx")
            call.ctx_outputs[("saved", position)] = self._bind(data, index)
            self.producer[index] = call

    def unsupported(self, what: str) -> None:
        raise UnsupportedInCompileError(
            f"numdiff.compile: {what} cannot be replayed by a compiled graph (at {user_line()})"
        )

    # ------------------------------------------------------------------ effects (effects.py)
    def inplace_update(self, target: Tensor, op: str, compute: Any, apply: Any) -> Tensor:
        """An in-place op while tracing: ``apply(target, op, compute)`` runs it (the eager
        numdiff._inplace.apply_inplace), and the value it computed becomes `target`'s from here
        on; an argument or outside tensor (a buffer) written gets it written back after each call."""
        reason = unreplayable_inplace(target, op, self.alive) if self.graph is self.forward else op
        if reason is not None:
            self.unsupported(reason)
        before = self.forward.values[self.value_for(target)]
        if before.kind in ("input", "captured"):
            self.effects.note_write(before.kind, before.slot, target)
        computed: list = []
        result = apply(target, op, lambda old: computed.append(compute(old)) or computed[-1])
        node = computed[-1]._grad_fn
        if node in self.node_call:
            # The op saved a copy of the old value (numdiff._inplace snapshots it): that value.
            for item in node._saved:
                if isinstance(item, Tensor) and id(item._data) not in self.value_of:
                    self._bind(item._data, before.index)
        written = self.value_for(computed[-1])
        value = self.forward.values[written]
        if (value.shape, value.dtype) != (target._data.shape, target._data.dtype):
            written = self.value_for(computed[-1].to(target.dtype))
        self.effects.written_roots.add(id(root(target._data)))
        self._bind(target._data, written)
        return result

    def random_call(self, function: Any, args: tuple, kwargs: dict) -> Tensor:
        """A call of a random function (numdiff._host_functions.random_function) while tracing:
        run it, recorded as a step that draws afresh on every call."""
        self.effects.note_generators(args, kwargs)
        _active.append(None)  # its draws are this step's, not refused
        try:
            result = function(*args, **kwargs)
        finally:
            _active.pop()
        if self.graph is not self.forward:
            self.unsupported("drawing random numbers in a backward")
        self.record(function, args, kwargs, result, host=True)
        self.graph.calls[-1].random = True
        return result

    def random_draw(self) -> None:
        """A draw from a generator outside numdiff's random functions while tracing."""
        self.unsupported("drawing random numbers outside numdiff's random functions")

    def write_targets(self) -> list:
        """The tensors the function wrote in place that outlive the call, and their last values."""
        return [(target, self.value_of[id(target._data)]) for target in self.effects.writes.values()]

    def grad_read(self, tensor: Tensor) -> None:
        """``t.grad`` read while tracing: the trace holds while t's .grad is the same object (or
        None); the gradient's values are read afresh on every call, as any captured tensor's."""
        if self.graph is not self.forward:
            return
        value = self.forward.values[self.value_for(tensor)]
        if value.kind in ("input", "captured"):
            self.grad_guards.setdefault((value.kind, value.slot), tensor._grad)

    def hook_registered(self, what: str, shape: tuple) -> None:
        """A hook or ``retain_grad()`` on a tensor while tracing: the compiled backward would not
        call it (nor keep the gradient), so the function runs eagerly."""
        raise UnsupportedInCompileError(
            f"numdiff.compile: {what} on a tensor of shape {tuple(shape)} inside the compiled "
            f"function would be ignored by the compiled backward (at {user_line()}); register it on "
            "the compiled function's output or inputs, outside the function"
        )

    def check_hooks(self) -> None:
        """After the forward trace: refuse (via `hook_registered`) any hook or retain_grad that the
        function registered on a tensor it computed, or on an argument or captured tensor; those
        on outside tensors are removed first, since the eager rerun registers them again."""
        for node, position in self.node_call.items():
            shape = self.forward.values[self.forward.calls[position].output].shape
            if node._pre_hooks:
                self.hook_registered("register_hook()", shape)
            if node._retained is not None:
                self.hook_registered("retain_grad()", shape)
        for tensor, before in self.leaf_hooks.values():
            if _hook_ids(tensor) != before:
                for table, ids in zip((tensor._hooks, tensor._post_accumulate_hooks), before):
                    for key in set(table or ()) - ids:
                        del table[key]
                self.hook_registered("a tensor hook", tuple(tensor.shape))

    def begin_backward(self) -> None:
        self.graph = self.backward

    # ------------------------------------------------------------------ host reads
    def check_host_read(self, tensor: Tensor, what: str) -> None:
        """A host read of `tensor`'s value (``.item()``, ``bool()``, ``.tolist()``, ``.numpy()``).

        Python code then decides on the value, so the trace holds only while the value is the
        same. A value computed from tensors outside the function (a global, a Parameter, a
        buffer, a step counter) and integer arguments guards the trace on those tensors' bytes:
        a later call whose values differ retraces. A value that depends on a float argument, a
        random draw or a gradient would retrace on every call: that raises GraphBreakError.
        """
        index = self.value_of.get(id(tensor._data))
        if index is None:
            if self.graph is not self.forward:
                return
            index = self.value_for(tensor)  # a tensor from outside: captured, so its value guards
        sources = self._sources(index)
        if sources is not None:
            self.value_guarded.update(sources)
            return
        raise GraphBreakError(
            f"numdiff.compile: {what} reads the value of a tensor computed inside the compiled "
            f"function (shape {tuple(tensor.shape)}), so the traced graph would silently keep the "
            f"branch taken on the first call. At {user_line()}. Move the value-dependent Python "
            "code outside the compiled function, or express it with tensor ops (numdiff.where)."
        )

    def _sources(self, index: int) -> set | None:
        """The ("input" | "captured", slot) values that value `index` is computed from, or None
        when it depends on anything a guard cannot compare (a float argument, a random draw)."""
        found: set = set()
        pending, seen = [index], set()
        values = self.forward.values
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            value = values[current]
            if value.kind == "captured" or value.kind == "input" and value.dtype.kind in "biu":
                found.add((value.kind, value.slot))
            elif value.kind in ("op", "ctx") and current in self.producer:
                call = self.producer[current]
                if call.random:
                    return None
                pending.extend(i for i in call.inputs if not isinstance(i, tuple))
                pending.extend(_value_refs(call.attrs.values()))
            elif value.kind != "const":
                return None
        return found


def _hook_ids(tensor: Tensor) -> tuple:
    return tuple(set(table or ()) for table in (tensor._hooks, tensor._post_accumulate_hooks))


def _value_refs(attrs: Any) -> list:
    """The value indices among recorded attrs (ValueRef, possibly inside tuples)."""
    found = []
    for item in attrs:
        if isinstance(item, ValueRef):
            found.append(item.index)
        elif type(item) is tuple:
            found.extend(_value_refs(item))
    return found


_active: list[Tracer] = TRACERS  # shared with the host functions (numdiff._host_functions)


def tracing_now() -> bool:
    """True while a trace records op calls (a compiled function called inside another's trace)."""
    return bool(_active) and _active[-1] is not None


class Suspended:
    """Context manager: op calls inside are not recorded (an eager backward while tracing)."""

    def __enter__(self) -> None:
        _active.append(None)

    def __exit__(self, *exc: Any) -> None:
        _active.pop()


_original_apply = Function.__dict__["apply"].__func__


def _traced_apply(cls: type, *inputs: Any, **attrs: Any) -> Tensor:
    tracer = _active[-1]
    if tracer is None:
        return _original_apply(cls, *inputs, **attrs)
    if not cls.array_forward:
        # A user Function: its forward's own ops are not recorded, it replays as one call.
        _active.append(None)
        try:
            result = _original_apply(cls, *inputs, **attrs)
        finally:
            _active.pop()
    else:
        result = _original_apply(cls, *inputs, **attrs)
    tracer.record(cls, inputs, attrs, result)
    return result


def _guarded_read(name: str):
    original = getattr(Tensor, name)

    def read(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        tracer = _active[-1] if _active else None
        if tracer is not None:
            tracer.check_host_read(self, f"Tensor.{name}()")
        return original(self, *args, **kwargs)

    read.__name__ = name
    return original, read


def _traced_inplace(original: Any) -> Any:
    def apply_inplace(target: Tensor, op: str, compute: Any) -> Tensor:
        tracer = _active[-1] if _active else None
        if tracer is None:
            return original(target, op, compute)
        return tracer.inplace_update(target, op, compute, original)

    return apply_inplace


def _traced_rng(original: Any) -> Any:
    def rng(generator: Any) -> Any:
        tracer = _active[-1] if _active else None
        if tracer is not None:
            tracer.random_draw()
        return original(generator)

    return rng


_HOST_READS = ("__bool__", "item", "numpy", "tolist", "__float__", "__int__", "__index__")


def _guarded_backward(original: Any) -> Any:
    """engine.run_backward, refusing a backward pass inside the traced function.

    ``loss.backward()`` writes ``.grad`` and frees the graph the trace still needs, and
    ``autograd.grad`` without create_graph computes outside the recorded ops, so a replay would
    return the first call's gradient. ``autograd.grad(create_graph=True)`` records its ops and is
    traced like any other computation.
    """

    def run_backward(outputs: Any, grad_outputs: Any, retain_graph: bool, create_graph: bool,
                     inputs: Any = None, capture: bool = False, allow_unused: bool = False) -> Any:
        tracer = _active[-1] if _active else None
        if tracer is not None and not (capture and create_graph):
            what = "autograd.grad without create_graph=True" if capture else "backward()"
            raise UnsupportedInCompileError(
                f"numdiff.compile: {what} inside the compiled function cannot be replayed by a compiled "
                f"graph (at {user_line()}); compile the forward and loss and call backward() outside"
            )
        return original(outputs, grad_outputs, retain_graph, create_graph, inputs, capture, allow_unused)

    return run_backward


class Tracing:
    """Context manager: install the tracing hooks for `tracer` (one trace at a time)."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.restore: list = []

    def __enter__(self) -> Tracer:
        import numdiff._inplace as inplace
        import numdiff.creation as creation

        _active.append(self.tracer)
        self._patch(Function, "apply", classmethod(_traced_apply))
        for name in _HOST_READS:
            original, read = _guarded_read(name)
            self._patch(Tensor, name, read)
        self._patch(inplace, "apply_inplace", _traced_inplace(inplace.apply_inplace))
        # Functions that compute without an op record themselves (numdiff._host_functions).
        self._patch(creation, "rng", _traced_rng(creation.rng))
        from numdiff.autograd import engine

        guarded_backward = _guarded_backward(engine.run_backward)
        self._patch(engine, "run_backward", guarded_backward)
        # Tensor.backward's module (``numdiff.tensor`` as an attribute is the factory function).
        self._patch(sys.modules[Tensor.__module__], "run_backward", guarded_backward)
        return self.tracer

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self.restore.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, value)

    def __exit__(self, *exc: Any) -> None:
        for owner, name, value in reversed(self.restore):
            setattr(owner, name, value)
        _active.pop()

