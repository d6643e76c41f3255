"""Generated expressions written from per-rule templates are the texts a full rewrite gives.

scalar_code pastes one-term reads into a rule's text rewritten once (numdiff.kernels._codegen), and
numdiff.compile's float32 groups round literals once per text with renumbered temporaries
(numdiff.compile.group_kernel._single_precision). The kernel's file name and its Numba cache
entry are keyed on that text, so a path that printed it differently would recompile every
cached kernel; one that printed it wrongly would compute something else.
"""

from __future__ import annotations

import ast
import itertools

import pytest

from numdiff._ground.scalar_expressions import vjp_expression
from numdiff._ground.scalar_rules import RULES
from numdiff.compile import group_kernel
from numdiff.kernels import _codegen

# One-term reads (pasted), and reads a full rewrite must parenthesise or reprint (not pasted).
_READS = [
    "a0[i0]",
    "t12",
    "1e-05",
    "np.float32(a0[i0])",
    "b1[2 * n0 + i0]",
    "-0.5",
    "x + y",
    "(t3)",
    "c if m else d",
    "2",
    "True",
]


def _rewritten_whole(expression: str, reads: dict, math_prefix: str | None) -> str:
    tree = _codegen._Substitute(reads, math_prefix).visit(ast.parse(expression, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def _expressions(rule) -> list[str]:
    return [rule.forward] + [vjp_expression(rule, index, "g") for index in range(rule.arity)]


@pytest.mark.parametrize("math_prefix", [None, "m_"])
def test_every_rule_reads_as_the_full_rewrite_would_print_it(math_prefix):
    names_seen = 0
    for rule in RULES.values():
        names = [*rule.inputs, *(name for name, _ in rule.attrs), "g", "out"]
        for expression in _expressions(rule):
            for shift in range(3):  # each name takes several kinds of read across the shifts
                reads = {name: _READS[(k * 5 + shift) % len(_READS)] for k, name in enumerate(names)}
                assert _codegen.scalar_code(expression, reads, math_prefix) == _rewritten_whole(
                    expression, reads, math_prefix
                ), (expression, reads)
                names_seen += 1
    assert names_seen > 100


def test_a_read_that_needs_parentheses_keeps_them():
    reads = {"a": "x + y", "b": "-0.5"}
    assert _codegen.scalar_code("a * b", reads) == "(x + y) * -0.5"
    assert _codegen.scalar_code("b ** a", reads) == "(-0.5) ** (x + y)"


def test_pasted_reads_are_one_term_printed_as_written():
    assert _codegen._pastes_as_is("a0[i0]") and _codegen._pastes_as_is("np.float32(t4)")
    assert not _codegen._pastes_as_is("(t3)")  # reprinted without the parentheses
    assert not _codegen._pastes_as_is("-1.0") and not _codegen._pastes_as_is("a if c else b")
    assert not _codegen._pastes_as_is("a0[")  # not an expression: the full rewrite reports it


@pytest.mark.parametrize(
    "expression",
    [
        "t12 * 0.5 + t3",
        "(t1 if t12 > 0.0 else t1 * 0.01)",
        "np.float32(math.exp(t0)) + t0 * t100",
        "_vecmath.tanh(a0[i0]) - 1.0 + t55 * t5",
    ],
)
def test_float32_rounding_of_literals_keeps_each_temporary(expression):
    tree = group_kernel._Float32Literals().visit(ast.parse(expression, mode="eval"))
    assert group_kernel._single_precision(expression) == ast.unparse(ast.fix_missing_locations(tree))


def test_steps_of_an_unrolled_loop_share_one_float32_rewrite():
    group_kernel._literals_to_float32.cache_clear()
    steps = [f"t{a} * 0.5 + t{b}" for a, b in itertools.islice(zip(range(10, 400, 7), range(3, 400, 11)), 20)]
    rounded = [group_kernel._single_precision(step) for step in steps]
    assert rounded[0] == "t10 * np.float32(0.5) + t3" and rounded[-1] == "t143 * np.float32(0.5) + t212"
    assert group_kernel._literals_to_float32.cache_info().misses == 1
