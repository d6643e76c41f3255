"""A large fused group with transcendental calls, as a parallel loop over tiles run in stages.

One flat loop computing a long chain of elementwise functions per element (a 100-op sin/exp chain)
is the wrong shape for the CPU twice over: the chain is one long dependency per element, so the
core waits on latency with no independent work in its reorder window (a loop with 16 calls of
_vecmath functions per element ran at 1.4 ns per call where the same calls one or two per loop
take 0.25), and it runs on one core. This module rewrites such a loop:

- the elements are cut into tiles of `TILE` (4 KiB of float32), and the tiles are spread over
  Numba's threads (``prange``);
- within a tile, the group's statements run as a sequence of short loops ("stages") of at most
  `STAGE_MATH` transcendental calls each, so each stage is a vectorised loop whose iterations are
  independent; a value one stage computes and a later one reads passes through a tile-sized
  scratch array, which stays in the L1 cache;
- stages run with 512-bit vectors where the CPU has them (numdiff.kernels._vecmath.wide_vectors):
  they are compute-bound and L1-resident, the case where the wider vectors pay.

Results are bit for bit those of the flat loop: every statement computes the same expression in
the same precision, only the order of elements changes. Each stage is a generated loop like any
other (numdiff.kernels._codegen.vector_math_source): sin and cos keep their range guard, the stage
running its loop again with the C library's functions when an argument lies beyond _vecmath's range.
Stages that compute the same thing (each step of a repeated chain) share one function, so the
compile time follows the number of distinct stages, not the length of the chain.
"""

from __future__ import annotations

import ast
import copy
import hashlib

from numdiff._lazy import lazy_module

_codegen = lazy_module("numdiff.kernels._codegen")


TILE = 1024
# Most transcendental calls in one stage: with one or two the calls cost least per call
# (float32[65536] sin/exp chain: 0.25-0.3 ns per call; 0.5 with four, 0.75 with eight).
STAGE_MATH = 2


def _math_calls(node: ast.AST) -> int:
    return sum(1 for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
               and n.value.id == "math" and n.attr not in ("fabs", "sqrt"))


def _sin_cos_arguments(node: ast.AST) -> set:
    """The arguments (as source) of the sin and cos calls in `node`."""
    return {ast.unparse(n.args[0]) for n in ast.walk(node) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "math" and n.func.attr in ("sin", "cos")}


def _math_width(statement: ast.stmt, dtypes: dict) -> int | None:
    """The float width (32 or 64) the math calls of `statement` compute in, None without calls.

    _vecmath computes a float32 sin or cos in float64 (for its rounding) and the other float32
    functions in float32. LLVM vectorises a loop at the lanes of its widest type, so a float32 exp
    beside a float32 sin runs at half its lanes: a float32[65536] sin/exp chain's step took 1.19 ns
    an element with both in one loop, 1.07 in two.
    """
    if not _math_calls(statement.value):
        return None
    if dtypes.get(statement.targets[0].id) == "float64" or _sin_cos_arguments(statement.value):
        return 64
    return 32


def _stages(body: list[ast.stmt], dtypes: dict) -> list[list[ast.stmt]]:
    """The body cut greedily into runs of at most STAGE_MATH calls, all computing in one width
    (`_math_width`); stores join the stage that computes what they store. A sin or cos of an
    argument whose cos or sin the stage already computes is free: the two share their reduction
    and polynomials once inlined in one loop."""
    stages: list[list[ast.stmt]] = [[]]
    count = 0
    width = None
    defined_in: dict[str, int] = {}
    stores = []
    shared: set = set()
    for statement in _as_soon_as_possible(body):
        target = statement.targets[0]
        if isinstance(target, ast.Subscript):
            stores.append(statement)
            continue
        arguments = _sin_cos_arguments(statement.value)
        calls = _math_calls(statement.value) - len(arguments & shared)
        this_width = _math_width(statement, dtypes)
        crowded = calls and count + calls > STAGE_MATH
        if (crowded or (this_width and width and this_width != width)) and stages[-1]:
            stages.append([])
            count = 0
            width = None
            shared = set()
        width = this_width or width
        count += calls
        shared |= arguments
        stages[-1].append(statement)
        defined_in[target.id] = len(stages) - 1
    for statement in stores:
        read = statement.value
        stage = defined_in.get(read.id, 0) if isinstance(read, ast.Name) else len(stages) - 1
        stages[stage].append(statement)
    return _join_wide([part for stage in stages for part in _by_precision(stage, dtypes)], dtypes)


def _by_precision(stage: list[ast.stmt], dtypes: dict) -> list[list[ast.stmt]]:
    """A stage as two loops when its math computes in float32 beside float64 arithmetic that the
    math reads nothing of: LLVM vectorises a loop at the lanes of its widest type, so float64 work
    beside float32 math halves the math's lanes (a float32 chain's step with its float64 derivative:
    1.93 ns an element in one loop, 1.43 in two). Math computing in float64 (a float32 sin) runs at
    those lanes anyway, and keeps the float64 work beside it."""
    computed = [s for s in stage if isinstance(s.targets[0], ast.Name)]
    with_math = [s for s in computed if _math_calls(s.value)]
    if not with_math or _math_width(with_math[0], dtypes) == 64:
        return [stage]
    precision = dtypes[with_math[0].targets[0].id]
    first = [s for s in computed if dtypes[s.targets[0].id] == precision]
    second = [s for s in computed if dtypes[s.targets[0].id] != precision]
    later = {s.targets[0].id for s in second}
    if not second or any(isinstance(n, ast.Name) and n.id in later for s in first for n in ast.walk(s.value)):
        return [stage]
    stores = [s for s in stage if not isinstance(s.targets[0], ast.Name)]

    def stores_of(names: set) -> list:
        return [s for s in stores if isinstance(s.value, ast.Name) and s.value.id in names]

    first_names = {s.targets[0].id for s in first}
    rest = [s for s in stores if not (isinstance(s.value, ast.Name) and s.value.id in first_names)]
    return [first + stores_of(first_names), second + rest]


def _join_wide(stages: list[list[ast.stmt]], dtypes: dict) -> list[list[ast.stmt]]:
    """The stages with each stage of float64 arithmetic alone joined to the next stage when that one's
    math computes in float64 (a float32 chain's derivative factor from its exp, multiplied in while
    the next step's sin runs): one loop fewer, at no cost in lanes."""
    joined: list[list[ast.stmt]] = []
    for stage in stages:
        previous = joined[-1] if joined else None
        widths = {_math_width(s, dtypes) for s in stage if isinstance(s.targets[0], ast.Name)}
        if (previous is not None and 64 in widths
                and all(isinstance(s.targets[0], ast.Subscript) or (not _math_calls(s.value)
                        and dtypes.get(s.targets[0].id) == "float64") for s in previous)):
            joined[-1] = previous + stage
        else:
            joined.append(stage)
    return joined


def _as_soon_as_possible(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements ordered by how many statements lie on their longest chain of inputs (stable):
    work that reads only early values (the derivative factors of a chain computed beside its values)
    moves next to what it reads, so fewer values cross stages."""
    level: dict[str, int] = {}
    levels = []
    for statement in body:
        reads = [n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name) and n.id in level]
        depth = 1 + max((level[r] for r in reads), default=-1)
        target = statement.targets[0]
        if isinstance(target, ast.Name):
            level[target.id] = depth
        levels.append(depth)
    # A sin and a cos of one argument sit side by side, so that one stage computes both.
    first_of: dict = {}
    partner = []
    for k, statement in enumerate(body):
        arguments = sorted(_sin_cos_arguments(statement.value))
        key = (levels[k], arguments[0]) if arguments else None
        partner.append(first_of.setdefault(key, k) if key else k)
    # Within a level, arithmetic first: it joins the stage that computes its inputs (a chain's
    # derivative times the exp just computed) instead of passing them to the next stage's loop.
    order = sorted(range(len(body)), key=lambda k: (levels[k], _math_calls(body[k].value) > 0, partner[k], k))
    return [body[k] for k in order]


class _TileIndex(ast.NodeTransformer):
    """``a[i0]`` / ``a[r * n0 + i0]`` (row r of a packed buffer) -> ``<view of a at r * n0 + lo>[j]``,
    and one-element reads -> a scalar read once; records both."""

    def __init__(self) -> None:
        self.views: dict[tuple[str, int], str] = {}  # (array, row) -> view
        self.scalars: dict[str, str] = {}  # ``a[()]`` / ``a[0]`` -> its element, read before the tiles

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        index = node.slice
        if isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load) and (
                isinstance(index, ast.Tuple) and not index.elts or isinstance(index, ast.Constant)):
            source = ast.unparse(node)
            name = self.scalars.setdefault(source, f"{node.value.id}_element{len(self.scalars)}")
            return ast.Name(name, ast.Load())
        row = None
        if isinstance(index, ast.Name) and index.id == "i0":
            row = 0
        elif (isinstance(index, ast.BinOp) and isinstance(index.op, ast.Add) and isinstance(index.right, ast.Name)
              and index.right.id == "i0" and isinstance(index.left, ast.BinOp) and isinstance(index.left.op, ast.Mult)
              and isinstance(index.left.left, ast.Constant) and isinstance(index.left.right, ast.Name)
              and index.left.right.id == "n0"):
            row = index.left.left.value
        if row is None or not isinstance(node.value, ast.Name):
            return node
        key = (node.value.id, row)
        view = self.views.setdefault(key, f"{key[0]}_at{row}")
        return ast.Subscript(ast.Name(view, ast.Load()), ast.Name("j", ast.Load()), node.ctx)


class _Canonical(ast.NodeTransformer):
    """Renames a stage's arrays, scalars and temporaries by order of appearance, so that stages
    computing the same thing (a chain repeating one step) have one source, hence one function."""

    def __init__(self, arrays: set, scalars: set) -> None:
        self.arrays, self.scalars = arrays, scalars
        self.names: dict[str, str] = {}

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in ("j", "m", "np", "math", "_vecmath", "range"):
            return node
        if node.id not in self.names:
            prefix = "p" if node.id in self.arrays else "c" if node.id in self.scalars else "u"
            self.names[node.id] = f"{prefix}{sum(1 for n in self.names.values() if n[0] == prefix)}"
        return ast.Name(self.names[node.id], node.ctx)


def _stage_function(statements: list[ast.stmt], arrays: set, scalars: set, stages: dict) -> str:
    """The call of the stage function computing `statements` for j in range(m), defining the function
    in `stages` (name -> source) if no stage with its source is there yet.

    The function goes through numdiff.kernels._codegen.vector_math_source like every generated loop:
    its math calls become _vecmath's, and if a sin or cos argument lies beyond _vecmath's range the
    stage runs its loop again with the C library's functions. A stage never writes an array it
    reads (see _scratch_slots), so running it again computes the same values."""
    loop = ast.parse("for j in range(m):\n    _vecmath.wide_vectors()").body[0]
    loop.body += statements
    renamer = _Canonical(arrays, scalars)
    loop = renamer.visit(loop)
    params = [name for name in renamer.names if name in arrays or name in scalars]
    function = ast.parse(f"def stage(m, {', '.join(renamer.names[p] for p in params)}):\n    pass")
    function.body[0].body = [loop]
    source = ast.unparse(ast.fix_missing_locations(function))
    name = "stage_" + hashlib.sha256(source.encode()).hexdigest()[:12]
    if name not in stages:
        stages[name] = _codegen.vector_math_source("@njit(cache=True)\n" + source.replace("def stage(", f"def {name}(", 1),
                                          header=False)
    return f"{name}(m, {', '.join(params)})"


def _scratch_slots(cut: list, stage_of: dict, dtypes: dict) -> dict:
    """A tile-sized scratch array for each value a later stage reads, shared by values whose stage
    ranges do not overlap (``w_float32_0``, ...): the scratch a tile uses stays a few arrays, in the
    L1 cache. A value read last in stage k frees its array after stage k: a stage never writes what
    it reads, so it can run its loop a second time (the sin/cos range guard)."""
    last_read: dict[str, int] = {}
    for k, stage in enumerate(cut):
        for statement in stage:
            for node in ast.walk(statement.value):
                if isinstance(node, ast.Name) and node.id in stage_of and stage_of[node.id] < k:
                    last_read[node.id] = k
    free: dict[str, list] = {}
    count: dict[str, int] = {}
    slot_of: dict[str, str] = {}
    for k, stage in enumerate(cut):
        for statement in stage:
            target = statement.targets[0]
            if isinstance(target, ast.Name) and target.id in last_read:
                dtype = dtypes[target.id]
                pool = free.setdefault(dtype, [])
                if pool:
                    slot_of[target.id] = pool.pop()
                else:
                    slot_of[target.id] = f"w_{dtype}_{count.get(dtype, 0)}"
                    count[dtype] = count.get(dtype, 0) + 1
        for value, last in last_read.items():
            if last == k:
                free.setdefault(dtypes[value], []).append(slot_of[value])
    return slot_of


def tiled_kernel(name: str, params: list[str], prologue: list[str], body: list[str], dtypes: dict[str, str],
                 epilogue: list[str], stages: dict, sums: dict[str, str]) -> str:
    """The source of a parallel tiled kernel computing what ``for i0 in range(n0): body`` does, with
    ``n0`` in `params` (a runtime size: one kernel serves a group's computation at every size).

    `body` holds the flat loop's statements (``tN = ...`` and array stores indexed by ``i0``, rows
    of a packed buffer by ``r * n0 + i0``),
    `dtypes` the NumPy dtype name of each ``tN``; `prologue` and `epilogue` run before and after
    the loop (allocating and finishing reductions). `sums` maps arrays of `n0` elements that the
    body stores to names the epilogue reads their float64 sums by: each tile adds up its own part
    (_vecmath.lane_sum) in parallel, and the epilogue's name holds the sum of the tiles' sums. The
    stage functions the kernel calls are added to `stages` (function name -> source), shared by the
    kernels of one program.
    """
    statements = [ast.parse(line).body[0] for line in body]
    cut = _stages(statements, dtypes)
    stage_of = {s.targets[0].id: k for k, stage in enumerate(cut) for s in stage
                if isinstance(s.targets[0], ast.Name)}
    indexer = _TileIndex()
    slot_of = _scratch_slots(cut, stage_of, dtypes)
    calls = []
    for k, stage in enumerate(cut):
        reads = {n.id for s in stage for n in ast.walk(s.value) if isinstance(n, ast.Name)}
        loads = sorted(r for r in reads if r in stage_of and stage_of[r] < k)
        work = [ast.parse(f"{r} = {slot_of[r]}[j]").body[0] for r in loads]
        work += [indexer.visit(copy.deepcopy(s)) for s in stage]
        work += [ast.parse(f"{slot_of[s.targets[0].id]}[j] = {s.targets[0].id}").body[0] for s in stage
                 if isinstance(s.targets[0], ast.Name) and s.targets[0].id in slot_of]
        arrays = set(indexer.views.values()) | set(slot_of.values())
        calls.append(_stage_function(work, arrays, set(indexer.scalars.values()), stages))
    tile_body = [f"lo = tile * {TILE}", f"m = min({TILE}, n0 - lo)"]
    tile_body += [f"{view} = {array}[{row} * n0 + lo:{row} * n0 + lo + m]" if row else f"{view} = {array}[lo:lo + m]"
                  for (array, row), view in sorted(indexer.views.items())]
    tile_body += [f"{slot} = np.empty({TILE}, np.{slot.split('_')[1]})" for slot in sorted(set(slot_of.values()))]
    tile_body += calls
    tile_body += [f"{total}_tiles[tile] = _vecmath.lane_sum({array}[lo:lo + m])" for array, total in sums.items()]
    prologue = [*prologue, f"ntiles = (n0 + {TILE - 1}) // {TILE}"]
    prologue += [f"{total}_tiles = np.empty(ntiles, np.float64)" for total in sums.values()]
    epilogue = [f"{total} = _vecmath.lane_sum({total}_tiles)" for total in sums.values()] + epilogue
    lines = ["@njit(cache=True, parallel=True)", f"def {name}({', '.join(params)}):", *("    " + p for p in prologue)]
    lines += [f"    {scalar} = {source}" for source, scalar in indexer.scalars.items()]
    lines.append("    for tile in prange(ntiles):")
    lines += ["        " + s for s in tile_body]
    lines += ["    " + e for e in epilogue]
    tree = ast.parse("\n".join(lines))
    _codegen._loop_options(tree.body[0])
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
