"""Symbolic differentiation of a checked expression (see _functions) into another expression, in
reverse mode, as autograd computes it: the gradient flowing into each subexpression is the
gradient of its parent times the parent's partial, starting from a seed (1, or the incoming
gradient ``g`` of a vector-Jacobian product), and the derivative is the sum of what reaches each
occurrence of the variable. So products are taken in PyTorch's order, and inf and NaN come out
as in torch autograd:

- a branch (``a if c else b``) passes the gradient to the side taken at the point only (torch runs
  the Python function per point, with no graph edge to the other side; torch.where would give
  NaN there for an infinite partial). A path that does not reach the variable is a structural
  zero, folded away even against an inf or NaN factor;
- a function call's partials come from its rule (numdiff._ground.scalar_rules), the same expressions
  the tensor op's backward uses, with ``out`` the call itself. A 0 the rule writes in a ``where``
  is a mask, as in torch's masked_fill: the gradient there is 0 whatever came in, and is then
  multiplied on down the chain like any value (0 * inf is NaN);
- division follows torch's formula, -g * ((a / b) / b) for the divisor.
"""

from __future__ import annotations

import ast

from numdiff._elementwise._functions import (
    add,
    branch,
    called,
    div,
    is_mask,
    mul,
    neg,
    number,
    partials,
    zero,
)


def derive(node: ast.expr, variable: str, seed: ast.expr | None = None) -> ast.expr:
    """d node / d variable, times `seed` (which it multiplies first, as autograd's incoming gradient)."""
    terms: list[ast.expr] = []
    reaching: set[int] = set()
    _reaching(node, variable, reaching)
    _backward(node, variable, number(1.0) if seed is None else seed, terms, reaching)
    total = zero()
    for term in terms:
        total = add(total, term)
    return total


def _scale(gradient: ast.expr, partial: ast.expr) -> ast.expr:
    """gradient * partial, where a mask in the partial discards the gradient."""
    if isinstance(partial, ast.IfExp):
        return branch(partial.test, _scale(gradient, partial.body), _scale(gradient, partial.orelse))
    if is_mask(partial):
        return number(0.0)
    return mul(gradient, partial)


def _reaching(node: ast.expr, variable: str, found: set[int]) -> bool:
    """Adds to `found` the ids of the subexpressions of `node` that read `variable`."""
    reaches = isinstance(node, ast.Name) and node.id == variable
    for child in ast.iter_child_nodes(node):
        reaches = _reaching(child, variable, found) or reaches
    if reaches:
        found.add(id(node))
    return reaches


def _backward(node: ast.expr, variable: str, gradient: ast.expr, terms: list[ast.expr], reaching: set[int]) -> None:
    if id(node) not in reaching:
        return
    if isinstance(node, ast.Name):
        terms.append(gradient)
    elif isinstance(node, ast.UnaryOp):
        _backward(node.operand, variable, neg(gradient), terms, reaching)
    elif isinstance(node, ast.IfExp):
        _backward(node.body, variable, branch(node.test, gradient, zero()), terms, reaching)
        _backward(node.orelse, variable, branch(node.test, zero(), gradient), terms, reaching)
    elif called(node) is not None:
        rule = called(node)
        for partial, argument in zip(partials(node), node.args[: rule.arity]):
            _backward(argument, variable, _scale(gradient, partial), terms, reaching)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        a, b = node.left, node.right
        if isinstance(node.op, (ast.Add, ast.Sub)):
            _backward(a, variable, gradient, terms, reaching)
            _backward(b, variable, gradient if isinstance(node.op, ast.Add) else neg(gradient), terms, reaching)
        elif isinstance(node.op, ast.Mult):
            _backward(a, variable, mul(gradient, b), terms, reaching)
            _backward(b, variable, mul(gradient, a), terms, reaching)
        else:
            _backward(a, variable, div(gradient, b), terms, reaching)
            _backward(b, variable, mul(neg(gradient), div(div(a, b), b)), terms, reaching)
    else:
        raise TypeError(f"cannot differentiate {ast.unparse(node)}")
