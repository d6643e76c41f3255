"""One Python expression of a scalar function, checked and rewritten into @elementwise's language
(numdiff._elementwise._functions); the statements around it are _parse's."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

from numdiff._elementwise._functions import FUNCTION_RULES, USER_MATH, binary, branch, call, number

ELEMENTWISE_HELP = (
    "use arithmetic (+ - * / // % **), comparisons, `a if cond else b`, if/elif/else, local variables, "
    "`for i in range(constant)`, return, abs, min, max and math.* functions"
)
_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_OPERATOR_CALLS = {ast.Pow: "pow", ast.FloorDiv: "floor_divide", ast.Mod: "remainder"}
_SUPPORTED_CALLS = sorted(["abs", "min", "max", *(f"math.{f}" for f in (*USER_MATH, "log(x, base)", "degrees", "radians"))])


class ElementwiseSyntaxError(ValueError):
    """The decorated function uses a construct @elementwise cannot compile or differentiate."""


class Expressions:
    """Checks expressions of one function: `fail` names the function and the line; `lookup` gives a
    name's current value (an argument, a local, or a global number)."""

    def __init__(self, name: str, filename: str, first_line: int, lookup: Callable[[ast.Name], ast.expr]) -> None:
        self.name = name
        self.filename = filename
        self.first_line = first_line
        self.lookup = lookup

    def fail(self, node: ast.AST, what: str) -> ElementwiseSyntaxError:
        line = self.first_line + getattr(node, "lineno", 1) - 1
        return ElementwiseSyntaxError(
            f"@elementwise: {self.name} ({self.filename}, line {line}): {what} is not supported; {ELEMENTWISE_HELP}"
        )

    def expression(self, node: ast.expr) -> ast.expr:
        """The expression `node` in @elementwise's language, with names resolved."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise self.fail(node, f"the constant {node.value!r}")
            return number(node.value)
        if isinstance(node, ast.Name):
            return self.lookup(node)
        if isinstance(node, ast.Attribute) and _is_math(node.value) and isinstance(getattr(math, node.attr, None), float):
            return number(getattr(math, node.attr))
        if isinstance(node, ast.BinOp):
            left, right = self.expression(node.left), self.expression(node.right)
            if type(node.op) in _OPERATOR_CALLS:
                return call(_OPERATOR_CALLS[type(node.op)], left, right)
            if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                return binary(left, node.op, right)
            raise self.fail(node, f"the operator in {ast.unparse(node)!r}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.expression(node.operand)
            if isinstance(node.op, ast.UAdd):
                return operand
            return number(-operand.value) if isinstance(operand, ast.Constant) else ast.UnaryOp(ast.USub(), operand)
        if isinstance(node, ast.IfExp):
            return branch(self.condition(node.test), self.expression(node.body), self.expression(node.orelse))
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(node, f"the expression {ast.unparse(node)!r} ({type(node).__name__})")

    def call(self, node: ast.Call) -> ast.expr:
        function = node.func
        if node.keywords:
            raise self.fail(node, self.unsupported_call(node))
        args = [self.expression(a) for a in node.args]
        if isinstance(function, ast.Attribute) and _is_math(function.value):
            name = function.attr
            rule = USER_MATH.get(name)
            if rule is not None and len(args) == FUNCTION_RULES[rule].arity:
                return call(rule, *args)
            if name == "log" and len(args) == 2:
                return binary(call("log", args[0]), ast.Div(), call("log", args[1]))
            if name in ("degrees", "radians") and len(args) == 1:
                factor = 180.0 / math.pi if name == "degrees" else math.pi / 180.0
                return binary(args[0], ast.Mult(), number(factor))
        elif isinstance(function, ast.Name):
            # min and max are torch.minimum and torch.maximum: NaN propagates, a tie splits the gradient.
            if function.id == "abs" and len(args) == 1:
                return call("abs", *args)
            if function.id in ("min", "max") and len(args) == 2:
                return call("minimum" if function.id == "min" else "maximum", *args)
        raise self.fail(node, self.unsupported_call(node))

    def unsupported_call(self, node: ast.Call) -> str:
        return f"the call {ast.unparse(node)!r} (supported: {', '.join(_SUPPORTED_CALLS)})"

    def condition(self, node: ast.expr) -> ast.expr:
        """A condition: comparisons joined by and/or/not, and math.isnan/isinf/isfinite."""
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
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and _is_math(node.func.value)
            and node.func.attr in ("isnan", "isinf", "isfinite")
            and len(node.args) == 1
            and not node.keywords
        ):
            value = self.expression(node.args[0])
            magnitude = call("abs", value)
            if node.func.attr == "isnan":
                return ast.Compare(value, [ast.NotEq()], [value])
            if node.func.attr == "isinf":
                return ast.Compare(magnitude, [ast.Eq()], [number(math.inf)])
            return ast.Compare(magnitude, [ast.Lt()], [number(math.inf)])
        raise self.fail(node, f"the condition {ast.unparse(node)!r}")


def _is_math(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "math"

