"""The expression language @elementwise compiles: builders that fold constants, the functions it
calls, and the expansion of a checked expression into kernel source.

An expression is a Python AST made of numbers, argument names, ``+ - * /``, unary minus,
``a if condition else b`` and *function calls* ``_rule.<name>(a, ...)``, one per scalar rule of
numdiff._ground.scalar_rules (``pow``, ``minimum``, ``exp``, ``atan2``, ...) or of `LOCAL_RULES` (``//``
and ``%``, which numdiff has as no public op). A call carries its forward and its partial
derivatives in one place, the rule, so ``x ** y``, ``min(a, b)`` and ``math.log(u)`` differentiate
exactly as the tensor ops ``pow``, ``minimum`` and ``log`` do, with PyTorch's values at 0, ties and
NaN. `expand` writes the calls out as their forwards for the kernels.
"""

from __future__ import annotations

import ast
import copy
import math
import operator

import numpy as np

from numdiff._ground.scalar_expressions import MATH_RULES, ScalarRule
from numdiff._ground.scalar_rules import RULES

# Python's floor division and remainder (the sign of the divisor, as torch.remainder; a zero
# remainder has the dividend's sign, as torch's, where Python's has the divisor's). PyTorch has no
# derivative for floor_divide; a piecewise-constant function's is 0, as for floor.
LOCAL_RULES = {
    "floor_divide": ScalarRule("floor_divide", 2, "x // y", ("0.0", "0.0")),
    "remainder": ScalarRule("remainder", 2, "where(x % y == 0.0, x * 0.0, x % y)", ("1.0", "-(x // y)")),
}
FUNCTION_RULES: dict[str, ScalarRule] = {**RULES, **LOCAL_RULES}
CALL = "_rule"  # the name that holds the calls: _rule.exp(x)


def _math_forwards() -> dict[str, str]:
    """math.f -> rule name, for every rule whose forward is ``math.f(<its parameters in order>)``."""
    table = {}
    for rule in RULES.values():
        tree = ast.parse(rule.forward, mode="eval").body
        parameters = (*rule.inputs, *rule.attr_names)
        if (
            isinstance(tree, ast.Call)
            and isinstance(tree.func, ast.Attribute)
            and isinstance(tree.func.value, ast.Name)
            and tree.func.value.id == "math"
            and [getattr(a, "id", None) for a in tree.args] == list(parameters)
        ):
            table[tree.func.attr] = rule.name
    for function, rule_name in MATH_RULES.items():
        table.setdefault(function, rule_name)
    return table


# The math functions a rule computes (with digamma, polygamma and erfinv, which numdiff adds).
RULE_OF_MATH = _math_forwards()
# What a user's function may call as ``math.f(...)``: those of RULE_OF_MATH that take no attribute,
# and the roundings, pow and exp2, whose rules are written without a math call of that name.
USER_MATH = {
    **{f: r for f, r in RULE_OF_MATH.items() if not RULES[r].attrs},
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "pow": "pow",
    "exp2": "exp2",
}


def number(value: float) -> ast.expr:
    return ast.Constant(float(value))


def constant(node: ast.expr) -> float | None:
    """The value of a number node, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        return node.value
    return None


def zero() -> ast.expr:
    """A structural 0: the gradient along a path that does not reach the variable (a branch not
    taken). A product with it is 0 even against an inf or NaN factor, as autograd has no such
    path; a 0 the user wrote, or computed from numbers, is a value."""
    node = ast.Constant(0.0)
    node.structural = True
    return node


def mask() -> ast.expr:
    """A 0 a rule writes (relu's where(x <= 0, 0, 1), floor's 0): see _derive."""
    node = ast.Constant(0.0)
    node.mask = True
    return node


def is_mask(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and getattr(node, "mask", False)


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and getattr(node, "structural", False)


def _is(node: ast.expr, value: float) -> bool:
    c = constant(node)
    return c is not None and c == value


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def binary(a: ast.expr, op: ast.operator, b: ast.expr) -> ast.expr:
    """``a op b``, computed now (in float64, as the kernel would) when both are numbers, unless that
    gives 0: a zero computed from numbers multiplies like any value, as in autograd (d(x - x) is
    1.0 - 1.0, NaN against a NaN partial), and a rule writes ``0.0 * 1.0`` for such a 0 (see abs)."""
    x, y = constant(a), constant(b)
    if x is not None and y is not None:
        with np.errstate(all="ignore"):
            value = _ARITHMETIC[type(op)](np.float64(x), np.float64(y))
        if value != 0.0:
            return number(value)
    return ast.BinOp(a, op, b)


def add(a: ast.expr, b: ast.expr) -> ast.expr:
    """a + b for chain-rule terms: a term that is exactly 0 is dropped."""
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    return binary(a, ast.Add(), b)


def sub(a: ast.expr, b: ast.expr) -> ast.expr:
    if _is_zero(b):
        return a
    if _is_zero(a):
        return neg(b)
    return binary(a, ast.Sub(), b)


def _conditionally_zero(node: ast.expr) -> bool:
    """Whether `node` is 0 on some branch (a tangent through `a if c else b` where one side does not
    depend on the variable): multiplying it must not turn that 0 into NaN."""
    if isinstance(node, ast.IfExp):
        return _is_zero(node.body) or _is_zero(node.orelse) or _conditionally_zero(node.body) or _conditionally_zero(node.orelse)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _conditionally_zero(node.left) or _conditionally_zero(node.right)
    if isinstance(node, ast.UnaryOp):
        return _conditionally_zero(node.operand)
    return False


def _distribute(factor: ast.expr, tangent: ast.expr, product) -> ast.expr:
    """product(factor, tangent) taken into each branch and term of `tangent`, as autograd takes a
    gradient along each path: on a branch where the tangent is 0, an inf or NaN factor gives 0."""
    if isinstance(tangent, ast.IfExp):
        return branch(tangent.test, product(factor, tangent.body), product(factor, tangent.orelse))
    if isinstance(tangent, ast.BinOp):
        combine = add if isinstance(tangent.op, ast.Add) else sub
        return combine(product(factor, tangent.left), product(factor, tangent.right))
    return neg(product(factor, tangent.operand))


def mul(a: ast.expr, b: ast.expr) -> ast.expr:
    """a * b for a partial derivative times a tangent: a structural 0 (see `zero`) gives 0."""
    if _is_zero(a) or _is_zero(b):
        return zero()
    if _conditionally_zero(b):
        return _distribute(a, b, mul)
    if _conditionally_zero(a):
        return _distribute(b, a, lambda x, y: mul(y, x))
    if _is(a, 1.0):
        return b
    if _is(b, 1.0):
        return a
    return binary(a, ast.Mult(), b)


def div(a: ast.expr, b: ast.expr) -> ast.expr:
    if _is_zero(a):
        return zero()
    if _conditionally_zero(a):
        return _distribute(b, a, lambda x, y: div(y, x))
    if _is(b, 1.0):
        return a
    return binary(a, ast.Div(), b)


def neg(a: ast.expr) -> ast.expr:
    if _is_zero(a):
        return a
    c = constant(a)
    if c is not None:
        return number(-c)
    return ast.UnaryOp(ast.USub(), a)


def branch(test: ast.expr, a: ast.expr, b: ast.expr) -> ast.expr:
    """``a if test else b``; the taken branch alone when `test` compares numbers."""
    decided = _decide(test)
    if decided is not None:
        return a if decided else b
    if _is_zero(a) and _is_zero(b):
        return zero()
    return ast.IfExp(test, a, b)


def _decide(test: ast.expr) -> bool | None:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        x, y = constant(test.left), constant(test.comparators[0])
        if x is not None and y is not None:
            return {ast.Lt: x < y, ast.LtE: x <= y, ast.Gt: x > y, ast.GtE: x >= y, ast.Eq: x == y, ast.NotEq: x != y}[
                type(test.ops[0])
            ]
    return None


def call(rule: str, *arguments: ast.expr) -> ast.expr:
    """The function `rule` applied to `arguments` (its inputs, then its attributes as numbers)."""
    if rule == "pow":
        base, exponent = arguments
        if _is(exponent, 1.0):
            return base
        if _is(exponent, 0.5):
            # PyTorch computes x ** 0.5 as sqrt(x): sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, where C's pow gives 0 and inf.
            return call("sqrt", base)
    return ast.Call(ast.Attribute(ast.Name(CALL, ast.Load()), rule, ast.Load()), list(arguments), [])


def called(node: ast.expr) -> ScalarRule | None:
    """The rule of a function call node, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == CALL
    ):
        return FUNCTION_RULES[node.func.attr]
    return None


class _FromRule(ast.NodeTransformer):
    """A rule's expression as an expression of this language: its parameters replaced, ``where``
    as a branch, ``math.f`` and ``**`` as calls, arithmetic on numbers folded."""

    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        return mask() if node.value == 0.0 else number(node.value)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow):
            return call("pow", left, right)
        if isinstance(node.op, ast.FloorDiv):
            return call("floor_divide", left, right)
        if isinstance(node.op, ast.Mod):
            return call("remainder", left, right)
        return binary(left, node.op, right)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        operand = self.visit(node.operand)
        return neg(operand) if isinstance(node.op, ast.USub) else operand

    def visit_Call(self, node: ast.Call) -> ast.expr:
        arguments = [self.visit(a) for a in node.args]
        if isinstance(node.func, ast.Name) and node.func.id == "where":
            return branch(*arguments)
        return call(RULE_OF_MATH[node.func.attr], *arguments)


def rule_expression(source: str, values: dict[str, ast.expr]) -> ast.expr:
    """A rule's forward or derivative `source` with its names bound to `values`."""
    return _FromRule(values).visit(ast.parse(source, mode="eval").body)


def partials(node: ast.Call) -> list[ast.expr]:
    """d call / d input, for each input of a function call node (``out`` is the call itself)."""
    rule = called(node)
    values = dict(zip((*rule.inputs, *rule.attr_names), node.args))
    values["out"] = node
    return [rule_expression(d, values) for d in rule.derivatives]


class _Expand(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        rule = called(node)
        if rule is None:
            return node
        values = dict(zip((*rule.inputs, *rule.attr_names), node.args))
        return _Plain(values).visit(ast.parse(rule.forward, mode="eval").body)


class _Plain(ast.NodeTransformer):
    """A rule's forward as kernel source: parameters replaced, where() as a branch."""

    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "where":
            return ast.IfExp(*node.args)
        return node


class _Signed(ast.NodeTransformer):
    """A negative number as unary minus, which ast.unparse parenthesises: (-2.0) ** x, not -2.0 ** x."""

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        if isinstance(node.value, float) and math.copysign(1.0, node.value) < 0:
            return ast.UnaryOp(ast.USub(), number(-node.value))
        return node


def unshare(node: ast.AST) -> ast.AST:
    """A copy of `node` in which no subtree is shared (locals make DAGs; transformers need trees)."""
    new = copy.copy(node)
    for field, value in ast.iter_fields(node):
        if isinstance(value, list):
            setattr(new, field, [unshare(v) if isinstance(v, ast.AST) else v for v in value])
        elif isinstance(value, ast.AST):
            setattr(new, field, unshare(value))
    return new


def expand(expression: ast.expr) -> str:
    """Kernel source of an expression: each function call written out as its rule's forward."""
    tree = _Signed().visit(_Expand().visit(unshare(expression)))
    return ast.unparse(ast.fix_missing_locations(tree))


def size(expression: ast.expr) -> int:
    """How many nodes `expression` has written out (a subtree shared by several locals counts each time)."""
    sizes: dict[int, int] = {}

    def measure(node: ast.AST) -> int:
        known = sizes.get(id(node))
        if known is None:
            known = sizes[id(node)] = 1 + sum(measure(child) for child in ast.iter_child_nodes(node))
        return known

    return measure(expression)
