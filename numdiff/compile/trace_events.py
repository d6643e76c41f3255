"""What a trace does when the traced code does more than call ops: the Tracer's events.

Each method here is what one door of the interpreter stack reaches while a trace records
(numdiff.compile.trace.TraceLevel routes them):

- ``check_host_read(tensor, what)``: a host read (``.item()``, ``bool()``, ``.tolist()``,
  ``.numpy()``) guards the trace on the values of the outside tensors it depends on, or raises
  `GraphBreakError` when it depends on a float argument or a random draw;
- ``inplace_update(target, op, compute, apply)``: an in-place op, functionalized (effects.py);
- ``random_call(function, args, kwargs, run)`` / ``random_draw()``: a draw, recorded as a step that
  draws on every call, or refused outside numdiff's random functions;
- ``grad_read(tensor)``: ``t.grad`` guards the trace on that .grad object;
- ``hook_registered(what, shape)`` / ``check_hooks()``: hooks and ``retain_grad()`` inside the
  function make it run eagerly, since the compiled backward would not call them.

Refusals raise `UnsupportedInCompileError`; the compiled function then runs eagerly, with a
warning saying why.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

from numdiff.compile.effects import root, unreplayable_inplace
from numdiff.compile.graph import ValueRef
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


class TraceEvents:
    """The Tracer's responses to what the traced code does besides calling ops (a mixin of
    numdiff.compile.trace.Tracer, whose values, graphs and effects they read and extend)."""

    def _note_hooks(self, tensor: Tensor) -> None:
        if id(tensor) not in self.leaf_hooks:
            self.leaf_hooks[id(tensor)] = (tensor, _hook_ids(tensor))

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
        if before.kind == "input" or before.kind == "captured" and self.is_outside(target):
            self.effects.note_write(before.kind, before.slot, target)
        elif before.kind == "captured":  # made by the function (zeros(3)): each call starts afresh
            self.effects.note_undo(target)
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

    def random_call(self, function: Any, args: tuple, kwargs: dict, run: Any) -> Tensor:
        """A call of a random function (numdiff._host_functions.random_function) while tracing:
        `run()` runs it below the trace (its draw is allowed, its ops not recorded), and the call
        is recorded as a step that draws afresh on every call."""
        self.effects.note_generators(args, kwargs)
        result = run()
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
            if tensor._grad is not None and self.outside is not None and self.is_outside(tensor):
                self.outside.add(id(tensor._grad._data))  # written in place (clipping): written back

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
