"""A scalar Python function as one expression tree, checked against what @elementwise compiles.

Accepted: one ``return`` (after optional ``name = expression`` lines, which are inlined),
numbers (also math.pi and friends, and global or closed-over numbers, read once at decoration),
the arguments, ``+ - * / **``, unary minus, comparisons, ``and``/``or``/``not`` in
conditions, ``a if condition else b``, ``math.f(...)`` for a math function numdiff has a scalar
rule for (numdiff._ground.scalar_rules), and abs, min and max of two values. Anything else raises `ElementwiseSyntaxError` naming the
function and the line.
"""

from __future__ import annotations

import ast
import copy
import inspect
import math
import textwrap
from collections.abc import Callable

from numdiff._ground.scalar_expressions import MATH_RULES
from numdiff._ground.scalar_rules import RULES


class ElementwiseSyntaxError(ValueError):
    """The decorated function uses a construct @elementwise cannot compile or differentiate."""


def math_rules() -> dict[str, str]:
    """math function name -> scalar rule name, for the rules whose forward is ``math.f(x)``."""
    table = {}
    for rule in RULES.values():
        tree = ast.parse(rule.forward, mode="eval").body
        if (
            isinstance(tree, ast.Call)
            and isinstance(tree.func, ast.Attribute)
            and isinstance(tree.func.value, ast.Name)
            and tree.func.value.id == "math"
            and len(tree.args) == 1
        ):
            table[tree.func.attr] = rule.name
    for function, rule_name in MATH_RULES.items():
        table.setdefault(function, rule_name)
    return table


MATH_FUNCTIONS = math_rules()
_BINARY = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


class _Checker:
    def __init__(self, name: str, filename: str, first_line: int, arguments: tuple[str, ...], constants: dict) -> None:
        self.constants = constants
        self.name = name
        self.filename = filename
        self.first_line = first_line
        self.arguments = arguments
        self.locals: dict[str, ast.expr] = {}

    def fail(self, node: ast.AST, what: str) -> ElementwiseSyntaxError:
        line = self.first_line + getattr(node, "lineno", 1) - 1
        return ElementwiseSyntaxError(
            f"@elementwise: {self.name} ({self.filename}, line {line}): {what} is not supported; use "
            "arithmetic, comparisons, `a if cond else b` and math.* functions in one return expression"
        )

    def expression(self, node: ast.expr) -> ast.expr:
        """A checked copy of `node` with local names inlined."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise self.fail(node, f"the constant {node.value!r}")
            return ast.Constant(float(node.value))
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return self.locals[node.id]
            if node.id in self.arguments:
                return ast.Name(node.id, ast.Load())
            value = self.constants.get(node.id)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                # A global or closed-over number is baked into the kernel as a constant.
                return ast.Constant(float(value))
            raise self.fail(node, f"the name {node.id!r} (not an argument, a local defined above or a global number)")
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "math"
            and isinstance(getattr(math, node.attr, None), float)
        ):
            return ast.Constant(getattr(math, node.attr))
        if isinstance(node, ast.BinOp) and isinstance(node.op, _BINARY):
            return ast.BinOp(self.expression(node.left), node.op, self.expression(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.expression(node.operand)
            return ast.UnaryOp(ast.USub(), operand) if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.IfExp):
            return ast.IfExp(self.condition(node.test), self.expression(node.body), self.expression(node.orelse))
        if isinstance(node, ast.Call):
            function = node.func
            if (
                isinstance(function, ast.Attribute)
                and isinstance(function.value, ast.Name)
                and function.value.id == "math"
                and function.attr in MATH_FUNCTIONS
                and len(node.args) == 1
                and not node.keywords
            ):
                return ast.Call(ast.Attribute(ast.Name("math", ast.Load()), function.attr, ast.Load()), [self.expression(node.args[0])], [])
            if isinstance(function, ast.Name) and not node.keywords:
                return self.builtin(node, function.id)
            raise self.fail(node, self.unsupported_call(node))
        raise self.fail(node, f"the expression {ast.unparse(node)!r} ({type(node).__name__})")

    def builtin(self, node: ast.Call, name: str) -> ast.expr:
        """abs(v) as math.fabs(v); min/max of two values as a branch (ties take the second)."""
        args = [self.expression(a) for a in node.args]
        if name == "abs" and len(args) == 1:
            return ast.Call(ast.Attribute(ast.Name("math", ast.Load()), "fabs", ast.Load()), args, [])
        if name in ("min", "max") and len(args) == 2:
            a, b = args
            op = ast.Lt() if name == "min" else ast.Gt()
            return ast.IfExp(ast.Compare(a, [op], [b]), a, copy.deepcopy(b))
        raise self.fail(node, self.unsupported_call(node))

    def unsupported_call(self, node: ast.Call) -> str:
        return (
            f"the call {ast.unparse(node)!r} (supported: abs(v), min(a, b), max(a, b) and math functions of "
            f"one argument with a scalar rule: {sorted(MATH_FUNCTIONS)})"
        )

    def condition(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Compare):
            if not all(isinstance(op, _COMPARE) for op in node.ops):
                raise self.fail(node, f"the comparison {ast.unparse(node)!r} (in and is are not arithmetic comparisons)")
            operands = [self.expression(node.left)] + [self.expression(c) for c in node.comparators]
            # a < b < c is (a < b) and (b < c), as in Python.
            pairs = [ast.Compare(operands[i], [op], [operands[i + 1]]) for i, op in enumerate(node.ops)]
            return pairs[0] if len(pairs) == 1 else ast.BoolOp(ast.And(), pairs)
        if isinstance(node, ast.BoolOp):
            return ast.BoolOp(node.op, [self.condition(v) for v in node.values])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ast.UnaryOp(ast.Not(), self.condition(node.operand))
        raise self.fail(node, f"the condition {ast.unparse(node)!r}")


def parse_function(fn: Callable, outputs: int | None = None) -> tuple[tuple[str, ...], list[ast.expr]]:
    """(argument names, [expression, ...]) of a scalar function: one expression, or `outputs` of
    them for a function returning a tuple (a user-supplied derivative)."""
    name = getattr(fn, "__qualname__", repr(fn))
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        filename = inspect.getsourcefile(fn) or "<unknown>"
        first_line = inspect.getsourcelines(fn)[1]
    except (OSError, TypeError) as error:
        raise ElementwiseSyntaxError(f"@elementwise: the source of {name} is not available ({error})") from None
    definition = ast.parse(source).body[0]
    if not isinstance(definition, ast.FunctionDef):
        raise ElementwiseSyntaxError(f"@elementwise: {name} must be a function defined with def")
    spec = definition.args
    if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.defaults or spec.posonlyargs:
        raise ElementwiseSyntaxError(f"@elementwise: {name} must take plain positional arguments only (no defaults, *args, **kwargs)")
    arguments = tuple(a.arg for a in spec.args)
    if not arguments:
        raise ElementwiseSyntaxError(f"@elementwise: {name} takes no arguments")
    constants = dict(getattr(fn, "__globals__", {}))
    closure = inspect.getclosurevars(fn)
    constants.update(closure.globals)
    constants.update(closure.nonlocals)
    checker = _Checker(name, filename, first_line, arguments, constants)
    body = [s for s in definition.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))]
    for statement in body[:-1]:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)):
            raise checker.fail(statement, f"the statement {type(statement).__name__}")
        checker.locals[statement.targets[0].id] = checker.expression(statement.value)
    last = body[-1] if body else definition
    if not isinstance(last, ast.Return) or last.value is None:
        raise checker.fail(last, "a function that does not end in `return expression`")
    if outputs is None:
        return arguments, [checker.expression(last.value)]
    if not isinstance(last.value, ast.Tuple) or len(last.value.elts) != outputs:
        raise checker.fail(last, f"a derivative that does not return a tuple of {outputs} partials (one per argument)")
    return arguments, [checker.expression(e) for e in last.value.elts]
