"""@numdiff.elementwise on ordinary scalar Python: if/elif/else, locals, augmented assignments,
several returns, tuple assignments and `for i in range(constant)`; values and gradients against
torch autograd on the same function, on both sides of every branch; under gradgradcheck, vmap and
numdiff.compile; in float32 and float16; and the errors for what is not supported."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import numdiff
from numdiff._elementwise import ElementwiseSyntaxError
from numdiff.autograd import gradcheck, gradgradcheck
from tests.func.elementwise_reference import assert_matches, numdiff_values_and_grads, torch_values_and_grads


def huber(x, delta):
    if abs(x) <= delta:
        return 0.5 * x * x
    else:
        return delta * (abs(x) - 0.5 * delta)


def smoothstep(x, lo, hi):
    if x <= lo:
        return 0.0
    if x >= hi:
        return 1.0
    t = (x - lo) / (hi - lo)
    return t * t * (3.0 - 2.0 * t)


def piecewise(x, y):
    s = x * y
    if s > 1.0:
        r = math.log(s)
    elif s < -1.0:
        r = -math.log(-s)
        r *= 2.0
    else:
        r = s - s**3 / 3.0
    r += y
    return r


def horner(x, y):
    total = 0.0
    for k in range(5):
        total = total * x + (k + 1.0) * y
    return total


def first_step_above(x, y):
    for k in range(-2, 3):
        if x < k:
            return x * k + y
    return -x * y


def nested(x, y):
    if x > 0.0:
        if y > 0.0:
            return x * y
        z = x - y
    else:
        z = x + y
    return z * z


def swapped(x, y):
    a, b = x + 0.0, y * 2.0  # + 0.0: torch, the reference, would update the leaf x in place
    a, b = b, a
    a **= 2
    b -= a / 3.0
    return a * math.sin(b) if a > 1.0 and not b > 2.0 else a - b


FUNCTIONS = {f.__name__: f for f in (huber, smoothstep, piecewise, horner, first_step_above, nested, swapped)}
# Points on both sides of every branch, and on its edge.
GRID = np.array([-3.0, -2.0, -1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0])


def _columns(fn) -> tuple[np.ndarray, ...]:
    arguments = fn.__code__.co_argcount
    if fn is smoothstep:
        x = np.concatenate([GRID, [-1.0, 1.0]])
        return x, np.full_like(x, -1.0), np.full_like(x, 1.0)
    grids = np.meshgrid(*([GRID] * arguments), indexing="ij")
    return tuple(g.ravel() for g in grids)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_statements_match_torch_on_both_sides_of_every_branch(name):
    fn = FUNCTIONS[name]
    columns = _columns(fn)
    value, grads = numdiff_values_and_grads(numdiff.elementwise(fn), *columns)
    expected_value, expected_grads = torch_values_and_grads(fn, *columns)
    assert_matches(f"{name} value", columns, value, expected_value, rtol=1e-12, atol=1e-14)
    for k, (grad, expected) in enumerate(zip(grads, expected_grads)):
        assert_matches(f"{name} d/d argument {k}", columns, grad, expected, rtol=1e-10, atol=1e-13)


def test_huber_written_with_if_else_equals_torch_huber_loss():
    x = np.array([-3.0, -1.0, -0.4, 0.0, 0.3, 0.99, 1.01, 4.0])
    value, (grad, _) = numdiff_values_and_grads(numdiff.elementwise(huber), x, np.ones_like(x))
    tx = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.huber_loss(tx, torch.zeros_like(tx), reduction="none", delta=1.0)
    expected.sum().backward()
    np.testing.assert_allclose(value, expected.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=1e-14)


@pytest.mark.parametrize("name", ["huber", "piecewise", "horner", "nested", "swapped"])
def test_second_derivatives_through_branches_and_locals(name):
    fn = numdiff.elementwise(FUNCTIONS[name])
    rng = np.random.default_rng(3)
    # Points away from the branch edges, where the function is smooth.
    points = [rng.uniform(0.3, 0.45, 4) * rng.choice([-5, 5], 4) for _ in range(2)]
    args = tuple(numdiff.tensor(p, dtype=numdiff.float64, requires_grad=True) for p in points)
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_broadcasting_and_python_numbers():
    op = numdiff.elementwise(smoothstep)
    x = numdiff.tensor(np.linspace(-2, 2, 12).reshape(3, 4), dtype=numdiff.float64, requires_grad=True)
    hi = numdiff.tensor([0.5, 1.0, 1.5, 2.0], dtype=numdiff.float64, requires_grad=True)
    out = op(x, -1.0, hi)
    assert out.shape == (3, 4)
    xs, his = np.broadcast_arrays(x.detach().numpy(), hi.detach().numpy())
    _, (gx, _, ghi) = torch_values_and_grads(smoothstep, xs.ravel(), np.full(12, -1.0), his.ravel())
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy().ravel(), gx, rtol=1e-12)
    np.testing.assert_allclose(hi.grad.numpy(), ghi.reshape(3, 4).sum(0), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float32_and_float16_match_torch_in_that_dtype(dtype):
    op = numdiff.elementwise(piecewise)
    x, y = (c.astype(dtype) for c in _columns(piecewise))
    value, grads = numdiff_values_and_grads(op, x, y, dtype=getattr(numdiff, dtype))
    assert value.dtype == np.dtype(dtype) and all(g.dtype == np.dtype(dtype) for g in grads)
    tx, ty = (torch.tensor(c, dtype=torch.float32, requires_grad=True) for c in (x, y))
    s = tx * ty
    r = torch.where(s > 1.0, torch.log(s.clamp(min=1.0)), torch.where(s < -1.0, -2.0 * torch.log((-s).clamp(min=1.0)), s - s**3 / 3.0))
    (r + ty).sum().backward()
    tolerance = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(value, (r + ty).detach().numpy().astype(dtype), rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(grads[0], tx.grad.numpy().astype(dtype), rtol=tolerance, atol=tolerance * 10)


def test_vmap_of_grad_and_compile_run_statement_functions():
    op = numdiff.elementwise(nested)
    x = numdiff.tensor(np.random.default_rng(0).standard_normal((4, 3)))
    y = numdiff.tensor(np.random.default_rng(1).standard_normal((4, 3)))
    per_row = numdiff.func.vmap(numdiff.func.grad(lambda a, b: op(a, b).sum()))(x, y)
    leaf = x.clone().requires_grad_()
    op(leaf, y).sum().backward()
    np.testing.assert_allclose(per_row.numpy(), leaf.grad.numpy(), rtol=1e-12)

    compiled = numdiff.compile(lambda a, b: (op(a, b) * 2.0).sum())
    leaf_c = x.clone().requires_grad_()
    loss = compiled(leaf_c, y)
    loss.backward()
    np.testing.assert_allclose(loss.item(), 2.0 * op(x, y).sum().item(), rtol=1e-12)
    np.testing.assert_allclose(leaf_c.grad.numpy(), 2.0 * leaf.grad.numpy(), rtol=1e-12)


def test_user_derivative_may_use_statements():
    @numdiff.elementwise
    def ramp(x):
        return x if x > 0.0 else 0.0

    @ramp.derivative
    def _(x):
        if x > 0.0:
            return (1.0,)
        return (0.25,)

    x = numdiff.tensor([-1.0, 2.0], requires_grad=True)
    ramp(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.25, 1.0])


def _unsupported(fn, pattern):
    with pytest.raises(ElementwiseSyntaxError, match=pattern):
        numdiff.elementwise(fn)


def test_unsupported_statements_name_the_function_the_line_and_the_construct():
    def with_while(x):
        while x > 1.0:
            x = x / 2.0
        return x

    line = with_while.__code__.co_firstlineno + 1
    _unsupported(with_while, rf"with_while \(.*test_elementwise_statements.py, line {line}\): the statement While is not supported")

    def with_break(x):
        for k in range(3):
            if x > k:
                break
        return x

    _unsupported(with_break, r"with_break .*: `break` is not supported")

    def unknown_function(x):
        y = x * 2.0
        return round(y)

    _unsupported(unknown_function, r"unknown_function .*line \d+\): the call 'round\(y\)'")

    def half_defined(x):
        if x > 0.0:
            y = x
        return y

    _unsupported(half_defined, r"half_defined .*reading 'y', which is not assigned on every path")

    def falls_off(x):
        if x > 0.0:
            return x

    _unsupported(falls_off, r"falls_off .*a path that ends without `return`")

    def variable_bound(x):
        total = x
        for _ in range(int(x)):
            total = total * x
        return total

    _unsupported(variable_bound, r"variable_bound .*the call 'int\(x\)'")

    def over_a_list(x):
        for k in [1.0, 2.0]:
            x = x * k
        return x

    _unsupported(over_a_list, r"over_a_list .*this for loop")

    def exploding(x):
        for _ in range(20):
            x = x * x + x
        return x

    _unsupported(exploding, r"exploding .*operations once its locals, branches and loops are written out")
