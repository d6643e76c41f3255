"""One fused group's code: its generated loop (flat, N-d with column sums, tiled in stages, or a
CUDA kernel), and the driver lines that allocate its buffers, call it and name its stored values.

numdiff/compile/fusion.py decides which calls join a group; this module writes the group out.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import re
from types import ModuleType
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.compile import fusion
from numdiff.compile.codegen import Emitter
from numdiff.compile.cuda_fusion import emit_cuda_group
from numdiff.compile.graph import OpCall
from numdiff.compile.tiling import tiled_kernel


def _vecmath() -> ModuleType:
    """numdiff.kernels._vecmath, imported for real on first use. Not a lazy placeholder: Numba types
    `_vecmath.exp` in compiled code (generated programs, user kernels) by reading the module, and a
    placeholder that has not run yet there made it an unknown attribute."""
    return importlib.import_module("numdiff.kernels._vecmath")

_codegen = lazy_module("numdiff.kernels._codegen")


def emit_group(emitter: Emitter, group: fusion.Group, values: list, readers: dict, live_after: set,
                kernels: list, inline: fusion.Inline, cuda: bool = False) -> None:
    large = int(np.prod(group.shape)) > fusion.FUSE_MAX_ELEMENTS and not cuda
    # A large group calling transcendental functions runs as a tiled parallel loop (tiling.py) when
    # it is one flat loop; otherwise its calls that read nothing the group computes run as NumPy
    # ufuncs and the rest fuses, or everything runs op by op.
    tiled = large and any(fusion.calls_math(c) for c in group.calls) and _is_flat(group, values, inline)
    if large and not tiled and any(fusion.calls_math(c) for c in group.calls):
        group = _hoist_math(emitter, group, values, inline)
    if len(group.calls) == 1 or large and not tiled and any(fusion.calls_math(c) for c in group.calls):
        for call in group.calls:
            inline.materialize(fusion.value_reads(call))
            emitter.emit_call(call, GraphView(values), False)
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

    # A plain loop nest takes its sizes as arguments (n0, n1, ...), so one kernel serves every size,
    # except a short innermost extent, which stays a constant: LLVM vectorises a runtime trip count in
    # chunks of (lanes x interleave), up to 32 elements, and runs a shorter loop scalar (a 16-element
    # chain took 0.107 ms a call against 0.093 with constants). A tiled loop takes its size too (its
    # stages' loops run over a runtime tile length anyway), so the SiLU or sigmoid gradient of every
    # block is one kernel, one parallel compile, whatever the block's size.
    inner_runtime = tiled or ndim > 0 and loop_shape[-1] >= _RUNTIME_SIZES_FROM
    runtime = list(range(ndim if inner_runtime else ndim - 1))
    sizes_in_source = [f"n{d}" if d in runtime else str(size) for d, size in enumerate(loop_shape)]

    def row_index(row: int) -> str:
        """Where row `row` of a 1-D packed buffer meets the loop."""
        if not row:
            return "i0"
        return f"{row} * n0 + i0" if runtime else f"{row * loop_shape[0]} + i0"
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
                names[source] = f"{buffer}[{row_index(packed[1])}]"
            else:
                names[source] = f"{buffer}[{packed[1]}, {index}]" if ndim else f"{buffer}[{packed[1]}]"
        elif fusion.is_scalar_constant(values[source]):
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

    # float32 sin/cos values of the group, as float64 expressions before their rounding: a cast of
    # one to float64 (a chain's derivative factor, numdiff/compile/backward.py) takes that value
    # (_vecmath.sin_wide / cos_wide), which the rounding to float32 and back would only worsen.
    unrounded: dict[int, str] = {}
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
            # Stored, and summed after the loop (_vecmath.lane_sum, in float64): a running float sum
            # inside it would keep LLVM from vectorising the loop (it may not reorder the additions).
            body.append(f"q{call.output}[{index}] = {operands[0]}")
            continue
        expression = fusion.expression_of(call, operands)
        if call.op_name == "to_dtype" and values[call.output].dtype == np.float64:
            expression = unrounded.get(inline.source(call.inputs[0]), expression)
        elif call.op_name in _vecmath().WIDE and values[call.output].dtype == np.float32 and not call.attrs:
            unrounded[call.output] = f"np.float64(math.{call.op_name}({operands[0]}))"
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
        body += [f"b{k}[{row_index(row)}] = t{value}" if ndim == 1
                 else f"b{k}[{row}, {index}] = t{value}" if ndim else f"b{k}[{row}] = t{value}"
                 for row, value in enumerate(rows)]
    if not stored and not reductions:
        return
    params = [f"a{k}" for k in range(len(external))] + [f"b{k}" for k in range(len(buffers))]
    params += [f"s{k}" for k in range(len(reductions))]
    if tiled:
        summands = [f"q{value} = np.empty(n0, np.{values[value].dtype.name})" for value in reductions]
        finish = [f"s{k}[0] = r{value}" for k, value in enumerate(reductions)]
        dtypes = {f"t{c.output}": values[c.output].dtype.name for c in group.calls}
        stages: dict = {}
        sums = {f"q{value}": f"r{value}" for value in reductions}
        source = tiled_kernel(_UNNAMED, ["n0", *params], summands, body, dtypes, finish, stages, sums)
        # The stages travel with their kernel: one unit of source, compiled and cached together.
        source = "\n\n".join([*stages.values(), _codegen.vector_math_source(source, header=False)])
    else:
        source = _flat_kernel([f"n{d}" for d in runtime] + params, sizes_in_source, reductions, group, body, values)
    kernel = _add_kernel(kernels, source)
    sizes = tuple(loop_shape[d] for d in runtime)
    _emit_driver(emitter, kernel, sizes, external, buffers, reductions, group, values, ndim, flat)


_UNNAMED = "fused_kernel"
_RUNTIME_SIZES_FROM = 1024  # innermost loop extent from which a kernel takes its sizes as arguments
_TEMPORARY = re.compile(r"(?<![\w.])([tqr])(\d+)(?=_tiles\b|\b)")


def _add_kernel(kernels: list, source: str) -> str:
    """Name the kernel `source` defines (as _UNNAMED) by what it computes, add it to `kernels`
    unless a kernel of that text is there, and return its name.

    The temporaries of a group are named after its value numbers (t12, q40); renamed in order of
    appearance, two groups computing the same thing at the same dtypes (the BatchNorm or the
    residual add of every block) have one text, hence one kernel, compiled once, and one file on
    disk (numdiff/compile/program.py) that any later program with that group loads."""
    renamed: dict[str, str] = {}

    def rename(match: re.Match) -> str:
        return renamed.setdefault(match.group(0), f"{match.group(1)}{len(renamed)}")

    source = "\n".join(line if line.lstrip().startswith("#") else _TEMPORARY.sub(rename, line)
                       for line in source.split("\n"))
    name = "fused_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    source = source.replace(f"def {_UNNAMED}(", f"def {name}(", 1)
    if source not in kernels:
        kernels.append(source)
    return name


def _flat_kernel(params: list, sizes: list, reductions: list, group: fusion.Group, body: list, values: list) -> str:
    """The source of a group's loop nest over `sizes`: argument names (n0, n1, ...) or constants."""
    # Full sums accumulate in float64 (NumPy's pairwise float32 sum is closer to that than to a
    # float32 running sum); column sums in their own dtype, as NumPy's row-after-row reduction does.
    lines = ["@njit(cache=True)", f"def {_UNNAMED}({', '.join(params)}):"]
    loop_shape = "(" + "".join(f"{size}, " for size in sizes) + ")"
    # The summands of a full sum keep their own dtype (a float64 buffer would halve the float32
    # lanes); the sum after the loop runs in float64.
    for k, value in enumerate(reductions):
        lines.append(f"    s{k}[...] = 0" if value in group.leading_sums
                     else f"    q{value} = np.empty({loop_shape}, np.{values[value].dtype.name})")
    indent = "    "
    for d, size in enumerate(sizes):
        lines.append(f"{indent}for i{d} in range({size}):")
        indent += "    "
    lines += [indent + line for line in body]
    for k, value in enumerate(reductions):
        if value not in group.leading_sums:
            lines.append(f"    s{k}[0] = _vecmath.lane_sum(q{value}.ravel())")
    return _codegen.vector_math_source("\n".join(lines), header=False)


def _emit_driver(emitter: Emitter, kernel: str, sizes: tuple, external: list, buffers: dict, reductions: list,
                 group: fusion.Group, values: list, ndim: int, flat: bool) -> None:
    """The driver's lines around a fused kernel: its buffers, the call (loop sizes first), and the
    stored values' views."""
    flat_view = ".reshape(-1)" if flat else ""
    args = [str(size) for size in sizes]
    args += [f"{e}.reshape(-1)" if isinstance(e, str) and ndim == 1 else e if isinstance(e, str)
             else f"v{e}{flat_view}" for e in external]
    # Named per group, not per kernel: groups that share a kernel each keep their own buffers.
    prefix = f"buffer_{emitter.name}{len(emitter.available_buffers)}"
    for k, (dtype, rows) in enumerate(buffers.items()):
        buffer = f"{prefix}_{k}"
        emitter.lines.append(f"{buffer} = np.empty({(len(rows),) + group.shape!r}, {dtype!r})")
        args.append(f"{buffer}.reshape(-1)" if ndim == 1 else buffer)
    for value in reductions:
        kept = group.shape[group.leading_sums[value]:] if value in group.leading_sums else (1,)
        emitter.lines.append(f"v{value} = np.empty({kept!r}, {values[value].dtype.name!r})")
        args.append(f"v{value}")
    emitter.lines.append(f"{kernel}({', '.join(args)})")
    for k, rows in enumerate(buffers.values()):
        buffer = f"{prefix}_{k}"
        emitter.available_buffers.add(buffer)
        for row, value in enumerate(rows):
            emitter.packed[value] = (buffer, row)
            emitter.lines.append(f"v{value} = {buffer}[{row}, ...]")  # 0-d: an array, not a scalar
    for value in reductions:
        if values[value].shape != (group.shape[group.leading_sums[value]:] if value in group.leading_sums else (1,)):
            emitter.lines.append(f"v{value} = v{value}.reshape({values[value].shape!r})")


def _is_flat(group: fusion.Group, values: list, inline: fusion.Inline) -> bool:
    """Whether every operand of the group has its shape (or one element) and no column sum needs
    the N-d loop nest: then one loop over the elements computes the group."""
    produced = {c.output for c in group.calls}
    return not group.leading_sums and all(
        inline.source(i) in produced or values[inline.source(i)].shape == group.shape
        or int(np.prod(values[inline.source(i)].shape)) == 1
        for c in group.calls for i in c.inputs if not isinstance(i, tuple)
    )


def _hoist_math(emitter: Emitter, group: fusion.Group, values: list, inline: fusion.Inline) -> fusion.Group:
    """Emit, as NumPy ufunc calls, the transcendental calls of a large group that read nothing the
    rest of the group computes (a backward's cos(x) of saved inputs); return the rest, which fuses
    into one loop if no transcendental call is left in it."""
    rest = fusion.Group(group.shape)
    hoisted = []
    for call in group.calls:
        if fusion.calls_math(call) and not fusion.value_reads(call) & rest.produced:
            hoisted.append(call)
            continue
        rest.calls.append(call)
        rest.produced.add(call.output)
        if call.output in group.reductions:
            rest.reductions.add(call.output)
        if call.output in group.leading_sums:
            rest.leading_sums[call.output] = group.leading_sums[call.output]
    if any(fusion.calls_math(c) for c in rest.calls):
        return group  # a chain through transcendental calls: op by op
    for call in hoisted:
        inline.materialize(fusion.value_reads(call))
        emitter.emit_call(call, GraphView(values), False)
    return rest


def _typed_expression(values: list) -> Any:
    def expression_of(call: OpCall, operands: list) -> str:
        expression = fusion.expression_of(call, operands)
        return _single_precision(expression) if values[call.output].dtype == np.float32 else expression

    return expression_of


class _Float32Literals(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        if type(node.value) is float:
            return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "float32", ast.Load()), [node], [])
        return node


def _single_precision(expression: str) -> str:
    """float32 groups compute in float32, as eager float32 ops do (float64 literals would widen
    every step and call the slower double-precision math.sin/exp).

    Rewritten once per text with its temporaries renumbered in order (`_literals_to_float32`):
    the groups of an unrolled loop's steps differ only in their value numbers."""
    found: dict[str, str] = {}
    renumbered = _LOCAL.sub(lambda m: found.setdefault(m.group(0), f"t{len(found)}"), expression)
    original = {number: name for name, number in found.items()}
    return _LOCAL.sub(lambda m: original[m.group(0)], _literals_to_float32(renumbered))


_LOCAL = re.compile(r"(?<![\w.])t\d+\b")  # a group's temporary (t12), not float32 or a0[i0]


@functools.lru_cache(maxsize=4096)
def _literals_to_float32(expression: str) -> str:
    tree = _Float32Literals().visit(ast.parse(expression, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def _broadcast_index(shape: tuple, ndim: int) -> str:
    """The index of a loop position into an input broadcast to the loop's shape (NumPy's rule)."""
    lead = ndim - len(shape)
    parts = [f"i{lead + d}" if size != 1 else "0" for d, size in enumerate(shape)]
    return ", ".join(parts) if parts else "()"


class GraphView:
    """What Emitter.emit_call reads of a graph: its values."""

    def __init__(self, values: list) -> None:
        self.values = values
