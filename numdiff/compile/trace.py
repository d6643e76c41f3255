"""Tracing: run the function once, eagerly, and record every `Function.apply` call into a graph.

While a trace runs, `Function.apply` is wrapped: the op still runs (and records its node on the
tape, so the backward can be traced from the real nodes afterwards), and the call is appended to
the graph with its attrs, the values it read and wrote, and the arrays its forward left on ctx.
Reading a computed tensor's value on the host (``if x.sum() > 0:``, ``.item()``, ``.numpy()``)
raises `GraphBreakError` naming the user's line, since replaying the graph would silently keep
the branch taken while tracing, unless it depends only on tensors from outside (then it guards
the trace). In-place updates are functionalized and random draws recorded (effects.py); hooks and a
backward pass inside the function are not traced (`UnsupportedInCompileError`): the compiled
function then runs eagerly. The Tracer's handling of each is in trace_events.py.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from numdiff._host_functions import TRACERS
from numdiff.autograd.function import Function, _SavedOutput
from numdiff.compile.effects import Effects, root
from numdiff.compile.graph import Graph, OpCall, ValueRef
from numdiff.compile.rules import backward_is_traced
from numdiff.compile.trace_events import GraphBreakError, TraceEvents, UnsupportedInCompileError, user_line
from numdiff.tensor import Tensor

__all__ = ["GraphBreakError", "Suspended", "Tracer", "Tracing", "UnsupportedInCompileError", "tracing_now", "user_line"]


def _is_array(x: Any) -> bool:
    return type(x) is np.ndarray or (hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "to_host"))


class Tracer(TraceEvents):
    """Records op calls into a forward graph, then (with `begin_backward`) into a backward one;
    what it does on host reads, in-place ops, draws and hooks is in trace_events.py."""

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
        # ids of the arrays of tensors reachable from outside the function (its arguments and the
        # state the guards walk); None: unknown, every captured tensor counts as outside.
        self.outside: set | None = None
        self.grad_guards: dict = {}  # (kind, slot) of a tensor whose .grad was read -> that grad
        self.leaf_hooks: dict = {}  # id of an outside tensor -> (tensor, its hook ids when first seen)

    # ------------------------------------------------------------------ values
    def is_outside(self, tensor: Tensor) -> bool:
        """Whether a captured tensor outlives the call (a Parameter, a global), rather than being
        made by the function from Python values (``numdiff.zeros(3)``, ``tensor(WEIGHTS)``)."""
        return self.outside is None or id(tensor._data) in self.outside

    def fresh_slots(self) -> list:
        """The captured slots of tensors the function made: each call gets a copy of their values."""
        return [slot for slot, t in enumerate(self.captured) if not self.is_outside(t)]

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

    def begin_backward(self) -> None:
        self.graph = self.backward

    # ------------------------------------------------------------------ host reads
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


_HOST_READS = ("__bool__", "item", "numpy", "tolist", "__float__", "__int__", "__index__", "__deepcopy__")


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

