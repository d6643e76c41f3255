"""Tracing: run the function once, eagerly, and record every `Function.apply` call into a graph.

While a trace runs, a `TraceLevel` is the innermost interpreter of the tracing thread
(numdiff.autograd.transform_state): each op still runs (and records its node on the tape, so the
backward can be traced from the real nodes afterwards), and the call is appended to the graph
with its attrs, the values it read and wrote, and the arrays its forward left on ctx.
Reading a computed tensor's value on the host (``if x.sum() > 0:``, ``.item()``, ``.numpy()``)
raises `GraphBreakError` naming the user's line, since replaying the graph would silently keep
the branch taken while tracing, unless it depends only on tensors from outside (then it guards
the trace). In-place updates are functionalized and random draws recorded (effects.py); hooks and a
backward pass inside the function are not traced (`UnsupportedInCompileError`): the compiled
function then runs eagerly. The Tracer's handling of each is in trace_events.py.
"""

from __future__ import annotations

from typing import Any

from numdiff._inplace import run_inplace
from numdiff.autograd.node import _SavedOutput
from numdiff.autograd.transform_state import (
    Interpreter,
    graph_recording,
    innermost,
    pop,
    push,
    transforms,
    vmap_active,
)
from numdiff.backend import is_host
from numdiff.compile.effects import Effects, root
from numdiff.compile.graph import Graph, OpCall, ValueRef
from numdiff.compile.host_steps import HostSteps
from numdiff.compile.rules import backward_is_traced
from numdiff.compile.trace_events import GraphBreakError, TraceEvents, UnsupportedInCompileError, user_line
from numdiff.tensor import Tensor

__all__ = ["GraphBreakError", "Suspended", "Tracer", "Tracing", "UnsupportedInCompileError", "tracing_now", "user_line"]


def _is_array(x: Any) -> bool:
    return is_host(x) or (hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "to_host"))


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
        self.host_steps = HostSteps()  # zero_grad, loss.backward(), optimizer.step(): run after each call

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


class TraceLevel(Interpreter):
    """numdiff.compile's interpreter: each op runs at the level below (eagerly, recording its
    node on the tape, so the backward can be traced from the real nodes afterwards) and is
    recorded into the tracer's graph. A user Function's forward runs below too, so its own ops
    are not recorded: it replays as one call. Host reads, in-place updates, random draws, .grad
    reads go to the Tracer's events (trace_events.py); a backward pass is refused
    (`UnsupportedInCompileError`), so the compiled function then runs eagerly."""

    records_graph = True

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def apply(self, cls: Any, inputs: tuple, attrs: dict) -> Tensor:
        result = super().apply(cls, inputs, attrs)
        self.tracer.record(cls, inputs, attrs, result)
        return result

    def host_call(self, function: Any, args: tuple, kwargs: dict) -> Any:
        # Run at this level: the ops the function runs are recorded before it is.
        result = super().host_call(function, args, kwargs)
        self.tracer.record_host(function, args, kwargs, result)
        return result

    def host_read(self, tensor: Tensor, what: str) -> None:
        self.tracer.check_host_read(tensor, what)
        super().host_read(tensor, what)

    def inplace(self, tensor: Tensor, op: str, compute: Any) -> Any:
        # Taken over: run here (its ops recorded), then functionalized (effects.py).
        return self.tracer.inplace_update(tensor, op, compute, run_inplace)

    def draw(self, generator: Any) -> None:
        self.tracer.random_draw()

    def random_call(self, function: Any, args: tuple, kwargs: dict) -> Any:
        return self.tracer.random_call(function, args, kwargs, lambda: self.run_below(function, args, kwargs))

    def grad_read(self, tensor: Tensor) -> None:
        if self.tracer.host_steps:
            self.tracer.unsupported("reading .grad after zero_grad(), backward() or an optimizer step")
        self.tracer.grad_read(tensor)
        super().grad_read(tensor)

    def defer_backward(self, root: Tensor, options: dict) -> bool:
        tracer = self.tracer
        tracer.host_steps.add_backward(root, options, len(tracer.forward.calls), id(root._data) in tracer.value_of)
        return True

    def host_step(self, owner: Any, kind: str, run: Any) -> Any:
        self.tracer.host_steps.add_step(owner, kind, run, len(self.tracer.forward.calls))
        return None

    def run_below(self, function: Any, args: tuple, kwargs: dict) -> Any:
        """``function(*args, **kwargs)`` at the level below: its ops and draws are not this trace's."""
        state = transforms
        state.interpreter = self.parent
        try:
            return function(*args, **kwargs)
        finally:
            state.interpreter = self

    def backward(self, capture: bool, create_graph: bool) -> bool:
        """Refuse ``loss.backward()`` inside the traced function; trace ``autograd.grad``.

        ``loss.backward()`` writes ``.grad`` and frees the graph the trace still needs, so a replay
        would not redo it. ``autograd.grad`` (numdiff.func.grad calls it) is traced like any other
        computation: without create_graph too, its backward formulas run as recorded ops (their
        create_graph form; True asks the engine for it) and the gradients come back detached.
        """
        if not capture:
            raise UnsupportedInCompileError(
                f"numdiff.compile: backward() inside the compiled function cannot be replayed by a compiled "
                f"graph (at {user_line()}); compile the forward and loss and call backward() outside"
            )
        super().backward(capture, create_graph)
        return True


def tracing_now() -> bool:
    """True while a trace records op calls in this thread (a compiled function called inside
    another's trace)."""
    return graph_recording()


def runs_inline() -> bool:
    """Whether a compiled function called now runs its Python function as it is, at the current
    level: inside another trace (whose ops are recorded there), or under numdiff.func.vmap in this
    thread, where each op goes to its batching rule; a graph traced on batched tensors would see
    one example's view of each."""
    return vmap_active() or tracing_now()


class Suspended:
    """Context manager: op calls inside are not recorded (an eager backward while tracing): they
    run at the level below the innermost trace."""

    def __enter__(self) -> None:
        self.previous = transforms.interpreter
        level = innermost(TraceLevel)
        if level is not None:
            transforms.interpreter = level.parent

    def __exit__(self, *exc: Any) -> None:
        transforms.interpreter = self.previous


class Tracing:
    """Context manager: record this thread's op calls into `tracer` (numdiff.compile's interpreter
    on the thread's stack; other threads run eagerly meanwhile)."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.level = TraceLevel(tracer)

    def __enter__(self) -> Tracer:
        push(self.level)
        return self.tracer

    def __exit__(self, *exc: Any) -> None:
        pop(self.level)
