"""names_in and math_functions_in read an expression's identifiers with a regular expression (cheap
enough to check the whole rule table at `import numdiff`); these tests hold them to what Python's
own parser finds, on every expression of the table and on the language's corner cases."""

from __future__ import annotations

import ast

import pytest

from numdiff._ground.scalar_expressions import (
    ScalarRule,
    check_rules,
    math_functions_in,
    names_in,
    vjp_expression,
)
from numdiff._ground.scalar_rules import RULES


def _parsed(expression: str) -> tuple[set[str], set[str]]:
    """(names, math functions) as ast sees them: the reference the regular expression must match."""
    tree = ast.parse(expression, mode="eval")
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} - {"math", "where"}
    functions = {
        node.attr for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math"
    }  # fmt: skip
    return names, functions


EXPRESSIONS = sorted({
    expression
    for rule in RULES.values()
    for expression in (rule.forward, *rule.derivatives, *(vjp_expression(rule, i) for i in range(rule.arity)))
})  # fmt: skip

CORNERS = [
    "1e-5 * x",  # the e of an exponent is no name
    "2.5E+3 + x1 * y_2",
    "where(x <= 0.0, alpha * math.expm1(x), x)",
    "math.exp(-math.fabs(x)) / (1.0 + math.exp(-math.fabs(x)))",
    "x ** 2.0 - out * math.log1p(y)",
    "where(math.isnan(x), x, 0.5e1)",
]


@pytest.mark.parametrize("expression", EXPRESSIONS + CORNERS)
def test_identifiers_are_what_the_parser_finds(expression):
    names, functions = _parsed(expression)
    assert names_in(expression) == names
    assert math_functions_in(expression) == functions


def test_check_rules_still_names_an_unknown_name_and_a_math_call_without_a_rule():
    with pytest.raises(ValueError, match=r"reads unknown names \['z'\]"):
        check_rules((ScalarRule("bad", 1, "x + z * 1e-3", ("1.0",)),))
    with pytest.raises(ValueError, match=r"calls math.cbrt, which is not a rule"):
        check_rules((ScalarRule("bad", 1, "x", ("math.cbrt(x)",)),))
