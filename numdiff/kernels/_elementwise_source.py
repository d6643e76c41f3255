"""The source text of one generated elementwise kernel (numdiff.kernels.elementwise compiles it):
the loop nest for an operand layout ("flat", "nd<rank>" or "nd"), the scalar expressions written
into it, and the float32 kernels' constants kept in float32.

Split from numdiff/kernels/elementwise.py, which chooses the layout and launches the kernels.
"""

from __future__ import annotations

import ast

from numdiff._ground.scalar_expressions import math_functions_in
from numdiff.kernels._codegen import scalar_code, vector_math_source

__all__ = ["SINGLE_PRECISION_MATH", "in_operand_precision", "loop_source"]

_HEADER = (
    "import math\n\nimport numpy as np\nfrom numba import prange\n\n"
    "from numdiff.kernels._parallel import contiguous_run\n"
    "from numdiff.kernels._self_healing_cache import njit\n\n\n"
)


def loop_source(
    results: list[str], expressions: list[str], operands: tuple[str, ...], pattern: str,
    attr_names: tuple[str, ...], layout: str, parallel: bool,
) -> str:
    """The source of one kernel: ``kernel(r_0[, r_1], a_<operand>..., <attrs>[, parts])``."""
    arrays = [name for name, kind in zip(operands, pattern) if kind == "A"]
    reads = {name: f"v_{name}" for name in operands}
    # The N-d parallel loop takes the thread count last: numba.get_num_threads() called in a kernel
    # is a ctypes global, which keeps the kernel out of the disk cache.
    split = ["parts"] if layout not in ("flat", "nd1") and parallel else []
    params = ", ".join([*results, *[f"a_{n}" for n in operands], *attr_names, *split])
    loop = "prange" if parallel else "range"
    # error_model="numpy": x / 0 is inf or NaN, as in NumPy, instead of raising ZeroDivisionError.
    options = ", parallel=True" if parallel else ""
    lines = [f"@njit(cache=True, error_model=\"numpy\"{options})", f"def kernel({params}):"]
    header = _HEADER
    if layout == "flat" and not parallel and any("math.erf(" in e for e in expressions):
        # erf's two polynomials and exp are arithmetic on data in the L1 cache: 512-bit vectors
        # pay there (GELU forward / backward on float32[524288], one thread, Emerald Rapids:
        # 0.75 / 1.06 ms at 256 bits -> see numdiff/kernels/_gate_math.wide_kernel).
        header += "from numdiff.kernels._gate_math import wide_kernel\n\n\n"
        lines.append("    wide_kernel()")
    lines += [f"    v_{name} = a_{name}" for name, kind in zip(operands, pattern) if kind == "S"]
    if layout == "flat":
        lines.append(f"    for i in {loop}({results[0]}.size):")
        body, index = "        ", "[i]"
        sources = {name: f"a_{name}" for name in arrays}
        targets = results
    elif layout != "nd":
        # A loop nest of the coalesced rank (layout "nd<rank>"): one index per axis, which Numba
        # compiles to strided loads; np.ndindex's tuple index cost ~17x more per element.
        rank = int(layout[2:])
        lines += [f"    n{d} = {results[0]}.shape[{d}]" for d in range(rank)]
        body, first = "    ", 0
        if parallel and rank >= 2:
            # One contiguous run of the (i0, i1) cells a thread (contiguous_run), cut at the ends
            # of axis 0: a prange over axis 0 split 3 rows as 2 against 1 on two threads. The
            # run's i1 loop is unsigned: a signed start would keep Numba's wraparound select per
            # load and stop the vector loads (see numdiff.kernels.reduce_sum).
            lines += [
                "    for t in prange(parts):",
                "        start, stop = contiguous_run(n0 * n1, parts, t)",
                "        while start < stop:",
                "            i0, j0 = start // n1, start % n1",
                "            j1 = min(n1, j0 + stop - start)",
                "            start += j1 - j0",
                "            for i1 in range(np.uint64(j0), np.uint64(j1)):",
            ]
            body, first = " " * 16, 2
        for d in range(first, rank):
            lines.append(f"{body}for i{d} in {loop if d == 0 else 'range'}(n{d}):")
            body += "    "
        index = "[" + ", ".join(f"i{d}" for d in range(rank)) + "]"
        sources = {name: f"a_{name}" for name in arrays}
        targets = results
    elif not parallel:
        lines.append(f"    for idx in np.ndindex({results[0]}.shape):")
        body, index = "        ", "[idx]"
        sources = {name: f"a_{name}" for name in arrays}
        targets = results
    else:
        # One contiguous run of the first two axes' (i, j) cells a thread (contiguous_run), cut
        # into slices r[i, j0:j1] at the ends of the first axis: a first axis of 1 or 3 on two
        # threads no longer leaves a thread idle or a whole row short.
        lines += [
            f"    cols = {results[0]}.shape[1]",
            "    for t in prange(parts):",
            f"        start, stop = contiguous_run({results[0]}.shape[0] * cols, parts, t)",
            "        while start < stop:",
            "            i, j0 = start // cols, start % cols",
            "            j1 = min(cols, j0 + stop - start)",
            "            start += j1 - j0",
        ]
        lines += [f"            s_{r} = {r}[i, j0:j1]" for r in results]
        lines += [f"            s_{name} = a_{name}[i, j0:j1]" for name in arrays]
        lines.append(f"            for idx in np.ndindex(s_{results[0]}.shape):")
        body, index = "                ", "[idx]"
        sources = {name: f"s_{name}" for name in arrays}
        targets = [f"s_{r}" for r in results]
    lines += [f"{body}v_{name} = {sources[name]}{index}" for name in arrays]
    for target, expression in zip(targets, expressions):
        lines.append(f"{body}{target}{index} = {in_operand_precision(scalar_code(expression, reads), arrays)}")
    return vector_math_source(header + "\n".join(lines) + "\n")


# The _vecmath functions whose float32 versions a float32 kernel should reach: exp and erf in
# float64 cost two to four times their float32 versions here. sin and cos are left out: their
# float32 versions take the range guard and the float64 "wide" forms (numdiff/kernels/_codegen.py).
SINGLE_PRECISION_MATH = ("exp", "expm1", "log", "log1p", "tanh", "erf")


class _InOperandPrecision(ast.NodeTransformer):
    """Float constants -> ``_vecmath.like(c, v_x)``, v_x the expression's first array operand, and
    ``math.erf(a)`` -> ``_vecmath.erf_like(a, v_y)``, v_y the first operand read in `a`."""

    def __init__(self, like: str) -> None:
        self.like = like

    def _call(self, name: str, argument: ast.expr) -> ast.Call:
        attribute = ast.Attribute(ast.Name("_vecmath", ast.Load()), name, ast.Load())
        return ast.Call(attribute, [argument, ast.Name(self.like, ast.Load())], [])

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        return self._call("like", node) if type(node.value) is float else node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        function = node.func
        if (isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name)
                and function.value.id == "math" and function.attr == "erf" and len(node.args) == 1):
            reads = [n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name) and n.id.startswith("v_")]
            like = ast.Name(reads[0] if reads else self.like, ast.Load())
            return ast.Call(ast.Attribute(ast.Name("_vecmath", ast.Load()), "erf_like", ast.Load()), [node.args[0], like], [])
        return node


def in_operand_precision(code: str, arrays: list[str]) -> str:
    """`code` computed in the precision of its array operands where it calls exp, erf, tanh or log.

    A rule's float constants are float64 and make float32 arithmetic float64: GELU's backward
    ``g * (0.5 * (1.0 + erf(x * 0.7071...)) + x * 0.3989... * exp(-0.5 * x * x))`` ran its exp in
    float64, sigmoid's ``1.0 / (1.0 + exp(-x))`` too. Each constant becomes ``_vecmath.like(c, v_x)``,
    c rounded to v_x's type when that is float32 (a float64 or integer operand keeps c), so a
    float32 kernel computes in float32, as PyTorch's do (GELU's backward on float32[524288], one
    thread: 2.7 ms -> 1.4). Scalar operands (Python numbers) stay float64; attrs are passed rounded
    to float32 in a float32 kernel (numdiff.kernels.elementwise's `_in_kernel_precision`). An erf reads its
    argument rounded to the operands' precision in any case (``_vecmath.erf_like``).
    """
    functions = math_functions_in(code)
    if not arrays or not functions & set(SINGLE_PRECISION_MATH) or functions & {"sin", "cos"}:
        return code
    tree = _InOperandPrecision(f"v_{arrays[0]}").visit(ast.parse(code, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))
