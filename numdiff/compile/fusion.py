"""Emitting a graph's op calls, with runs of elementwise ops fused into one generated Numba loop.

An op call is fusible when its op has a scalar rule (numdiff._ground.scalar_rules.RULES, the one
table of elementwise formulas) or is `where` or a comparison, it computes floats (or a bool mask)
and all its array inputs broadcast to its output shape. Fusible calls of one output shape and
dtype join one group; a call that is not fusible is emitted at once unless it reads a value of
the open group, which is then emitted first. A group becomes one ``@njit(cache=True)`` loop over
the output shape: every value stays a scalar local, and only values read after the group (by
other calls, the outputs, or the backward) are stored to arrays allocated by the driver. A sum of
a value of the group's shape over all its dims, or over its leading dims (a bias gradient), joins
the group as a reduction of the loop (numdiff.compile.schedule moves such sums next to the call
computing their input). numdiff/compile/group_kernel.py writes each group's loop and driver lines.
"""

from __future__ import annotations

import ast
import functools
import math
from typing import Any

import numpy as np

from numdiff._ground.scalar_rules import RULES
from numdiff._lazy import lazy_module
from numdiff.compile import group_kernel
from numdiff.compile.codegen import Emitter, attr_refs
from numdiff.compile.graph import OpCall

_codegen = lazy_module("numdiff.kernels._codegen")

# Above this many elements a group calling transcendental functions runs as a parallel loop over
# tiles in short stages (numdiff/compile/tiling.py), or, when it is no flat loop, its calls run as
# NumPy ufuncs op by op with the arithmetic between them fused. Below it one plain fused loop wins
# (100-op sin/exp chain, float32[16]: 0.04 ms against 0.9 through ufuncs).
FUSE_MAX_ELEMENTS = 8192

# Most calls of transcendental functions (numdiff.kernels._vecmath, inlined) in one fused loop of a
# small group (tiled groups cut themselves into stages). Past about 20 LLVM stops vectorising the loop
# body well: on float32[65536] an exp(sin(x) * 0.9) + 0.1 chain costs 1.4-1.5 ns per function call
# with 6 to 20 calls in the loop, 2.7 with 30, 28 with 50.
MAX_GROUP_MATH = 16

# Casts a fused loop computes (np.float32(x), np.float64(x)); float16 and bfloat16 stay op calls.
_CASTS = (np.dtype(np.float32), np.dtype(np.float64))


def _in_loops(dtype: np.dtype) -> bool:
    """Whether a fused loop can hold values of `dtype`: float32, float64 and bool (Numba has no
    float16 arrays; those ops run as op calls)."""
    return dtype in _CASTS or dtype.kind == "b"

# Structural elementwise forms beside the rule table: they have no derivative of their own.
_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _rule_of(call: OpCall) -> Any:
    """The scalar rule a call computes, or None (gelu's approximate attr picks gelu_tanh)."""
    name = call.op_name
    if name == "gelu":
        return RULES["gelu_tanh" if call.attrs.get("approximate") == "tanh" else "gelu"]
    return RULES.get(name) if not call.host else None


def expression_of(call: OpCall, operands: list[str]) -> str | None:
    """The scalar source of a call given its operands' sources, or None if not fusible."""
    if call.host:
        if call.op_name in _COMPARISONS and len(operands) == 2 and not call.attrs:
            return f"({operands[0]} {_COMPARISONS[call.op_name]} {operands[1]})"
        return None
    if call.op_name == "where":
        return f"({operands[1]} if {operands[0]} else {operands[2]})"
    if call.op_name == "to_dtype":
        # A float-to-float cast (fusible() checks the dtypes): NumPy's conversion, rounding to nearest.
        return f"np.{call.attrs['dtype'].name}({operands[0]})" if len(operands) == 1 else None
    rule = _rule_of(call)
    if rule is None or len(operands) != rule.arity:
        return None
    reads = dict(zip(rule.inputs, operands))
    for name, default in rule.attrs:
        value = call.attrs.get(name, default)
        # repr of an infinite or NaN attribute ("inf", "nan") is no Python literal: such calls run unfused.
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            return None
        reads[name] = repr(float(value))
    return _codegen.scalar_code(rule.forward, reads)


def fusible(call: OpCall, values: list) -> bool:
    """Whether the call can be a statement of a fused loop (see the module docstring)."""
    if call.special:
        return False
    out = values[call.output]
    if not _in_loops(out.dtype) or call.ctx_outputs or call.tensor_forward and not call.host:
        return False
    if call.host and call.op_name not in _COMPARISONS:
        return False
    if call.op_name == "to_dtype" and (isinstance(call.inputs[0], tuple) or out.dtype not in _CASTS
                                       or values[call.inputs[0]].dtype not in _CASTS):
        return False
    for i in call.inputs:
        if isinstance(i, tuple):
            if not isinstance(i[1], (int, float)) or not math.isfinite(i[1]):
                return False
            continue
        value = values[i]
        if not _in_loops(value.dtype) or not _broadcasts_to(value.shape, out.shape):
            return False
    operands = ["x"] * len(call.inputs)
    return expression_of(call, operands) is not None


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(a == 1 or a == b for a, b in zip(shape[::-1], target[::-1]))


def is_scalar_constant(value: Any) -> bool:
    """A baked one-element float (a Python number saved for backward): inlined as a literal."""
    c = value.constant
    return c is not None and c.size == 1 and c.dtype in _CASTS and np.isfinite(c).all()


def calls_math(call: OpCall) -> bool:
    """Whether the call's forward calls a transcendental function (see FUSE_MAX_ELEMENTS)."""
    return _math_calls(call) > 0


def _math_calls(call: OpCall) -> int:
    """How many math.* functions the call's forward calls (fabs and sqrt, single instructions, aside)."""
    rule = _rule_of(call) if not call.host and call.op_name != "where" else None
    return 0 if rule is None else _forward_math_calls(rule.forward)


@functools.lru_cache(maxsize=1024)
def _forward_math_calls(forward: str) -> int:
    """How many math.* functions a rule's forward source calls (counted once per rule text)."""
    tree = ast.parse(forward, mode="eval")
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "math"
               and node.attr not in ("fabs", "sqrt"))


def _full_sum(call: OpCall, values: list) -> bool:
    """A sum over every dim of a float value: fused as an accumulator of the loop."""
    if call.op_name != "sum" or call.host or call.special or isinstance(call.inputs[0], tuple):
        return False
    source = values[call.inputs[0]]
    ndim = len(source.shape)
    return (ndim > 0 and source.dtype in _CASTS and tuple(call.attrs.get("dims", ())) == tuple(range(ndim))
            and values[call.output].dtype == source.dtype)


def _leading_sum(call: OpCall, values: list) -> bool:
    """A sum over some leading dims of a float value (a bias gradient, ``g.sum(0)``): fused as a
    column sum accumulated inside the loop."""
    if call.op_name != "sum" or call.host or call.special or isinstance(call.inputs[0], tuple):
        return False
    source = values[call.inputs[0]]
    dims = tuple(call.attrs.get("dims", ()))
    return (0 < len(dims) < len(source.shape) and dims == tuple(range(len(dims))) and source.dtype in _CASTS
            and values[call.output].dtype == source.dtype and isinstance(call.attrs.get("keepdim"), bool))


def fusible_sum(call: OpCall, values: list) -> bool:
    """A sum that joins the fused group computing its input (see numdiff.compile.schedule)."""
    return _full_sum(call, values) or _leading_sum(call, values)


def _scalar_broadcast(call: OpCall, values: list) -> bool:
    """A reshape or expand of a one-element value (a seed gradient), or a float cast of one (a
    chain's scalar factor widened to float64): inlined as that element, cast where it is read."""
    if call.op_name not in ("reshape", "expand", "to_dtype") or call.special or isinstance(call.inputs[0], tuple):
        return False
    source = values[call.inputs[0]]
    if call.op_name == "to_dtype" and (source.dtype not in _CASTS or values[call.output].dtype not in _CASTS):
        return False
    return source.dtype in _CASTS and int(np.prod(source.shape)) == 1


class Group:
    def __init__(self, shape: tuple) -> None:
        self.shape = shape
        self.calls: list[OpCall] = []
        self.produced: set[int] = set()
        self.reductions: set[int] = set()
        self.leading_sums: dict[int, int] = {}  # reduction value -> how many leading dims it sums
        self.math_calls = 0


class Inline:
    """Scalar broadcasts waiting for a reader: a fused group reads the element, others get a call."""

    def __init__(self, emitter: Emitter, values: list) -> None:
        self.emitter = emitter
        self.values = values
        self.pending: dict[int, OpCall] = {}

    def source(self, index: int) -> int:
        while index in self.pending:
            index = self.pending[index].inputs[0]
        return index

    def materialize(self, reads: set) -> None:
        """Emit the pending broadcasts among `reads` (and those they read) as ordinary calls."""
        for index in sorted(reads):
            call = self.pending.pop(index, None)
            if call is not None:
                self.materialize({call.inputs[0]})
                self.emitter.emit_call(call, group_kernel.GraphView(self.values), False)


def value_reads(call: OpCall) -> set:
    """The values a call reads: its inputs and the values its attrs refer to."""
    return {i for i in call.inputs if not isinstance(i, tuple)} | set(attr_refs(call))


def emit_calls(emitter: Emitter, calls: list, values: list, live_after: set, kernels: list,
               check_shapes: bool, fuse: bool = True, cuda: bool = False) -> None:
    """Append the source lines of `calls` to `emitter`, fused kernels' sources to `kernels`.

    With `cuda`, groups become ``@cuda.jit`` kernels (cuda_fusion.py) and sums and scalar
    broadcasts are left as op calls.
    """
    readers: dict[int, set] = {}
    for call in calls:
        for i in value_reads(call):
            readers.setdefault(i, set()).add(id(call))
    fusible_ids = {id(c) for c in calls
                   if fuse and (fusible(c, values) or not cuda and _scalar_broadcast(c, values))}
    view = group_kernel.GraphView(values)
    inline = Inline(emitter, values)
    group: Group | None = None

    def flush() -> None:
        nonlocal group
        if group is not None:
            group_kernel.emit_group(emitter, group, values, readers, live_after, kernels, inline, cuda)
            group = None

    for call in calls:
        # A pending scalar broadcast is read through to its source: the reshape of a group's own
        # reduction (a 0-d weight's gradient, x * x.sum().reshape(1, 1)) must wait for the group.
        reads = value_reads(call)
        reads |= {inline.source(i) for i in reads}
        if (id(call) in fusible_ids and _scalar_broadcast(call, values) and call.output not in live_after
                and readers.get(call.output, set()) <= fusible_ids):
            inline.pending[call.output] = call
            continue
        if fuse and not cuda and group is not None and fusible_sum(call, values) \
                and values[call.inputs[0]].shape == group.shape and not reads & group.reductions:
            group.calls.append(call)
            group.produced.add(call.output)
            group.reductions.add(call.output)
            if _leading_sum(call, values):
                group.leading_sums[call.output] = len(call.attrs["dims"])
            continue
        # A scalar broadcast that could not be inlined (a non-fused op reads it, or it outlives
        # the graph) has no scalar expression: it runs as an ordinary call below.
        if id(call) in fusible_ids and fusible(call, values):
            shape = values[call.output].shape
            math_calls = _math_calls(call)
            if group is not None and (group.shape != shape or reads & group.reductions
                                      or group.math_calls + math_calls > MAX_GROUP_MATH
                                      and (cuda or int(np.prod(shape)) <= FUSE_MAX_ELEMENTS)):
                flush()
            if group is None:
                group = Group(shape)
            group.calls.append(call)
            group.produced.add(call.output)
            group.math_calls += math_calls
            continue
        if group is not None and reads & group.produced:
            flush()
        inline.materialize(reads)
        emitter.emit_call(call, view, check_shapes)
    flush()
