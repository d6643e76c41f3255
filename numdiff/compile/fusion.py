"""Emitting a graph's op calls, with runs of elementwise ops fused into one generated Numba loop.

An op call is fusible when its op has a scalar rule (numdiff.ops.scalar_rules.RULES, the one
table of elementwise formulas) or is `where` or a comparison, it computes floats (or a bool mask)
and all its array inputs broadcast to its output shape. Fusible calls of one output shape and
dtype join one group; a call that is not fusible is emitted at once unless it reads a value of
the open group, which is then emitted first. A group becomes one ``@njit(cache=True)`` loop over
the output shape: every value stays a scalar local, and only values read after the group (by
other calls, the outputs, or the backward) are stored to arrays allocated by the driver. A sum of
a value of the group's shape over all its dims, or over its leading dims (a bias gradient), joins
the group as a reduction of the loop (numdiff.compile.schedule moves such sums next to the call
computing their input).
"""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np

from numdiff.compile.codegen import Emitter, attr_refs
from numdiff.compile.cuda_fusion import emit_cuda_group
from numdiff.compile.graph import OpCall
from numdiff.compile.tiling import tiled_kernel
from numdiff.kernels._codegen import scalar_code, vector_math_source
from numdiff.ops.scalar_rules import RULES

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

# Structural elementwise forms beside the rule table: they have no derivative of their own.
_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _rule_of(call: OpCall) -> Any:
    """The scalar rule a call computes, or None (gelu's approximate attr picks gelu_tanh)."""
    name = call.op_name
    if name == "gelu":
        return RULES["gelu_tanh" if call.attrs.get("approximate") == "tanh" else "gelu"]
    return RULES.get(name) if not call.host else None


def _expression(call: OpCall, operands: list[str]) -> str | None:
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
    return scalar_code(rule.forward, reads)


def fusible(call: OpCall, values: list) -> bool:
    """Whether the call can be a statement of a fused loop (see the module docstring)."""
    if call.special:
        return False
    out = values[call.output]
    if out.dtype.kind not in "fb" or call.ctx_outputs or call.tensor_forward and not call.host:
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
        if value.dtype.kind not in "fb" or not _broadcasts_to(value.shape, out.shape):
            return False
    operands = ["x"] * len(call.inputs)
    return _expression(call, operands) is not None


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(a == 1 or a == b for a, b in zip(shape[::-1], target[::-1]))


def _is_scalar_constant(value: Any) -> bool:
    """A baked one-element float (a Python number saved for backward): inlined as a literal."""
    c = value.constant
    return c is not None and c.size == 1 and c.dtype.kind == "f" and np.isfinite(c).all()


def _rule_calls_math(call: OpCall) -> bool:
    """Whether the call's forward calls a transcendental function (see FUSE_MAX_ELEMENTS)."""
    return _math_calls(call) > 0


def _math_calls(call: OpCall) -> int:
    """How many math.* functions the call's forward calls (fabs and sqrt, single instructions, aside)."""
    rule = _rule_of(call) if not call.host and call.op_name != "where" else None
    if rule is None:
        return 0
    tree = ast.parse(rule.forward, mode="eval")
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "math"
               and node.attr not in ("fabs", "sqrt"))


def _full_sum(call: OpCall, values: list) -> bool:
    """A sum over every dim of a float value: fused as an accumulator of the loop."""
    if call.op_name != "sum" or call.host or call.special or isinstance(call.inputs[0], tuple):
        return False
    source = values[call.inputs[0]]
    ndim = len(source.shape)
    return (ndim > 0 and source.dtype.kind == "f" and tuple(call.attrs.get("dims", ())) == tuple(range(ndim))
            and values[call.output].dtype == source.dtype)


def _leading_sum(call: OpCall, values: list) -> bool:
    """A sum over some leading dims of a float value (a bias gradient, ``g.sum(0)``): fused as a
    column sum accumulated inside the loop."""
    if call.op_name != "sum" or call.host or call.special or isinstance(call.inputs[0], tuple):
        return False
    source = values[call.inputs[0]]
    dims = tuple(call.attrs.get("dims", ()))
    return (0 < len(dims) < len(source.shape) and dims == tuple(range(len(dims))) and source.dtype.kind == "f"
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
    return source.dtype.kind == "f" and int(np.prod(source.shape)) == 1


class _Group:
    def __init__(self, shape: tuple) -> None:
        self.shape = shape
        self.calls: list[OpCall] = []
        self.produced: set[int] = set()
        self.reductions: set[int] = set()
        self.leading_sums: dict[int, int] = {}  # reduction value -> how many leading dims it sums
        self.math_calls = 0


class _Inline:
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
                self.emitter.emit_call(call, _GraphView(self.values), False)


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
    view = _GraphView(values)
    inline = _Inline(emitter, values)
    group: _Group | None = None

    def flush() -> None:
        nonlocal group
        if group is not None:
            _emit_group(emitter, group, values, readers, live_after, kernels, inline, cuda)
            group = None

    for call in calls:
        reads = value_reads(call)
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
                group = _Group(shape)
            group.calls.append(call)
            group.produced.add(call.output)
            group.math_calls += math_calls
            continue
        if group is not None and reads & group.produced:
            flush()
        inline.materialize(reads)
        emitter.emit_call(call, view, check_shapes)
    flush()


def _emit_group(emitter: Emitter, group: _Group, values: list, readers: dict, live_after: set,
                kernels: list, inline: _Inline, cuda: bool = False) -> None:
    large = int(np.prod(group.shape)) > FUSE_MAX_ELEMENTS and not cuda
    # A large group calling transcendental functions runs as a tiled parallel loop (tiling.py) when
    # it is one flat loop; otherwise its calls that read nothing the group computes run as NumPy
    # ufuncs and the rest fuses, or everything runs op by op.
    tiled = large and any(_rule_calls_math(c) for c in group.calls) and _is_flat(group, values, inline)
    if large and not tiled and any(_rule_calls_math(c) for c in group.calls):
        group = _hoist_math(emitter, group, values, inline)
    if len(group.calls) == 1 or large and not tiled and any(_rule_calls_math(c) for c in group.calls):
        for call in group.calls:
            inline.materialize(value_reads(call))
            emitter.emit_call(call, _GraphView(values), False)
        return
    if not group.calls:
        return
    members = {id(c) for c in group.calls}
    stored = [c.output for c in group.calls if c.output not in group.reductions
              and (c.output in live_after or readers.get(c.output, set()) - members)]
    reductions = [c.output for c in group.calls if c.output in group.reductions]
    if cuda:
        if stored:
            emit_cuda_group(emitter, group.calls, values, stored, kernels, _typed_expression(values))
        return
    external: list = []  # value indices, or names of buffers whose rows the group reads
    body: list[str] = []
    names: dict[int, str] = {}
    # Flat: every operand has the group's shape (or one element), so one loop over the elements of
    # C-contiguous reshaped views replaces the N-d nest (which LLVM does not vectorise). A column sum
    # needs the nest: it accumulates into the element of its trailing indices.
    flat = len(group.shape) > 1 and _is_flat(group, values, inline)
    loop_shape = (int(np.prod(group.shape)),) if flat else group.shape
    ndim = len(loop_shape)
    index = ", ".join(f"i{d}" for d in range(ndim)) if ndim else "()"
    def name_of(source: int, i: int) -> str:
        """The expression reading `source` (read through `i`, a pending broadcast of it) in the loop."""
        if source in names:
            return names[source]
        packed = emitter.packed.get(source)
        if packed is not None and packed[0] in emitter.available_buffers and values[source].shape == group.shape:
            if packed[0] not in external:
                external.append(packed[0])
            buffer = f"a{external.index(packed[0])}"
            if ndim == 1:  # rows of a 1-D buffer at constant offsets (see the stores below)
                names[source] = f"{buffer}[{packed[1] * loop_shape[0]} + i0]"
            else:
                names[source] = f"{buffer}[{packed[1]}, {index}]" if ndim else f"{buffer}[{packed[1]}]"
        elif _is_scalar_constant(values[source]):
            names[source] = repr(values[source].constant.item())
        else:
            external.append(source)
            shape = values[source].shape
            if flat:
                at = "i0" if shape == group.shape else "0"
            elif source != i:
                at = ", ".join("0" for _ in shape)
            else:
                at = _broadcast_index(shape, ndim)
            names[source] = f"a{len(external) - 1}[{at or '()'}]"
        return names[source]

    for call in group.calls:
        operands = []
        for i in call.inputs:
            if isinstance(i, tuple):
                operands.append(repr(float(i[1])) if not isinstance(i[1], bool) else repr(i[1]))
                continue
            source = inline.source(i)
            operand = name_of(source, i)
            if values[source].dtype != values[i].dtype:  # an inlined cast of a one-element value
                operand = f"np.{values[i].dtype.name}({operand})"
            operands.append(operand)
        if call.output in group.leading_sums:
            # One running sum per trailing position, over the leading indices in order: the loop
            # stays vectorisable along the trailing dims, and the result is NumPy's reduction over
            # leading axes (which adds row after row) bit for bit.
            trailing = ", ".join(f"i{d}" for d in range(group.leading_sums[call.output], ndim))
            body.append(f"s{reductions.index(call.output)}[{trailing}] += {operands[0]}")
            continue
        if call.output in group.reductions:
            # Stored, and summed after the loop: a running float sum inside it would keep LLVM from
            # vectorising the loop (it may not reorder the additions).
            body.append(f"q{call.output}[{index}] = {operands[0]}")
            continue
        expression = _expression(call, operands)
        if values[call.output].dtype == np.float32:
            # Rounded to float32 after each op, as eager float32 ops round (the _vecmath functions
            # compute in float64).
            expression = f"np.float32({_single_precision(expression)})"
        body.append(f"t{call.output} = {expression}")
        names[call.output] = f"t{call.output}"
    # Stored values share one buffer per dtype: one allocation and one kernel argument each.
    buffers: dict[str, list[int]] = {}
    for value in stored:
        buffers.setdefault(values[value].dtype.name, []).append(value)
    for k, rows in enumerate(buffers.values()):
        # In a one-level loop the buffer is passed 1-D and row r starts at the constant r * size: LLVM
        # then sees that the rows cannot overlap, where row strides read from the array would need a
        # runtime overlap check per pair of rows, and past a few checks it gives up vectorising.
        body += [f"b{k}[{row * loop_shape[0]} + i0] = t{value}" if ndim == 1
                 else f"b{k}[{row}, {index}] = t{value}" if ndim else f"b{k}[{row}] = t{value}"
                 for row, value in enumerate(rows)]
    if not stored and not reductions:
        return
    params = [f"a{k}" for k in range(len(external))] + [f"b{k}" for k in range(len(buffers))]
    params += [f"s{k}" for k in range(len(reductions))]
    kernel = f"fused_{len(kernels)}"
    if tiled:
        sums = [f"q{value} = np.empty({loop_shape!r}, np.{values[value].dtype.name})" for value in reductions]
        finish = [line for k, value in enumerate(reductions)
                  for line in (f"r{value} = 0.0", f"for v in q{value}.ravel():", f"    r{value} += v", f"s{k}[0] = r{value}")]
        dtypes = {f"t{c.output}": values[c.output].dtype.name for c in group.calls}
        stages: dict = {}
        source = tiled_kernel(kernel, params, sums, body, loop_shape[0], dtypes, finish, stages)
        kernels += [stage for stage in stages.values() if stage not in kernels]
        kernels.append(vector_math_source(source, header=False))
    else:
        _append_flat_kernel(kernels, kernel, params, reductions, group, loop_shape, body, values)
    _emit_driver(emitter, kernel, external, buffers, reductions, group, values, ndim, flat)


def _append_flat_kernel(kernels: list, kernel: str, params: list, reductions: list, group: _Group,
                        loop_shape: tuple, body: list, values: list) -> None:
    # Full sums accumulate in float64 (NumPy's pairwise float32 sum is closer to that than to a
    # float32 running sum); column sums in their own dtype, as NumPy's row-after-row reduction does.
    lines = ["@njit(cache=True)", f"def {kernel}({', '.join(params)}):"]
    # The summands of a full sum keep their own dtype (a float64 buffer would halve the float32
    # lanes); the sum after the loop runs in float64.
    for k, value in enumerate(reductions):
        lines.append(f"    s{k}[...] = 0" if value in group.leading_sums
                     else f"    q{value} = np.empty({loop_shape!r}, np.{values[value].dtype.name})")
    indent = "    "
    for d, size in enumerate(loop_shape):
        lines.append(f"{indent}for i{d} in range({size}):")
        indent += "    "
    lines += [indent + line for line in body]
    for k, value in enumerate(reductions):
        if value not in group.leading_sums:
            lines += [f"    r{value} = 0.0", f"    for v in q{value}.ravel():", f"        r{value} += v",
                      f"    s{k}[0] = r{value}"]
    kernels.append(vector_math_source("\n".join(lines), header=False))


def _emit_driver(emitter: Emitter, kernel: str, external: list, buffers: dict, reductions: list, group: _Group,
                 values: list, ndim: int, flat: bool) -> None:
    """The driver's lines around a fused kernel: its buffers, the call, and the stored values' views."""
    flat_view = ".reshape(-1)" if flat else ""
    args = [f"{e}.reshape(-1)" if isinstance(e, str) and ndim == 1 else e if isinstance(e, str)
            else f"v{e}{flat_view}" for e in external]
    for k, (dtype, rows) in enumerate(buffers.items()):
        buffer = f"buffer_{kernel}_{k}"
        emitter.lines.append(f"{buffer} = np.empty({(len(rows),) + group.shape!r}, {dtype!r})")
        args.append(f"{buffer}.reshape(-1)" if ndim == 1 else buffer)
    for value in reductions:
        kept = group.shape[group.leading_sums[value]:] if value in group.leading_sums else (1,)
        emitter.lines.append(f"v{value} = np.empty({kept!r}, {values[value].dtype.name!r})")
        args.append(f"v{value}")
    emitter.lines.append(f"{kernel}({', '.join(args)})")
    for k, rows in enumerate(buffers.values()):
        buffer = f"buffer_{kernel}_{k}"
        emitter.available_buffers.add(buffer)
        for row, value in enumerate(rows):
            emitter.packed[value] = (buffer, row)
            emitter.lines.append(f"v{value} = {buffer}[{row}, ...]")  # 0-d: an array, not a scalar
    for value in reductions:
        if values[value].shape != (group.shape[group.leading_sums[value]:] if value in group.leading_sums else (1,)):
            emitter.lines.append(f"v{value} = v{value}.reshape({values[value].shape!r})")


def _is_flat(group: _Group, values: list, inline: _Inline) -> bool:
    """Whether every operand of the group has its shape (or one element) and no column sum needs
    the N-d loop nest: then one loop over the elements computes the group."""
    produced = {c.output for c in group.calls}
    return not group.leading_sums and all(
        inline.source(i) in produced or values[inline.source(i)].shape == group.shape
        or int(np.prod(values[inline.source(i)].shape)) == 1
        for c in group.calls for i in c.inputs if not isinstance(i, tuple)
    )


def _hoist_math(emitter: Emitter, group: _Group, values: list, inline: _Inline) -> _Group:
    """Emit, as NumPy ufunc calls, the transcendental calls of a large group that read nothing the
    rest of the group computes (a backward's cos(x) of saved inputs); return the rest, which fuses
    into one loop if no transcendental call is left in it."""
    rest = _Group(group.shape)
    hoisted = []
    for call in group.calls:
        if _rule_calls_math(call) and not value_reads(call) & rest.produced:
            hoisted.append(call)
            continue
        rest.calls.append(call)
        rest.produced.add(call.output)
        if call.output in group.reductions:
            rest.reductions.add(call.output)
        if call.output in group.leading_sums:
            rest.leading_sums[call.output] = group.leading_sums[call.output]
    if any(_rule_calls_math(c) for c in rest.calls):
        return group  # a chain through transcendental calls: op by op
    for call in hoisted:
        inline.materialize(value_reads(call))
        emitter.emit_call(call, _GraphView(values), False)
    return rest


def _typed_expression(values: list) -> Any:
    def expression_of(call: OpCall, operands: list) -> str:
        expression = _expression(call, operands)
        return _single_precision(expression) if values[call.output].dtype == np.float32 else expression

    return expression_of


class _Float32Literals(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        if type(node.value) is float:
            return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "float32", ast.Load()), [node], [])
        return node


def _single_precision(expression: str) -> str:
    """float32 groups compute in float32, as eager float32 ops do (float64 literals would widen
    every step and call the slower double-precision math.sin/exp)."""
    tree = _Float32Literals().visit(ast.parse(expression, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def _broadcast_index(shape: tuple, ndim: int) -> str:
    """The index of a loop position into an input broadcast to the loop's shape (NumPy's rule)."""
    lead = ndim - len(shape)
    parts = [f"i{lead + d}" if size != 1 else "0" for d, size in enumerate(shape)]
    return ", ".join(parts) if parts else "()"


class _GraphView:
    """What Emitter.emit_call reads of a graph: its values."""

    def __init__(self, values: list) -> None:
        self.values = values
