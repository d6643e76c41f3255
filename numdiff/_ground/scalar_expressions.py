"""The language of the scalar rules: the `ScalarRule` record, what an expression reads and calls,
the vector-Jacobian product derived from a derivative, and the checks a table of rules must pass.

The table itself, one `ScalarRule` per elementwise op, is numdiff/_ground/scalar_rules.py; this module
changes when the expression language does, that one when an op is added or corrected.

The fields of `ScalarRule`:

- ``name``: the op's name in ``numdiff.ops.OPS`` (and of its public function and Tensor method).
- ``arity``: how many tensor inputs (1 or 2), named ``x`` and ``y`` in the expressions.
- ``forward``: the result as a scalar expression in ``x``, ``y`` and the attrs.
- ``derivatives``: per input, the local partial derivative d out / d input as an expression in
  ``x``, ``y``, ``out`` (the forward's result) and the attrs. The backward computes
  ``grad * derivative`` (see `vjp_expression`), so ``out`` saves recomputing the forward where the
  derivative is cheap in terms of it (exp: ``"out"``).
- ``ufunc``: the NumPy ufunc computing the same forward (``"exp"``), or None. Integer and bool
  inputs of ops that accept them (add, abs, maximum, ...) run through it, with NumPy's promotion.
- ``dtypes``: what the public function does with integer/bool inputs: ``"any"`` keeps them (the
  ufunc computes), ``"to_float"`` converts them to float32 first (exp, as PyTorch), ``"float"``
  refuses them with a TypeError (the activations), ``"integral"`` returns a copy of an integer
  input (floor and the other roundings, the identity there) and refuses bool.
- ``attrs``: keyword attributes with their defaults, as ``(("negative_slope", 0.01),)``. They are
  Python floats, passed to forward and recorded on the node (``node.attrs``); the expressions read
  them by name.
- ``method``: whether the public function is also attached as a Tensor method.
- ``export``: whether it is also ``numdiff.<name>`` (activations with PyTorch-only-in-functional
  names, such as leaky_relu, are reached through numdiff.nn.functional instead).
- ``doc``: the public function's docstring summary.
- ``functional``: ``"plain"`` or ``"inplace"`` to generate ``numdiff.nn.functional.<name>(input,
  <attrs>)`` (with PyTorch's ``inplace=False`` argument for ``"inplace"``) in
  numdiff/ops/activation.py; ``""`` for none, or one written by hand there.
- ``tensor_vjps``: per input, the backward's tensor form (the one ``create_graph`` records) where
  it can be fewer ops than `vjp_expression`'s, ``""`` to keep that one; empty for none. It may call
  a two-input rule that computes the whole vjp, as ``"math.tanh_backward(g, out)"`` (one op where
  ``g * (1.0 - out * out)`` records three), and reads only names the derived vjp reads (what
  forward saved). The kernels never read it: they compute the derived vjp.

The expression language (a subset of Python that Numba compiles on both targets, and that can also
be evaluated on numdiff Tensors, which is how backward stays differentiable):

- numbers, ``x``/``y``/``out``/attr names, ``+ - * / **``, unary minus, comparisons;
- ``where(condition, a, b)``: ``a if condition else b``, only the taken branch is evaluated in the
  kernels (so ``exp`` of a large number in the other branch costs nothing);
- ``math.f(v)`` for a function ``f`` of Python's math module that is itself a rule (``math.exp``,
  ``math.tanh``, ``math.erf``, ...; ``math.fabs`` is the rule ``abs``), so the tensor form of every
  derivative is built from differentiable ops.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

__all__ = ["MATH_RULES", "ScalarRule", "check_rules", "math_functions_in", "names_in", "vjp_expression"]

INPUT_NAMES = ("x", "y", "z")

# math.<name> in an expression means the rule of this name (the rest share their math name).
MATH_RULES = {"fabs": "abs"}


@dataclass(frozen=True)
class ScalarRule:
    """One elementwise op: forward scalar expression and per-input partial derivatives."""

    name: str
    arity: int
    forward: str
    derivatives: tuple[str, ...]
    ufunc: str | None = None
    dtypes: str = "to_float"
    attrs: tuple[tuple[str, float], ...] = ()
    method: bool = True
    export: bool = True
    doc: str = ""
    functional: str = ""
    # A bool input's result where PyTorch's differs from NumPy's ufunc: "itself" (sign: NumPy has
    # no bool loop) or "int64" (square: NumPy's is int8).
    bool_result: str = ""
    tensor_vjps: tuple[str, ...] = ()

    @property
    def inputs(self) -> tuple[str, ...]:
        """The names of the tensor inputs in the expressions: ("x",) or ("x", "y")."""
        return INPUT_NAMES[: self.arity]

    @property
    def attr_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.attrs)

    @property
    def saved(self) -> tuple[str, ...]:
        """What backward reads (inputs and/or "out"), in the order ``x, y, out``: what forward saves."""
        used = set()
        for expression in self.derivatives:
            used |= names_in(expression)
        return tuple(n for n in (*self.inputs, "out") if n in used)


# An identifier of the language, with its ``math.`` prefix if it has one. The look-behind skips
# the exponent of a number (the ``e`` of ``1e-5``) and anything after a dot. The language has no
# other attribute, keyword or string, so these tokens are exactly ast's Name and math.<f> nodes
# (tests/ops/test_scalar_expressions.py compares the two on every rule); reading them this way
# instead of through ast.parse keeps checking the table at `import numdiff` cheap.
_IDENTIFIER = re.compile(r"(?<![\w.])(math\.)?([A-Za-z_]\w*)")


@functools.cache
def _identifiers(expression: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the variable names `expression` reads, the ``math.f`` functions it calls)."""
    names, functions = set(), set()
    for prefix, identifier in _IDENTIFIER.findall(expression):
        (functions if prefix else names).add(identifier)
    return frozenset(names - {"math", "where"}), frozenset(functions)


def names_in(expression: str) -> frozenset[str]:
    """The variable names an expression reads (``math`` and ``where`` excluded).

    >>> sorted(names_in("where(x <= 0.0, alpha * math.expm1(x), 1e-5)"))
    ['alpha', 'x']
    """
    return _identifiers(expression)[0]


def math_functions_in(expression: str) -> frozenset[str]:
    """The ``math.f`` functions an expression calls.

    >>> sorted(math_functions_in("math.exp(x) * math.log1p(y)"))
    ['exp', 'log1p']
    """
    return _identifiers(expression)[1]


def _is_number(node: ast.expr, value: float) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_number(node.operand, -value)
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and node.value == value


def _vjp(node: ast.expr, grad: str) -> ast.expr:
    """``grad * node``, pushed into where() branches, with literal 0 and 1 branches folded."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "where"
        and len(node.args) == 3
    ):
        condition, a, b = node.args
        return ast.Call(node.func, [condition, _vjp(a, grad), _vjp(b, grad)], [])
    if _is_number(node, 0.0):
        return ast.Constant(0.0)
    if _is_number(node, 1.0):
        return ast.Name(grad, ast.Load())
    if _is_number(node, -1.0):
        return ast.UnaryOp(ast.USub(), ast.Name(grad, ast.Load()))
    return ast.BinOp(ast.Name(grad, ast.Load()), ast.Mult(), node)


def vjp_expression(rule: ScalarRule, index: int, grad: str = "g") -> str:
    """The gradient of input `index` as an expression in `grad`, the inputs, ``out`` and attrs.

    >>> relu = ScalarRule("relu", 1, "where(x <= 0.0, 0.0, x)", ("where(out <= 0.0, 0.0, 1.0)",))
    >>> vjp_expression(relu, 0)
    'where(out <= 0.0, 0.0, g)'
    >>> vjp_expression(ScalarRule("mul", 2, "x * y", ("y", "x")), 1)
    'g * x'
    """
    return _vjp_source(rule.derivatives[index], grad)


@functools.cache
def _vjp_source(derivative: str, grad: str) -> str:
    tree = ast.parse(derivative, mode="eval")
    return ast.unparse(ast.fix_missing_locations(_vjp(tree.body, grad)))


def check_rules(rules: tuple[ScalarRule, ...]) -> None:
    """Refuse a table whose expressions read names a rule does not define, or whose derivatives call
    a ``math.f`` that is not itself one of `rules` (its tensor form would not be differentiable).

    >>> check_rules((ScalarRule("bad", 1, "x + z", ("1.0",)),))
    Traceback (most recent call last):
    ...
    ValueError: scalar rule 'bad': 'x + z' reads unknown names ['z']
    """
    known = {rule.name for rule in rules}
    for rule in rules:
        if rule.arity not in (1, 2) or len(rule.derivatives) != rule.arity:
            raise ValueError(f"scalar rule {rule.name!r}: arity {rule.arity} with {len(rule.derivatives)} derivatives")
        if rule.functional not in ("", "plain", "inplace") or (rule.functional and rule.arity != 1):
            raise ValueError(
                f"scalar rule {rule.name!r}: functional={rule.functional!r}; a one-input rule may say "
                "'plain' or 'inplace'"
            )
        if rule.bool_result not in ("", "itself", "int64") or (rule.bool_result and not rule.ufunc):
            raise ValueError(
                f"scalar rule {rule.name!r}: bool_result={rule.bool_result!r}; a rule with a ufunc may say "
                "'itself' or 'int64'"
            )
        _check_tensor_vjps(rule, known)
        allowed_forward = set(rule.inputs) | set(rule.attr_names)
        allowed = allowed_forward | {"out"}
        for expression, names in [(rule.forward, allowed_forward)] + [(d, allowed) for d in rule.derivatives]:
            unknown = names_in(expression) - names
            if unknown:
                raise ValueError(f"scalar rule {rule.name!r}: {expression!r} reads unknown names {sorted(unknown)}")
        for expression in rule.derivatives:
            for function in math_functions_in(expression):
                if MATH_RULES.get(function, function) not in known:
                    raise ValueError(
                        f"scalar rule {rule.name!r}: derivative {expression!r} calls math.{function}, "
                        "which is not a rule, so its tensor form would not be differentiable"
                    )


def _check_tensor_vjps(rule: ScalarRule, known: set[str]) -> None:
    """Refuse tensor forms of a vjp that do not fit `rule`: one per input, each reading only what
    the derived vjp reads (forward saved nothing else) and calling only rules."""
    if not rule.tensor_vjps:
        return
    if len(rule.tensor_vjps) != rule.arity:
        raise ValueError(f"scalar rule {rule.name!r}: {len(rule.tensor_vjps)} tensor_vjps for {rule.arity} inputs")
    for index, expression in enumerate(rule.tensor_vjps):
        if not expression:
            continue
        unknown = names_in(expression) - names_in(vjp_expression(rule, index)) - {"g"}
        if unknown:
            raise ValueError(
                f"scalar rule {rule.name!r}: tensor vjp {expression!r} reads {sorted(unknown)}, which the "
                f"derived vjp {vjp_expression(rule, index)!r} does not (forward would not save them)"
            )
        for function in math_functions_in(expression):
            if MATH_RULES.get(function, function) not in known:
                raise ValueError(f"scalar rule {rule.name!r}: tensor vjp {expression!r} calls math.{function}, which is not a rule")
