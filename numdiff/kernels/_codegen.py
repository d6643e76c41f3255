"""Generated kernel source: scalar expressions to loop bodies, and the rewrite of a generated
module's CPU loops to numdiff.kernels._vecmath's vectorisable math.

Each generated kernel is written to its own module and imported from there
(numdiff.kernels._kernel_files: `load_source`, `generated_dir`). The file name holds a hash of
the source, so a changed rule gets a new file and never a stale cache; an existing file is used
only if its text is exactly the source.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import re
import sys
from pathlib import Path

from numdiff._ground.scalar_expressions import ScalarRule, vjp_expression
from numdiff.kernels import _special, _vecmath
from numdiff.kernels._kernel_files import generated_dir, read_checked, write_checked
from numdiff.kernels._kernel_files import load_source as load_source  # callers load through here


class _Substitute(ast.NodeTransformer):
    """Rewrite an expression for a kernel body: variables to array reads, where() to `a if c else b`."""

    def __init__(self, reads: dict[str, str], math_prefix: str | None) -> None:
        self.reads = reads
        self.math_prefix = math_prefix

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.reads:
            return ast.parse(self.reads[node.id], mode="eval").body
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        if self.math_prefix is not None and isinstance(node.value, ast.Name) and node.value.id == "math":
            return ast.Name(self.math_prefix + node.attr, ast.Load())
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "where":
            condition, a, b = node.args
            return ast.IfExp(condition, a, b)
        return node


def scalar_code(expression: str, reads: dict[str, str], math_prefix: str | None = None) -> str:
    """`expression` with each variable replaced by its read (``{"x": "a_x[i]"}``), as source;
    with `math_prefix`, ``math.exp`` becomes a plain name (``m_exp``) the caller imports.

    Where every read is one term that the rewritten expression would print as it is (a name, an
    array read, a call, a non-negative number), the reads are pasted into the expression's text
    rewritten once per rule (`_template`): the same text as rewriting the whole expression, without
    parsing and printing it per call (a compiled LSTM's first call wrote 4,000 expressions, 0.18 s).
    """
    operands = tuple(reads.values())
    if all(_pastes_as_is(operand) for operand in operands):
        parts = _template(expression, tuple(reads), math_prefix)
        if parts is not None:
            return "".join(part if k % 2 == 0 else operands[int(part)] for k, part in enumerate(parts))
    tree = _Substitute(reads, math_prefix).visit(ast.parse(expression, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


_SLOT = re.compile(r"__read(\d+)__")


@functools.lru_cache(maxsize=4096)
def _template(expression: str, names: tuple[str, ...], math_prefix: str | None) -> tuple[str, ...] | None:
    """`expression` rewritten with its k-th read named ``__read<k>__``, split at those names:
    text, read number, text, ...; None where a read stands where its own text could print
    differently (the object of an attribute, a call or a subscript)."""
    slots = {name: f"__read{k}__" for k, name in enumerate(names)}
    tree = _Substitute(slots, math_prefix).visit(ast.parse(expression, mode="eval"))
    for node in ast.walk(tree):
        inner = node.value if isinstance(node, (ast.Attribute, ast.Subscript)) else getattr(node, "func", None)
        if isinstance(inner, ast.Name) and _SLOT.fullmatch(inner.id):
            return None
    return tuple(_SLOT.split(ast.unparse(ast.fix_missing_locations(tree))))


@functools.lru_cache(maxsize=8192)
def _pastes_as_is(operand: str) -> bool:
    """Whether `operand` is one term printed as written: ast.unparse never puts it in parentheses
    inside an expression and prints it as this very text."""
    try:
        node = ast.parse(operand, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float)) or node.value < 0:
            return False
    elif not isinstance(node, (ast.Name, ast.Subscript, ast.Call, ast.Attribute)):
        return False
    return ast.unparse(node) == operand


@functools.cache
def vjp_expressions(rule: ScalarRule, needed: tuple[int, ...]) -> tuple[str, ...]:
    """The gradient expressions (in ``g``, the inputs, ``out``, attrs) of the inputs in `needed`."""
    return tuple(vjp_expression(rule, index, "g") for index in needed)


@functools.cache
def backward_reads(rule: ScalarRule, needed: tuple[int, ...]) -> tuple[str, ...]:
    """The operands a backward kernel reads: ``g`` and the saved values its expressions use."""
    used = set()
    for expression in vjp_expressions(rule, needed):
        tree = ast.parse(expression, mode="eval")
        used |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return tuple(name for name in ("g", *rule.saved) if name in used)


# ``math.<f>`` calls a generated CPU loop makes through numdiff.kernels._vecmath instead.
_VECTOR_MATH = frozenset(_vecmath.FUNCTIONS)
_VECMATH_DIGEST = hashlib.sha256(
    b"".join((Path(_vecmath.__file__).parent / name).read_bytes() for name in _vecmath.SOURCES)
).hexdigest()[:16]
_GUARDED_MATH = frozenset(_vecmath.GUARDED)
_WIDE_MATH = frozenset(_vecmath.WIDE)


def _math_call(node: ast.expr, names: frozenset) -> str | None:
    """The function's name if `node` is a one-argument call ``math.<name>(a)`` of one of `names`."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.func, ast.Attribute)):
        return None
    function = node.func
    if isinstance(function.value, ast.Name) and function.value.id == "math" and function.attr in names:
        return function.attr
    return None


class _VectorMath(ast.NodeTransformer):
    """``math.f(a)`` -> ``_vecmath.f(a)`` for the functions _vecmath has, and ``np.float64(math.f(a))``
    -> ``_vecmath.f_wide(a)`` for those it has in float64 before a float32 rounding; ``a ** b`` ->
    ``_vecmath.power(a, b)``; collects the sin/cos arguments."""

    def __init__(self) -> None:
        self.guarded: list[ast.expr] = []

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            return ast.Call(ast.Attribute(ast.Name("_vecmath", ast.Load()), "power", ast.Load()), [node.left, node.right], [])
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        function = node.func
        if (
            isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name)
            and function.value.id == "np" and function.attr == "float64" and len(node.args) == 1
        ):
            name = _math_call(node.args[0], _WIDE_MATH)
            if name is not None:
                (argument,) = node.args[0].args
                argument = self.visit(argument)
                if name in _GUARDED_MATH:
                    self.guarded.append(argument)
                return ast.Call(ast.Attribute(ast.Name("_vecmath", ast.Load()), f"{name}_wide", ast.Load()), [argument], [])
        self.generic_visit(node)
        name = _math_call(node, _VECTOR_MATH)
        if name is not None:
            node.func = ast.Attribute(ast.Name("_vecmath", ast.Load()), name, ast.Load())
            if name in _GUARDED_MATH:
                self.guarded.append(node.args[0])
        return node


# ``math.<f>`` calls of functions the math module lacks (digamma, erfinv, ...): numdiff.kernels._special.
_SPECIAL_MATH = frozenset(_special.FUNCTIONS)
_SPECIAL_DIGEST = hashlib.sha256(Path(_special.__file__).read_bytes()).hexdigest()[:16]


class _SpecialMath(ast.NodeTransformer):
    """``math.digamma`` -> ``_special.digamma``, for every function of `_SPECIAL_MATH`."""

    def __init__(self) -> None:
        self.used = False

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        if isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in _SPECIAL_MATH:
            self.used = True
            return ast.Attribute(ast.Name("_special", ast.Load()), node.attr, ast.Load())
        return self.generic_visit(node)


def _innermost_body(loop: ast.For) -> list[ast.stmt]:
    """The statement list of the deepest ``for`` (or ``while``) in a loop nest (where the element is
    computed)."""
    while True:
        inner = [s for s in loop.body if isinstance(s, (ast.For, ast.While))]
        if not inner:
            return loop.body
        loop = inner[-1]


def _is_prange(loop: ast.For) -> bool:
    call = loop.iter
    if not isinstance(call, ast.Call):
        return False
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
    return name == "prange"


# Iterations of a parallel loop per task when the loop also checks sin/cos arguments: each task
# or-reduces its own flag in a serial inner loop (Numba's prange has no or-reduction, and an integer
# sum would halve LLVM's float32 lanes).
_CHUNK = 4096


def _guard(checks: list[ast.expr], flag: str) -> ast.stmt:
    """``flag |= check_1 | check_2 | ...``: whether any sin/cos argument of this element is out of range."""
    total = checks[0]
    for check in checks[1:]:
        total = ast.BinOp(total, ast.BitOr(), check)
    return ast.AugAssign(ast.Name(flag, ast.Store()), ast.BitOr(), total)


def _chunked(loop: ast.For, checks: list[ast.expr]) -> list[ast.stmt]:
    """``for i in prange(n): body`` as prange over chunks of _CHUNK iterations, each setting its
    entry of ``outside_chunks``; then ``outside_sin_cos = outside_chunks.any()``."""
    (size,) = loop.iter.args
    # A loop over ``parts`` hands each thread one run of the work (numdiff.kernels.elementwise's N-d
    # loops): one iteration a task, or the runs would share one task and one thread.
    per_task = 1 if isinstance(size, ast.Name) and size.id == "parts" else _CHUNK
    chunks = f"(outside_size + {per_task - 1}) // {per_task}"
    bounds = f"chunk * {per_task}, min(outside_size, chunk * {per_task} + {per_task})"
    if _only_indexes(loop.target, loop.body):
        # An unsigned element index: a signed one that LLVM cannot prove non-negative (the chunk
        # number comes from the parallel schedule) gets Numba's wraparound for negative indices,
        # and that select per access turns the vector loads and stores into gathers and scatters
        # (g * cos(x) on float32[2^20]: 1.77 ms signed, 1.07 ms unsigned, one thread).
        bounds = f"np.uint64(chunk * {per_task}), np.uint64(min(outside_size, chunk * {per_task} + {per_task}))"
    inner = ast.For(loop.target, ast.parse(f"range({bounds})", mode="eval").body, loop.body, [])
    _innermost_body(inner).append(_guard(checks, "outside_here"))
    task = ast.For(
        ast.Name("chunk", ast.Store()), ast.Call(loop.iter.func, [ast.parse(chunks, mode="eval").body], []),
        [ast.parse("outside_here = False").body[0], inner, ast.parse("outside_chunks[chunk] = outside_here").body[0]],
        [],
    )
    return [
        ast.Assign([ast.Name("outside_size", ast.Store())], size),
        ast.parse(f"outside_chunks = np.zeros({chunks}, np.bool_)").body[0],
        task,
        ast.parse("outside_sin_cos = outside_chunks.any()").body[0],
    ]


def _only_indexes(target: ast.expr, body: list[ast.stmt]) -> bool:
    """Whether the loop variable `target` is used in `body` only as an array index (``a[i]``, or
    one entry of ``a[j, i]``), so that it may be unsigned: uint64 arithmetic mixed with signed
    integers would give floats."""
    if not isinstance(target, ast.Name):
        return False
    index_uses = set()
    for node in ast.walk(ast.Module(body, [])):
        if isinstance(node, ast.Subscript):
            entries = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            index_uses.update(id(e) for e in entries if isinstance(e, ast.Name) and e.id == target.id)
    uses = [n for n in ast.walk(ast.Module(body, [])) if isinstance(n, ast.Name) and n.id == target.id]
    return all(id(n) in index_uses for n in uses)


def _vectorize_function(function: ast.FunctionDef) -> None:
    """Rewrite one generated kernel in place: see `vector_math_source`."""
    loops = [k for k, s in enumerate(function.body) if isinstance(s, ast.For)]
    if not loops:
        return
    start = loops[0]
    setup, loop, rest = function.body[:start], function.body[start], function.body[start + 1:]
    exact = copy.deepcopy(loop)
    rewriter = _VectorMath()
    fast = rewriter.visit(loop)
    if not rewriter.guarded:
        function.body = [*setup, fast, *rest]
        return
    # sin/cos of an argument beyond _vecmath.SIN_COS_LIMIT: flag it, and if any element has one,
    # compute the whole loop again with the C library's functions (exact for every argument).
    checks = [ast.Call(ast.Attribute(ast.Name("_vecmath", ast.Load()), "outside_sin_cos", ast.Load()), [a], [])
              for a in rewriter.guarded]
    if _is_prange(fast):
        checked = _chunked(fast, checks)
    else:
        _innermost_body(fast).append(_guard(checks, "outside_sin_cos"))
        checked = [ast.parse("outside_sin_cos = False").body[0], fast]
    again = ast.If(ast.Name("outside_sin_cos", ast.Load()), [*copy.deepcopy(setup), exact], [])
    function.body = [*setup, *checked, again, *rest]


def _loop_options(function: ast.FunctionDef) -> None:
    """The function's @njit gets ``error_model="numpy"``: x / 0 is inf or NaN as in NumPy (and as
    PyTorch), and a division no longer has a branch that raises, which would stop vectorisation;
    and ``fastmath={"contract"}``: a multiply-add may become one FMA instruction (one rounding
    instead of two), nothing else of fastmath."""
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "njit":
            decorator.keywords = [k for k in decorator.keywords if k.arg not in ("error_model", "fastmath")]
            decorator.keywords.append(ast.keyword("error_model", ast.Constant("numpy")))
            decorator.keywords.append(ast.keyword("fastmath", ast.Set([ast.Constant("contract")])))


def vector_math_source(source: str, header: bool = True) -> str:
    """A generated module's source with its CPU loops calling numdiff.kernels._vecmath: see
    `rewrite_vector_math`. Rewritten once per text: the result is kept in memory and under
    `generated_dir()` (named by a hash of the text, of `header` and of the rewriting code, and
    carrying a hash of its own contents), so a later process reads it instead of parsing and
    rewriting the text again (a compiled model's first call rewrites 10-20 kernels)."""
    key = hashlib.sha256(f"{_rewriter_digest()}\n{header}\n{source}".encode()).hexdigest()[:24]
    code = _rewritten.get(key)
    if code is None:
        path = generated_dir() / "vector_math" / f"{key}.py"
        code = read_checked(path)
        if code is None:
            code = rewrite_vector_math(source, header)
            write_checked(path, code)
        _rewritten[key] = code
    return code


_rewritten: dict[str, str] = {}


@functools.cache
def _rewriter_digest() -> str:
    """What the rewriting depends on: this file, _vecmath's and _special's sources, Python's ast."""
    code = Path(__file__).read_bytes()
    return hashlib.sha256(code + f"{_VECMATH_DIGEST}{_SPECIAL_DIGEST}{sys.version_info[:2]}".encode()).hexdigest()


def rewrite_vector_math(source: str, header: bool = True) -> str:
    """A generated module's source with its CPU loops calling numdiff.kernels._vecmath.

    In every function, the first top-level ``for`` nest has its ``math.exp``/``log``/``sin``/...
    calls replaced by the _vecmath functions of the same name, which LLVM vectorises. If the loop
    calls sin or cos it also flags an element whose argument lies beyond _vecmath's range, and
    when there is one the function runs its original loop (C library calls) again after the fast
    one, so every result is the accurate one. Functions compile with `_loop_options`. Calls of
    the functions math lacks (``math.digamma``, ...) become calls of numdiff.kernels._special.
    """
    tree = ast.parse(source)
    special = _SpecialMath()
    tree = special.visit(tree)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            _loop_options(node)
            _vectorize_function(node)
    # The digest of _vecmath's source is part of the generated text, hence of the file name the
    # kernel is cached under: Numba's cache would not notice a change in code it inlined.
    code = f"# numdiff.kernels._vecmath {_VECMATH_DIGEST}\n" + ast.unparse(ast.fix_missing_locations(tree)) + "\n"
    if special.used:  # the same for _special, imported here as the caller's header does not
        code = f"# numdiff.kernels._special {_SPECIAL_DIGEST}\nfrom numdiff.kernels import _special\n" + code
    # Without `header` the caller's module imports _vecmath (numdiff/compile/program.py).
    return "import numpy as np\n\nfrom numdiff.kernels import _vecmath\n" + code if header else code
