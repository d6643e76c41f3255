"""A scalar Python function as one expression tree, checked against what @elementwise compiles.

Accepted, as numba.vectorize accepts them: local variables (``y = ...``, ``y += ...``, ``a, b = u, v``),
``if``/``elif``/``else`` statements, ``return`` anywhere (several of them), ``for i in range(n)``
with a constant bound (unrolled), ``pass``, and the expressions of numdiff._elementwise._expressions:
numbers (also math.pi and friends, and global or closed-over numbers, read once at decoration), the
arguments, ``+ - * / // % **``, unary minus, comparisons, ``and``/``or``/``not`` in conditions,
``a if condition else b``, ``math.f(...)`` for a math function numdiff has a scalar rule for,
abs, min and max of two values.

The statements become one expression: a local is replaced by its value; after an ``if`` whose
branches assign a local differently, the local is ``value_a if condition else value_b``; a
``return`` inside a branch makes the rest of the function the other branch's continuation.
So the derivative (_derive) is that of the branch taken at each point, through every local by the
chain rule. Anything else raises `ElementwiseSyntaxError` naming the function, the line and the
construct.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable

from numdiff._elementwise._expressions import ElementwiseSyntaxError, Expressions
from numdiff._elementwise._functions import CALL, branch, constant, number, size, unshare

__all__ = ["ElementwiseSyntaxError", "parse_function"]

# Past this many operations written out, unrolled loops and locals used in several places have made
# a kernel too large to compile in reasonable time.
MAX_SIZE = 20000
MAX_ITERATIONS = 1000
_AUGMENTED = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.Mod)
_RESERVED = ("math", CALL)


class _Undefined:
    """The value of a local assigned on some paths only (an error if read)."""


_UNDEFINED = _Undefined()


class _Lowering:
    """Runs a function body symbolically: each statement updates the locals (name -> expression)."""

    def __init__(self, name: str, filename: str, first_line: int, arguments: tuple[str, ...], constants: dict) -> None:
        self.arguments = arguments
        self.constants = constants
        self.checker = Expressions(name, filename, first_line, self.lookup)
        self.locals: dict[str, ast.expr | _Undefined] = {}

    def lookup(self, node: ast.Name) -> ast.expr:
        value = self.locals.get(node.id)
        if value is _UNDEFINED:
            raise self.checker.fail(node, f"reading {node.id!r}, which is not assigned on every path to this line,")
        if value is not None:
            return value
        value = self.constants.get(node.id)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            # A global or closed-over number is baked into the kernel as a constant.
            return number(value)
        raise self.checker.fail(node, f"the name {node.id!r} (not an argument, a local assigned above or a global number)")

    def assign(self, target: ast.expr, value: ast.expr, statement: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            if target.id in _RESERVED:
                raise self.checker.fail(statement, f"assigning to {target.id!r}")
            self.locals[target.id] = value
            return
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self.assign(t, v, statement)
            return
        raise self.checker.fail(statement, f"the assignment target {ast.unparse(target)!r}")

    def value(self, node: ast.expr) -> ast.expr:
        """An expression, or a tuple of them (a tuple assignment, or a derivative's return)."""
        if isinstance(node, ast.Tuple):
            return ast.Tuple([self.checker.expression(e) for e in node.elts], ast.Load())
        return self.checker.expression(node)

    def run(self, statements: list[ast.stmt]) -> ast.expr | None:
        """The returned expression if every path through `statements` returns, else None (the
        locals then hold their values at the end)."""
        for index, statement in enumerate(statements):
            rest = statements[index + 1 :]
            if isinstance(statement, ast.Return):
                if statement.value is None:
                    raise self.checker.fail(statement, "`return` without a value")
                return self.value(statement.value)
            if isinstance(statement, ast.Assign):
                value = self.value(statement.value)
                for target in statement.targets:
                    self.assign(target, value, statement)
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                self.assign(statement.target, self.value(statement.value), statement)
            elif isinstance(statement, ast.AugAssign) and isinstance(statement.op, _AUGMENTED):
                if not isinstance(statement.target, ast.Name):
                    raise self.checker.fail(statement, f"the assignment target {ast.unparse(statement.target)!r}")
                load = ast.Name(statement.target.id, ast.Load(), lineno=statement.lineno)
                combined = ast.BinOp(load, statement.op, statement.value, lineno=statement.lineno)
                self.assign(statement.target, self.checker.expression(combined), statement)
            elif isinstance(statement, ast.If):
                returned = self.branches(statement, rest)
                if returned is not _FALLS_THROUGH:
                    return returned
            elif isinstance(statement, ast.For):
                return self.run(self.unrolled(statement) + rest)
            elif isinstance(statement, ast.Pass) or _is_docstring(statement):
                continue
            else:
                raise self.checker.fail(statement, f"the statement {type(statement).__name__}")
        return None

    def branches(self, statement: ast.If, rest: list[ast.stmt]) -> ast.expr | None | object:
        """An ``if`` statement: the function's result if a branch returns, else the locals merged."""
        test = self.checker.condition(statement.test)
        before = dict(self.locals)
        if not any(isinstance(node, ast.Return) for node in ast.walk(statement)):
            self.run(statement.body)
            taken = self.locals
            self.locals = dict(before)
            self.run(statement.orelse)
            for name in set(taken) | set(self.locals):
                a, b = taken.get(name, _UNDEFINED), self.locals.get(name, _UNDEFINED)
                if a is not b:
                    self.locals[name] = _UNDEFINED if _UNDEFINED in (a, b) else _select(test, a, b)
            return _FALLS_THROUGH
        # A branch returns: each branch continues with the rest of the function (only a branch that
        # does not always return ever reaches it).
        results = []
        for block in (statement.body, statement.orelse):
            self.locals = dict(before)
            result = self.run(block + rest)
            if result is None:
                raise self.checker.fail(statement, "a path that ends without `return`")
            results.append(result)
        return _select(test, *results)

    def unrolled(self, loop: ast.For) -> list[ast.stmt]:
        """``for i in range(...)`` with constant bounds as the body repeated, i assigned before each."""
        iterator = loop.iter
        if not (
            isinstance(loop.target, ast.Name)
            and isinstance(iterator, ast.Call)
            and isinstance(iterator.func, ast.Name)
            and iterator.func.id == "range"
            and 1 <= len(iterator.args) <= 3
            and not iterator.keywords
            and not loop.orelse
        ):
            raise self.checker.fail(loop, "this for loop (only `for name in range(constant, ...)` without else is)")
        bounds = []
        for argument in iterator.args:
            value = constant(self.checker.expression(argument))
            if value is None or value != int(value):
                raise self.checker.fail(loop, f"the loop bound {ast.unparse(argument)!r}, which is not an integer constant,")
            bounds.append(int(value))
        steps = range(*bounds)
        if len(steps) > MAX_ITERATIONS:
            raise self.checker.fail(loop, f"a loop of {len(steps)} iterations (at most {MAX_ITERATIONS} are unrolled)")
        for node in ast.walk(loop):
            if isinstance(node, (ast.Break, ast.Continue)):
                raise self.checker.fail(node, f"`{type(node).__name__.lower()}`")
        statements: list[ast.stmt] = []
        for step in steps:
            index = ast.Assign([ast.Name(loop.target.id, ast.Store())], ast.Constant(step), lineno=loop.lineno)
            statements += [index, *loop.body]
        return statements


_FALLS_THROUGH = object()


def _select(test: ast.expr, a: ast.expr, b: ast.expr) -> ast.expr:
    if isinstance(a, ast.Tuple) and isinstance(b, ast.Tuple) and len(a.elts) == len(b.elts):
        return ast.Tuple([branch(test, x, y) for x, y in zip(a.elts, b.elts)], ast.Load())
    if isinstance(a, ast.Tuple) or isinstance(b, ast.Tuple):
        raise ElementwiseSyntaxError(f"@elementwise: the branches of `if {ast.unparse(test)}` return different kinds of value")
    return branch(test, a, b)


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)


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
    reserved = sorted(set(arguments) & set(_RESERVED))
    if reserved:
        raise ElementwiseSyntaxError(f"@elementwise: {name}: an argument may not be called {reserved[0]!r}")
    constants = dict(getattr(fn, "__globals__", {}))
    closure = inspect.getclosurevars(fn)
    constants.update(closure.globals)
    constants.update(closure.nonlocals)
    lowering = _Lowering(name, filename, first_line, arguments, constants)
    lowering.locals = {a: ast.Name(a, ast.Load()) for a in arguments}
    result = lowering.run(definition.body)
    if result is None:
        last = definition.body[-1]
        raise lowering.checker.fail(last, "a function that can end without `return expression`")
    expressions = list(result.elts) if isinstance(result, ast.Tuple) else [result]
    if outputs is None and isinstance(result, ast.Tuple):
        raise lowering.checker.fail(definition, "returning a tuple (an @elementwise function has one result)")
    if outputs is not None and (not isinstance(result, ast.Tuple) or len(expressions) != outputs):
        raise lowering.checker.fail(definition, f"a derivative that does not return a tuple of {outputs} partials (one per argument)")
    total = sum(size(e) for e in expressions)
    if total > MAX_SIZE:
        raise lowering.checker.fail(
            definition,
            f"a body of {total} operations once its locals, branches and loops are written out (at most {MAX_SIZE})",
        )
    return arguments, [unshare(e) for e in expressions]
