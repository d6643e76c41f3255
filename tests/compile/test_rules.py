"""Every registered op has a compile rule; ops without one still compile, with one warning."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import Function
from numdiff.ops.registry import COMPILE_RULES, SPECS


@pytest.mark.parametrize("op", sorted(SPECS))
def test_every_registered_op_has_a_compile_rule(op):
    assert SPECS[op].compile in COMPILE_RULES, (
        f"op {op!r} is registered in numdiff.ops.OPS but its spec has no compile rule: give one to its "
        "register call (@register(name, compile=...); numdiff/compile/rules.py says which)"
    )


def test_cumprod_and_ctc_loss_alone_keep_their_backward_eager():
    assert sorted(name for name, spec in SPECS.items() if spec.compile == "eager_backward") == ["ctc_loss", "cumprod"]


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x


def test_user_function_without_rule_warns_once_and_matches_eager():
    f = numdiff.compile(lambda x: Square.apply(x.sin()).sum())
    x = numdiff.randn(5, dtype=numdiff.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="Square.*no compile rule"):
        f(x).backward()
    y = numdiff.randn(5, dtype=numdiff.float64, requires_grad=True)
    f(y).backward()
    expected = 2 * np.sin(y.detach().numpy()) * np.cos(y.detach().numpy())
    np.testing.assert_allclose(y.grad.numpy(), expected, rtol=1e-12)


def test_prod_gradient_stays_exact_when_zeros_appear_after_tracing():
    f = numdiff.compile(lambda x: x.prod(dim=1).sum())
    x = numdiff.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    f(x).backward()
    z = numdiff.tensor(np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0]]), requires_grad=True)
    f(z).backward()
    np.testing.assert_array_equal(z.grad.numpy(), [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
