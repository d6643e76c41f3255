"""Symbolic differentiation of a checked scalar expression (see _parse) into expression trees.

Branches differentiate branch-wise (d(a if c else b) = da if c else db); a math function's
derivative comes from its scalar rule (numdiff._ground.scalar_rules.RULES), with the rule's ``x``
replaced by the argument and ``out`` by the call itself. The builders fold 0 and 1 away, so the
derivative of a 10-op function stays a compact kernel.
"""

from __future__ import annotations

import ast
import copy

from numdiff._elementwise._parse import MATH_FUNCTIONS
from numdiff._ground.scalar_rules import RULES


def _is(node: ast.expr, value: float) -> bool:
    return isinstance(node, ast.Constant) and node.value == value


def number(value: float) -> ast.expr:
    return ast.Constant(float(value))


def add(a: ast.expr, b: ast.expr) -> ast.expr:
    if _is(a, 0.0):
        return b
    if _is(b, 0.0):
        return a
    return ast.BinOp(a, ast.Add(), b)


def sub(a: ast.expr, b: ast.expr) -> ast.expr:
    if _is(b, 0.0):
        return a
    if _is(a, 0.0):
        return neg(b)
    return ast.BinOp(a, ast.Sub(), b)


def mul(a: ast.expr, b: ast.expr) -> ast.expr:
    if _is(a, 0.0) or _is(b, 0.0):
        return number(0.0)
    if _is(a, 1.0):
        return b
    if _is(b, 1.0):
        return a
    return ast.BinOp(a, ast.Mult(), b)


def div(a: ast.expr, b: ast.expr) -> ast.expr:
    if _is(a, 0.0):
        return number(0.0)
    if _is(b, 1.0):
        return a
    return ast.BinOp(a, ast.Div(), b)


def neg(a: ast.expr) -> ast.expr:
    if isinstance(a, ast.Constant):
        return number(-a.value)
    return ast.UnaryOp(ast.USub(), a)


def power(a: ast.expr, b: ast.expr) -> ast.expr:
    return ast.BinOp(a, ast.Pow(), b)


def call(function: str, argument: ast.expr) -> ast.expr:
    return ast.Call(ast.Attribute(ast.Name("math", ast.Load()), function, ast.Load()), [argument], [])


class _Substitute(ast.NodeTransformer):
    """A rule's derivative expression with x and out replaced and where() as `a if c else b`."""

    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "where":
            condition, a, b = node.args
            return ast.IfExp(condition, a, b)
        return node


def rule_derivative(function: str, argument: ast.expr) -> ast.expr:
    """d math.function(u) / du as an expression in u, from the scalar rule table."""
    rule = RULES[MATH_FUNCTIONS[function]]
    tree = ast.parse(rule.derivatives[0], mode="eval").body
    return _Substitute({"x": argument, "out": call(function, argument)}).visit(tree)


def derive(node: ast.expr, variable: str) -> ast.expr:
    """d node / d variable."""
    if isinstance(node, ast.Constant):
        return number(0.0)
    if isinstance(node, ast.Name):
        return number(1.0 if node.id == variable else 0.0)
    if isinstance(node, ast.UnaryOp):
        return neg(derive(node.operand, variable))
    if isinstance(node, ast.IfExp):
        da, db = derive(node.body, variable), derive(node.orelse, variable)
        if _is(da, 0.0) and _is(db, 0.0):
            return number(0.0)
        return ast.IfExp(node.test, da, db)
    if isinstance(node, ast.Call):
        (argument,) = node.args
        return mul(rule_derivative(node.func.attr, argument), derive(argument, variable))
    if isinstance(node, ast.BinOp):
        a, b = node.left, node.right
        da, db = derive(a, variable), derive(b, variable)
        op = node.op
        if isinstance(op, ast.Add):
            return add(da, db)
        if isinstance(op, ast.Sub):
            return sub(da, db)
        if isinstance(op, ast.Mult):
            return add(mul(da, b), mul(a, db))
        if isinstance(op, ast.Div):
            return sub(div(da, b), div(mul(a, db), mul(b, b)))
        if isinstance(op, ast.Pow):
            if isinstance(b, ast.Constant):
                return mul(mul(b, power(a, number(b.value - 1.0))), da)
            # a ** b = exp(b log a): d = a ** b * (db log a + b da / a)
            return mul(node, add(mul(db, call("log", a)), div(mul(b, da), a)))
    raise TypeError(f"cannot differentiate {ast.unparse(node)}")
