"""`CompiledFunction`: guards, the trace cache, recompiles, and running a compiled call.

A call's key holds, per argument, the tensor's shape, dtype, device and requires_grad (or the Python
value of a non-tensor), which arguments are one and the same tensor (a trace of ``f(x, x)`` reads
one input, so ``f(x, y)`` needs its own), grad mode, and the default dtype and device. Each key
maps to traces, each with guards on what the trace found on its own: the tensors it captured
(Parameters: shape, dtype, device, requires_grad; their data is read afresh on every call), the
values of outside tensors and integer inputs that Python code read on the host (``.item()``), the
``.grad`` objects it read, and the Python state it can reach (guards.py). A call runs the
generated forward, writes back what the function wrote in place (effects.py) and links outputs
that alias arguments (outputs.py).
"""

from __future__ import annotations

import warnings
from typing import Any

from numdiff import amp
from numdiff._device import get_default_device
from numdiff._dtype import get_default_dtype
from numdiff.autograd import anomaly
from numdiff.autograd.function import SavedTensorModifiedError
from numdiff.autograd.grad_mode import _state
from numdiff.backend import is_host
from numdiff.compile import conv_tuning
from numdiff.compile.backward import trace_backward
from numdiff.compile.call_state import (
    changed_outside_the_graph,
    global_state,
    hashable,
    nested_tensors,
    restore_global_state,
    slot_of,
    tensor_at,
    tensor_key,
    tensor_state,
    value_bytes,
)
from numdiff.compile.codegen import ShapeChangedError
from numdiff.compile.effects import write_back
from numdiff.compile.guards import PythonGuard
from numdiff.compile.outputs import link_outputs, output_links, watch_saved_outputs
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
        self.captured_guard = [tensor_key(t) for t in captured]
        self.guarded_values = guarded_values  # (kind, slot) of an integer tensor -> bytes of its traced value
        self.python_guard = python_guard
        self.aliases: list = []  # (input slot, the outside tensor that argument was while tracing)
        self.grad_guards: dict = {}  # (kind, slot) -> the .grad object the trace read
        self.grad_owners: list = []  # outside tensors: whether each had a .grad steers Python code
        self.grad_absent: list = []
        self.output_form = output_form

    def matches(self, tensors: list) -> bool:
        for t, expected in zip(self.captured, self.captured_guard):
            if tensor_key(t) != expected:
                return False
        if [t._grad is None for t in self.grad_owners] != self.grad_absent:
            return False  # code reading p._grad directly (an optimizer) took the other branch
        if not self.python_guard.holds():  # after the cheap checks: it walks the reachable state
            return False
        for slot, outside in self.aliases:
            if tensors[slot]._data is not outside._data:
                return False
        for slot, grad in self.grad_guards.items():
            if tensor_at(slot, tensors, self.captured)._grad is not grad:
                return False
        for slot, data in self.guarded_values.items():
            if value_bytes(tensor_at(slot, tensors, self.captured)) != data:
                return False
        return True


def _flatten_output(result: Any, none_allowed: bool = False) -> tuple[list, Any]:
    """The tensors a call returned and how to rebuild its structure (tensor, tuple or list; None
    from a training step, which returns nothing when `none_allowed`)."""
    if isinstance(result, Tensor):
        return [result], None
    if result is None and none_allowed:
        return [], type(None)
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
        self.fullgraph = False  # numdiff.compile(fullgraph=True): raise where it would fall back to eager
        self.autotune = False  # numdiff.compile(mode="max-autotune"): programs time their conv kernels

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.eager_reason is not None:
            return self._fall_back(args, kwargs)
        if runs_inline() or anomaly.is_enabled():
            # Inside another compiled function's trace the ops are recorded into that trace; under
            # vmap they are batched; anomaly detection checks each op's gradient, which only the
            # eager graph has.
            return self.fn(*args, **kwargs)
        tensors = [a for a in args if isinstance(a, Tensor)]
        if (len(tensors) != len(args) or kwargs) and nested_tensors(args, kwargs):
            self.eager_reason = "tensors inside lists, tuples, dicts or keyword arguments"
            warnings.warn(f"numdiff.compile: {_name(self.fn)} received {self.eager_reason}, which are not "
                          "traced as inputs; it runs eagerly from now on (pass tensors positionally)",
                          stacklevel=2)
            return self._fall_back(args, kwargs)
        key = self._key(args, kwargs)
        candidates = self.traces.get(key, ())
        for candidate in candidates:
            if candidate.matches(tensors):
                return self._run(candidate, tensors, args, kwargs)
        if len(candidates) >= RECOMPILE_LIMIT:
            # Each trace would be checked on every call, and the next one would not hold either.
            self._run_eagerly(f"the Python state or tensor values it reads (a global, a Parameter's .item()) "
                              f"changed on {len(candidates)} calls with the same arguments", stacklevel=3)
            return self._fall_back(args, kwargs)
        trace, eager_result = self._trace(args, kwargs, tensors)
        if trace is None:
            # The trace's own run is this call's eager result when it ran to the end.
            return self._fall_back(args, kwargs) if eager_result is None or self.fullgraph else eager_result
        self.traces.setdefault(key, []).append(trace)
        return self._run(trace, tensors, args, kwargs)

    def _fall_back(self, args: tuple, kwargs: dict) -> Any:
        """The function's eager call, for a function that cannot run compiled (`eager_reason`); with
        ``fullgraph=True``, `UnsupportedInCompileError` instead, as torch.compile raises at a graph
        break (where the trace's own run went to the end, its effects have happened)."""
        if self.fullgraph:
            raise UnsupportedInCompileError(
                f"numdiff.compile(fullgraph=True): {_name(self.fn)} cannot run as one compiled graph: "
                f"{self.eager_reason}"
            )
        return self.fn(*args, **kwargs)

    def _run_eagerly(self, reason: str, stacklevel: int) -> None:
        """Run the function eagerly from now on, with a warning saying why."""
        self.eager_reason = reason
        warnings.warn(f"numdiff.compile: {_name(self.fn)} runs eagerly from now on: {reason}",
                      stacklevel=stacklevel + 1)

    def _key(self, args: tuple, kwargs: dict) -> tuple:
        # Global state a trace bakes in: grad mode at the call, the default dtype and device.
        parts = [_state.enabled, get_default_dtype(), get_default_device(), amp.state_key()]
        first_seen: dict = {}  # id of an argument's array -> the number of distinct arrays before it
        for a in args:
            if isinstance(a, Tensor):
                parts.append((*tensor_key(a), first_seen.setdefault(id(a._data), len(first_seen))))
            else:
                parts.append(("py", type(a), hashable(a)))
        parts.extend((name, hashable(value)) for name, value in sorted(kwargs.items()))
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
        if python_guard.unguardable is not None:
            self._run_eagerly(f"its Python state cannot be guarded ({python_guard.unguardable})", stacklevel=3)
            return None, None
        tracer = Tracer()
        tracer.outside = {id(t._data) for t in python_guard.outside_tensors()}
        for slot, t in enumerate(tensors):
            tracer.add_input(t, slot)
        state_before = global_state()
        reachable = [(t, tensor_state(t)) for t in tensors + python_guard.outside_tensors()]
        try:
            with Tracing(tracer):
                result = self.fn(*args, **kwargs)
                tracer.check_hooks()
                if changed_outside_the_graph(reachable, tracer.effects.saved_data):
                    # Its run here was an eager call: its result and effects are this call's.
                    self._run_eagerly("it changes tensors it can reach without ops a trace records (.grad "
                                      "or .data assigned, requires_grad_(), an optimizer's fused step)",
                                      stacklevel=3)
                    return None, result
                if global_state() != state_before or tracer.effects.reseeded():
                    raise UnsupportedInCompileError(
                        "numdiff.compile: it changes global state (grad mode, the default dtype or "
                        "device, anomaly detection, or reseeds numdiff's generator), which a compiled "
                        "replay would not do"
                    )
                if tracer.effects.drew_from_global_generators():
                    raise UnsupportedInCompileError(
                        "numdiff.compile: it draws from Python's or NumPy's global random generator "
                        "(random.random(), np.random.rand()), which a compiled graph would replay as a "
                        "constant; draw with numdiff.rand/randn instead"
                    )
                if not python_guard.holds():
                    # Every call would find other Python state than its trace was made under.
                    self.eager_reason = "it changes the Python state it reads (attributes, globals, submodules)"
                    warnings.warn(f"numdiff.compile: {_name(self.fn)} cannot be replayed: {self.eager_reason}; "
                                  "it runs eagerly from now on", stacklevel=3)
                    return None, result
                tracer.host_steps.check(len(tracer.forward.calls))
                outputs, form = _flatten_output(result, none_allowed=bool(tracer.host_steps))
                visible_count = len(outputs)
                root_slots = []  # each call's backward starts at these outputs (extra ones if not returned)
                for root in tracer.host_steps.take_roots():
                    known = [slot for slot, t in enumerate(outputs) if t is root]
                    root_slots.append(known[0] if known else len(outputs))
                    if not known:
                        outputs.append(root)
                output_values = [tracer.value_for(t) for t in outputs]
                writes = tracer.write_targets()
                differentiable = self._differentiable(tensors, tracer, outputs)
                try:
                    grads = trace_backward(tracer, outputs, differentiable) if differentiable else []
                except SavedTensorModifiedError as error:
                    # Eager raises this at backward(); the eager function will, too.
                    raise UnsupportedInCompileError(f"numdiff.compile: its backward cannot run ({error})") from None
        except UnsupportedInCompileError as error:
            tracer.effects.undo()
            restore_global_state(state_before)
            self.eager_reason = str(error)
            warnings.warn(f"{error}; running {_name(self.fn)} eagerly from now on", stacklevel=3)
            return None, None
        # The program (or the eager function) runs this call again: undo the trace's writes and draws.
        tracer.effects.undo()
        on_host = all(is_host(t._data) for t in tensors + tracer.captured)
        # Tensors written in place get their last values as extra outputs, written back (effects.py).
        with conv_tuning.autotuning(self.autotune):
            program = build(tracer, output_values + [index for _, index in writes], grads, cuda=not on_host)
        write_slots = [slot_of(target, tensors, tracer.captured) for target, _ in writes]
        if any((kind, slot) in write_slots for _, slot, kind in program.saved_inputs):
            self._run_eagerly("it writes in place into a tensor that its backward reads", stacklevel=3)
            return None, None
        guarded = {slot: value_bytes(tensor_at(slot, tensors, tracer.captured)) for slot in tracer.value_guarded}
        trace = Trace(program, tracer.captured, guarded, python_guard, form)
        trace.write_slots = write_slots
        trace.visible_count = visible_count
        trace.root_slots = root_slots
        trace.host_steps = tracer.host_steps if tracer.host_steps else None  # None: the common, plain trace
        trace.grad_guards = tracer.grad_guards
        # Whether each tensor has a .grad steers code that reads p._grad directly: an optimizer's step
        # or zero_grad, unless the trace deferred them (host_steps.py; then the first call, before any
        # .grad exists, and the later ones share one trace).
        trace.grad_owners = [] if tracer.host_steps else list(
            {id(t): t for t in tracer.captured + python_guard.outside_tensors()}.values())
        trace.grad_absent = [t._grad is None for t in trace.grad_owners]
        # ``f(w)`` where f also reads w itself traced one value for both: only w may reuse it.
        slot_of_array = {id(t._data): slot for slot, t in enumerate(tensors)}
        trace.aliases = [(slot_of_array[id(t._data)], t) for t in python_guard.outside_tensors()
                         if id(t._data) in slot_of_array]
        trace.differentiable_slots = [slot_of(t, tensors, tracer.captured) for t in differentiable]
        # An output that is an argument (``return x``) is that argument, as in eager mode; one
        # that views it or shares its storage shares its version counter (outputs.py).
        trace.fresh_slots = tracer.fresh_slots()
        trace.output_links = output_links(outputs, tensors, tracer.captured, set(trace.fresh_slots))
        trace.grad_output_slots = {
            slot for slot, t in enumerate(outputs) if t._grad_fn is not None and t._grad_fn in tracer.node_call
        }
        return trace, None

    @staticmethod
    def _differentiable(tensors: list, tracer: Tracer, outputs: list) -> list:
        # Not grad mode at the call: ``enable_grad`` inside the function records under no_grad.
        if not any(t._grad_fn is not None and t._grad_fn in tracer.node_call for t in outputs):
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
        for slot in trace.fresh_slots:  # as eager makes them anew: no call sees another's writes
            captured[slot] = captured[slot].copy()
        try:
            outputs, saved = program.forward(inputs, captured)
        except ShapeChangedError:
            # A data-dependent shape: this call's data needs another graph; eager is always right.
            return self.fn(*args, **kwargs)
        if trace.write_slots:
            count = len(outputs) - len(trace.write_slots)
            write_back([tensor_at(slot, tensors, trace.captured) for slot in trace.write_slots], outputs[count:])
            outputs = outputs[:count]
        if not trace.grad_output_slots:
            results = attach(list(outputs), None, [], set())
        else:
            differentiable = [tensor_at(slot, tensors, trace.captured) for slot in trace.differentiable_slots]
            saved_tensors = [tensor_at((kind, slot), tensors, trace.captured)
                             for _, slot, kind in program.saved_inputs]
            grad_shapes = [(slot, outputs[slot]) for slot in trace.grad_output_slots]
            state = RegionState(program, saved, differentiable, saved_tensors, len(outputs), grad_shapes,
                                lambda: _flatten_output(self.fn(*args, **kwargs))[0])
            results = attach(list(outputs), state, differentiable, trace.grad_output_slots)
            watch_saved_outputs(state, results, saved)
        link_outputs(results, trace.output_links, tensors, trace.captured)
        if trace.host_steps is not None:
            trace.host_steps.replay([results[slot] for slot in trace.root_slots])  # host_steps.py
            results = results[:trace.visible_count]
            if trace.output_form is type(None):
                return None
        return results[0] if trace.output_form is None else trace.output_form(results)

    @property
    def sources(self) -> list[str]:
        """The generated source of every trace so far: its fused kernels, then its forward and backward."""
        return ["\n\n".join([*t.program.kernel_sources, t.program.source])
                for traces in self.traces.values() for t in traces]


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
