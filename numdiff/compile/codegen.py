"""Python source for a traced graph: one straight-line function per graph, no Tensors, no tape.

Each op call becomes a direct call of the op's array-level forward (``Exp_forward(ctx, v1)``),
or, for the kernel ops numdiff.compile.direct plans at build time (convolutions, max pooling,
2-D matmul and linear), a call of the compiled kernel core itself; runs of elementwise ops become
one call of a generated Numba kernel (numdiff.compile.fusion).
Only the calls whose results are needed survive (the checks that public functions ran while
tracing, such as index bounds, leave unused results behind). After each op whose output shape
is not implied by its inputs' shapes, a shape check stops a call whose data changed the shape;
the caller then runs the function eagerly for that call.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff.backend import is_host
from numdiff.compile.direct import RUNTIME, direct_lines, needs_blas, pair_lines
from numdiff.compile.graph import Graph, OpCall, ValueRef, attr_refs
from numdiff.compile.norm_fold import RUNTIME as NORM_RUNTIME
from numdiff.compile.norm_fold import fold_lines
from numdiff.compile.slice_join import join_lines


class ShapeChangedError(RuntimeError):
    """A replayed op produced a shape other than the traced one (a data-dependent shape)."""


class Ctx:
    """The ctx a replayed forward receives: keeps what it saves and the attributes it sets."""

    saved: tuple = ()
    needs_input_grad = ()

    def save_for_backward(self, *items: Any) -> None:
        self.saved = items

    def mark_non_differentiable(self, *outputs: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


def as_array(out: Any) -> Any:
    """NumPy reductions to 0-d return scalars; ops hand arrays on (as Function.apply does)."""
    return out if is_host(out) else np.asarray(out) if isinstance(out, np.generic) else out


def needed_calls(graph: Graph, wanted: set) -> tuple[list, set]:
    """The calls that produce `wanted` values (and the values they read), in order."""
    wanted = set(wanted)
    kept = []
    for call in reversed(graph.calls):
        produces = {call.output, *call.ctx_outputs.values()}
        if not produces & wanted and not call.random:  # a draw advances the generator even if unused
            continue
        kept.append(call)
        wanted.update(i for i in call.inputs if not isinstance(i, tuple))
        wanted.update(attr_refs(call))
    kept.reverse()
    return kept, wanted


def _literal(value: Any) -> str | None:
    """Source text for a plain constant attr, or None if it must be passed by reference."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, tuple):
        parts = [_literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "(" + "".join(p + ", " for p in parts) + ")"
    return None


class Emitter:
    """Builds one generated function's lines and the objects its source refers to by name."""

    def __init__(self, name: str, namespace: dict) -> None:
        self.name = name
        self.namespace = namespace
        self.lines: list[str] = []
        # Fused groups store values as rows of one buffer: value -> (buffer name, row). A later
        # group (also in the backward, when the buffer is saved) reads the row from the buffer.
        self.packed: dict[int, tuple[str, int]] = {}
        self.available_buffers: set[str] = set()
        # Host graphs call kernel cores directly with plans made at build time (compile.direct).
        self.direct = False
        # The dtypes of the BLAS products the direct calls run (compile.direct.prepare_blas each).
        self.blas_dtypes: set[np.dtype] = set()

    def ref(self, obj: Any, hint: str) -> str:
        """A module-level name bound to `obj` (classes, constant arrays, odd attrs)."""
        for key, value in self.namespace.items():
            if value is obj:
                return key
        key = f"{hint}_{len(self.namespace)}"
        self.namespace[key] = obj
        return key

    def attr_source(self, value: Any) -> str:
        if isinstance(value, ValueRef):
            return f"v{value.index}"
        if isinstance(value, list) and not value:
            return "[]"  # a sink the op appends to: a fresh one on every call
        if type(value) is tuple and any(isinstance(v, ValueRef) for v in value):
            return "(" + "".join(self.attr_source(v) + ", " for v in value) + ")"
        literal = _literal(value)
        return literal if literal is not None else self.ref(value, "K")

    def emit_call(self, call: OpCall, graph: Graph, check_shape: bool) -> None:
        args = [f"v{i}" if not isinstance(i, tuple) else self.attr_source(i[1]) for i in call.inputs]
        args += [f"{name}={self.attr_source(value)}" for name, value in call.attrs.items()]
        if call.special == "eager_backward":
            function = self.ref(call.attrs["function"], call.attrs["function"].__name__)
            grad, ctx = call.inputs
            needs = call.attrs["needs"]
            self.lines.append(f"v{call.output} = eager_backward({function}, v{ctx}, v{grad}, {needs!r})")
            return
        if call.special == "gemm_pair":
            self.lines.extend(pair_lines(call, graph.values))
            self.blas_dtypes.add(np.dtype(graph.values[call.output].dtype))
            return
        if call.special == "norm_fold":
            self.lines.extend(fold_lines(call, graph.values, self.ref))
            return
        if call.special == "slice_join":
            self.lines.extend(join_lines(call, graph.values, self.attr_source))
            return
        if call.special == "item":
            self.lines.append(f"v{call.output} = v{call.inputs[0]}[{call.attrs['position']}]")
            return
        if call.host:
            function = self.ref(call.function, call.function.__name__)
            self.lines.append(f"v{call.output} = host_call({function}, {', '.join(args)})")
            return
        if self.direct:
            lines = direct_lines(call, graph.values, self.ref)
            if lines is not None:
                self.lines.extend(lines)
                if needs_blas(call):
                    self.blas_dtypes.add(np.dtype(graph.values[call.output].dtype))
                return
        forward = self.ref(call.function.forward, call.function.__name__ + "_forward")
        ctx = "ctx" if call.ctx_outputs else "_scratch"
        if call.ctx_outputs:
            self.lines.append("ctx = Ctx()")
        out = f"v{call.output}"
        if call.tensor_forward:
            self.lines.append(f"{out} = tensor_forward({forward}, {ctx}, {', '.join(args)})")
        else:
            self.lines.append(f"{out} = as_array({forward}({ctx}, {', '.join(args)}))")
        for (kind, key), index in call.ctx_outputs.items():
            if kind == "object":
                self.lines.append(f"v{index} = ctx")
            else:
                self.lines.append(f"v{index} = ctx.{key}" if kind == "attr" else f"v{index} = ctx.saved[{key}]")
        if check_shape:
            shape = graph.values[call.output].shape
            self.lines.append(f"if {out}.shape != {shape!r}:")
            self.lines.append(f"    raise ShapeChangedError({call.op_name!r})")

    def source(self, params: str) -> str:
        body = "\n".join("    " + line for line in self.lines) or "    pass"
        return f"def {self.name}({params}):\n{body}\n"


def base_namespace() -> dict:
    from numdiff.compile.runtime_support import eager_backward, host_call, tensor_forward

    return {"Ctx": Ctx, "_scratch": Ctx(), "as_array": as_array, "ShapeChangedError": ShapeChangedError,
            "tensor_forward": tensor_forward, "host_call": host_call,
            "eager_backward": eager_backward, "np": np, **RUNTIME, **NORM_RUNTIME}
