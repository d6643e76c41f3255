"""`CompiledFunction`: guards, the trace cache, recompiles, and running a compiled call.

A call's key holds, per argument, the tensor's shape, dtype, device and requires_grad (or the Python
value of a non-tensor), which arguments are one and the same tensor (a trace of ``f(x, x)`` reads
one input, so ``f(x, y)`` needs its own), and whether grad mode is on. Each key maps to traces, each
with guards on what the trace found on its own: the tensors it captured (Parameters: shape, dtype,
device, requires_grad; their data is read afresh on every call), the values of integer inputs and
captured integer tensors (a step counter) that Python code branched on, and the Python state its
free names held (guards.py: closure and global tensors, numbers and Modules, whose training flags
and attributes steer the trace).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from numdiff.autograd.grad_mode import _state
from numdiff.backend import backend_for
from numdiff.compile.backward import trace_backward
from numdiff.compile.codegen import ShapeChangedError
from numdiff.compile.guards import PythonGuard
from numdiff.compile.program import Program, build
from numdiff.compile.region import RegionState, attach
from numdiff.compile.trace import Tracer, Tracing, UnsupportedInCompileError, runs_inline
from numdiff.tensor import Tensor

RECOMPILE_LIMIT = 8


class Trace:
    """One trace of the function and its compiled program, with the guards it was made under."""

    def __init__(self, program: Program, captured: list, guarded_values: dict, python_guard: PythonGuard,
                 output_form: Any) -> None:
        self.program = program
        self.captured = captured
        self.captured_guard = [_tensor_key(t) for t in captured]
        self.guarded_values = guarded_values  # (kind, slot) of an integer tensor -> bytes of its traced value
        self.python_guard = python_guard
        self.aliases: list = []  # (input slot, the outside tensor that argument was while tracing)
        self.output_form = output_form

    def matches(self, tensors: list) -> bool:
        for t, expected in zip(self.captured, self.captured_guard):
            if _tensor_key(t) != expected:
                return False
        if not self.python_guard.holds():
            return False
        for slot, outside in self.aliases:
            if tensors[slot]._data is not outside._data:
                return False
        for slot, data in self.guarded_values.items():
            if _value_bytes(_tensor_at(slot, tensors, self.captured)) != data:
                return False
        return True


def _value_bytes(t: Tensor) -> bytes:
    """The bytes of a tensor's values, copied to the host first when it lives on a GPU."""
    data = t._data
    return data.tobytes() if type(data) is np.ndarray else backend_for(data).to_host(data).tobytes()


def _tensor_key(t: Tensor) -> tuple:
    data = t._data
    if type(data) is np.ndarray:
        return (data.shape, data.dtype, t._requires_grad)
    return (data.shape, data.dtype, t._requires_grad, str(data.device))


def _flatten_output(result: Any) -> tuple[list, Any]:
    """The tensors a call returned and how to rebuild its structure (tensor, tuple or list)."""
    if isinstance(result, Tensor):
        return [result], None
    if isinstance(result, (tuple, list)) and all(isinstance(r, Tensor) for r in result):
        return list(result), type(result)
    raise UnsupportedInCompileError(
        "numdiff.compile: a compiled function must return a Tensor, or a tuple or list of Tensors; "
        f"got {type(result).__name__}"
    )


class CompiledFunction:
    """A function traced on its first call per input signature and replayed as generated code.

    >>> f = numdiff.compile(lambda x: (x.sin() * x).sum())
    >>> x = numdiff.randn(8, requires_grad=True)
    >>> f(x).backward(); x.grad.shape
    numdiff.Size([8])
    """

    def __init__(self, fn: Any, dynamic: bool = False) -> None:
        self.fn = fn
        self.dynamic = dynamic
        self.traces: dict = {}
        self.compile_count = 0
        self.eager_reason: str | None = None
        self._warned_recompiles = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.eager_reason is not None or runs_inline():
            # Inside another compiled function's trace the ops are recorded into that trace; under
            # vmap they are batched.
            return self.fn(*args, **kwargs)
        tensors = [a for a in args if isinstance(a, Tensor)]
        if (len(tensors) != len(args) or kwargs) and _nested_tensors(args, kwargs):
            self.eager_reason = "tensors inside lists, tuples, dicts or keyword arguments"
            warnings.warn(f"numdiff.compile: {_name(self.fn)} received {self.eager_reason}, which are not "
                          "traced as inputs; it runs eagerly from now on (pass tensors positionally)",
                          stacklevel=2)
            return self.fn(*args, **kwargs)
        key = self._key(args, kwargs)
        for candidate in self.traces.get(key, ()):
            if candidate.matches(tensors):
                return self._run(candidate, tensors, args, kwargs)
        trace, eager_result = self._trace(args, kwargs, tensors)
        if trace is None:
            # The trace's own run is this call's eager result when it ran to the end.
            return self.fn(*args, **kwargs) if eager_result is None else eager_result
        self.traces.setdefault(key, []).append(trace)
        return self._run(trace, tensors, args, kwargs)

    def _key(self, args: tuple, kwargs: dict) -> tuple:
        parts = [_state.enabled]
        first_seen: dict = {}  # id of an argument's array -> the number of distinct arrays before it
        for a in args:
            if isinstance(a, Tensor):
                parts.append((*_tensor_key(a), first_seen.setdefault(id(a._data), len(first_seen))))
            else:
                parts.append(("py", type(a), _hashable(a)))
        parts.extend((name, _hashable(value)) for name, value in sorted(kwargs.items()))
        return tuple(parts)

    # ------------------------------------------------------------------ tracing
    def _trace(self, args: tuple, kwargs: dict, tensors: list) -> tuple[Trace | None, Any]:
        self.compile_count += 1
        if self.compile_count > RECOMPILE_LIMIT and not self._warned_recompiles:
            self._warned_recompiles = True
            warnings.warn(
                f"numdiff.compile: {_name(self.fn)} was traced {self.compile_count} times (new shapes, "
                "dtypes, devices, requires_grad patterns or Python state each retrace); see .compile_count",
                stacklevel=3,
            )
        python_guard = PythonGuard(self.fn, args + tuple(kwargs.values()))
        tracer = Tracer()
        for slot, t in enumerate(tensors):
            tracer.add_input(t, slot)
        try:
            with Tracing(tracer):
                result = self.fn(*args, **kwargs)
                if not python_guard.holds():
                    # Every call would find other Python state than its trace was made under.
                    self.eager_reason = "it changes the Python state it reads (attributes, globals, submodules)"
                    warnings.warn(f"numdiff.compile: {_name(self.fn)} cannot be replayed: {self.eager_reason}; "
                                  "it runs eagerly from now on", stacklevel=3)
                    return None, result
                outputs, form = _flatten_output(result)
                output_values = [tracer.value_for(t) for t in outputs]
                differentiable = self._differentiable(tensors, tracer)
                grads = trace_backward(tracer, outputs, differentiable) if differentiable else []
        except UnsupportedInCompileError as error:
            self.eager_reason = str(error)
            warnings.warn(f"{error}; running {_name(self.fn)} eagerly from now on", stacklevel=3)
            return None, None
        on_host = all(type(t._data) is np.ndarray for t in tensors + tracer.captured)
        program = build(tracer, output_values, grads, cuda=not on_host)
        guarded = {slot: _value_bytes(_tensor_at(slot, tensors, tracer.captured)) for slot in tracer.value_guarded}
        trace = Trace(program, tracer.captured, guarded, python_guard, form)
        # ``f(w)`` where f also reads w itself traced one value for both: only w may reuse it.
        slot_of_array = {id(t._data): slot for slot, t in enumerate(tensors)}
        trace.aliases = [(slot_of_array[id(t._data)], t) for t in python_guard.outside_tensors()
                         if id(t._data) in slot_of_array]
        values = program.graph.values
        trace.differentiable_slots = [_slot_of(t, tensors, tracer.captured) for t in differentiable]
        # An output that is an argument (``return x``) is that argument, as in eager mode.
        trace.passthrough = [(position, (values[index].kind, values[index].slot))
                             for position, index in enumerate(output_values)
                             if values[index].kind in ("input", "captured")]
        trace.grad_output_slots = {
            slot for slot, t in enumerate(outputs) if t._grad_fn is not None and t._grad_fn in tracer.node_call
        }
        return trace, None

    @staticmethod
    def _differentiable(tensors: list, tracer: Tracer) -> list:
        if not _state.enabled:
            return []
        seen: dict = {}
        for t in tensors + tracer.captured:
            if t._requires_grad and id(t) not in seen:
                seen[id(t)] = t
        return list(seen.values())

    # ------------------------------------------------------------------ running
    def _run(self, trace: Trace, tensors: list, args: tuple, kwargs: dict) -> Any:
        program = trace.program
        inputs = [t._data for t in tensors]
        captured = [t._data for t in trace.captured]
        try:
            outputs, saved = program.forward(inputs, captured)
        except ShapeChangedError:
            # A data-dependent shape: this call's data needs another graph; eager is always right.
            return self.fn(*args, **kwargs)
        if not trace.grad_output_slots:
            results = attach(list(outputs), None, [], set())
        else:
            differentiable = [_tensor_at(slot, tensors, trace.captured) for slot in trace.differentiable_slots]
            saved_tensors = [_tensor_at((kind, slot), tensors, trace.captured)
                             for _, slot, kind in program.saved_inputs]
            grad_shapes = [(slot, outputs[slot]) for slot in trace.grad_output_slots]
            state = RegionState(program, saved, differentiable, saved_tensors, len(outputs), grad_shapes,
                                lambda: _flatten_output(self.fn(*args, **kwargs))[0])
            results = attach(list(outputs), state, differentiable, trace.grad_output_slots)
        for position, slot in trace.passthrough:
            results[position] = _tensor_at(slot, tensors, trace.captured)
        return results[0] if trace.output_form is None else trace.output_form(results)

    @property
    def sources(self) -> list[str]:
        """The generated source of every trace so far."""
        return [t.program.source for traces in self.traces.values() for t in traces]


def _slot_of(t: Tensor, tensors: list, captured: list) -> tuple:
    for slot, candidate in enumerate(tensors):
        if candidate is t:
            return ("input", slot)
    return ("captured", next(i for i, c in enumerate(captured) if c is t))


def _tensor_at(slot: tuple, tensors: list, captured: list) -> Tensor:
    kind, index = slot
    return tensors[index] if kind == "input" else captured[index]


def _nested_tensors(args: tuple, kwargs: dict) -> bool:
    stack = [a for a in args if not isinstance(a, Tensor)] + list(kwargs.values())
    while stack:
        value = stack.pop()
        if isinstance(value, Tensor):
            return True
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return False


def _hashable(value: Any) -> Any:
    """A key part equal for equal values: NumPy arrays by their bytes (repr elides long ones)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if type(value) in (list, tuple):
        return (type(value), tuple(_hashable(item) for item in value))
    if type(value) is dict:
        return (dict, tuple((_hashable(k), _hashable(v)) for k, v in value.items()))
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
