"""Symbolic differentiation of a checked expression (see _functions) into another expression.

A branch differentiates branch-wise (d(a if c else b) = da if c else db): the derivative is that
of the branch taken at the point, and the other branch is not evaluated, so an inf or NaN there
does not leak into the gradient (torch.where's backward multiplies it by 0, which gives NaN for
an infinite partial). A function call's partials come from its rule, the same expressions the
tensor op's backward uses (numdiff.ops.scalar_rules), with ``out`` the call itself; division
follows PyTorch's formula, -(a / b) / b for the divisor. The builders fold 0 and 1 away, so the
derivative of a 10-op function stays a compact kernel.
"""

from __future__ import annotations

import ast

from numdiff._elementwise._functions import add, branch, called, div, mul, neg, number, partials, sub, zero


def derive(node: ast.expr, variable: str) -> ast.expr:
    """d node / d variable."""
    if isinstance(node, ast.Constant):
        return zero()
    if isinstance(node, ast.Name):
        return number(1.0) if node.id == variable else zero()
    if isinstance(node, ast.UnaryOp):
        return neg(derive(node.operand, variable))
    if isinstance(node, ast.IfExp):
        return branch(node.test, derive(node.body, variable), derive(node.orelse, variable))
    if isinstance(node, ast.Tuple):
        return ast.Tuple([derive(e, variable) for e in node.elts], ast.Load())
    if called(node) is not None:
        total = zero()
        for partial, argument in zip(partials(node), node.args):
            tangent = derive(argument, variable)
            total = add(total, mul(partial, tangent))
        return total
    if isinstance(node, ast.BinOp):
        a, b = node.left, node.right
        da, db = derive(a, variable), derive(b, variable)
        if isinstance(node.op, ast.Add):
            return add(da, db)
        if isinstance(node.op, ast.Sub):
            return sub(da, db)
        if isinstance(node.op, ast.Mult):
            return add(mul(da, b), mul(a, db))
        if isinstance(node.op, ast.Div):
            return sub(div(da, b), mul(db, div(div(a, b), b)))
    raise TypeError(f"cannot differentiate {ast.unparse(node)}")
