"""@numdiff.elementwise: forward against NumPy, derived gradients (branches included) by
gradcheck/gradgradcheck, against torch, user-supplied derivatives, vmap, and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import numdiff
from numdiff._elementwise import ElementwiseSyntaxError
from numdiff.autograd import gradcheck, gradgradcheck


@numdiff.elementwise
def softclip(x, lo, hi):
    return lo + (hi - lo) * (math.tanh(x) + 1) / 2 if x > 0 else x * x


@numdiff.elementwise
def bump(x, y):
    scale = math.exp(-x * x) + y ** 2.0
    return scale * math.sin(x * y) if x * y > 0.5 or y < -1.0 else math.log1p(x * x) / (1.0 + y * y)


def _softclip_numpy(x, lo, hi):
    return np.where(x > 0, lo + (hi - lo) * (np.tanh(x) + 1) / 2, x * x)


def _random(*shape, seed=0):
    return numdiff.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def test_forward_broadcasts_tensors_and_numbers_against_numpy():
    x, hi = _random(3, 4), _random(4, seed=1)
    out = softclip(x, -1.0, hi)
    expected = _softclip_numpy(x.detach().numpy(), -1.0, hi.detach().numpy())
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12)
    assert out.shape == (3, 4)


def test_parallel_path_above_the_grain_matches_numpy():
    x = numdiff.tensor(np.linspace(-3, 3, 40000, dtype=np.float32))
    out = softclip(x, -1.0, 2.0)
    np.testing.assert_allclose(out.numpy(), _softclip_numpy(x.numpy(), -1.0, 2.0), rtol=1e-5, atol=1e-6)


def test_gradcheck_and_gradgradcheck_with_branches():
    x, lo, hi = _random(5), _random(5, seed=2), _random(1, seed=3)
    assert gradcheck(softclip, (x, lo, hi))
    assert gradgradcheck(softclip, (x, lo, hi))
    a, b = _random(6, seed=4), _random(6, seed=5)
    assert gradcheck(bump, (a, b))
    assert gradgradcheck(bump, (a, b))


def test_gradients_match_torch_autograd():
    x, hi = _random(7), _random(7, seed=6)
    softclip(x, -0.5, hi).sum().backward()
    tx, thi = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, hi))
    torch.where(tx > 0, -0.5 + (thi + 0.5) * (torch.tanh(tx) + 1) / 2, tx * tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hi.grad.numpy(), thi.grad.numpy(), rtol=1e-12)


def test_partials_from_the_forward_loop_equal_the_derived_backward():
    # requires_grad: the forward loop writes each partial and backward multiplies; with
    # create_graph=True backward runs the derived partials as ops instead. Both must agree, and only
    # the arguments that need a gradient get one.
    x, y = _random(50, seed=8), numdiff.tensor(np.random.default_rng(9).standard_normal(50))
    g = numdiff.tensor(np.random.default_rng(10).standard_normal(50))
    (fast,) = numdiff.autograd.grad(bump(x, y), (x,), g)
    (slow,) = numdiff.autograd.grad(bump(x, y), (x,), g, create_graph=True)
    np.testing.assert_allclose(fast.numpy(), slow.detach().numpy(), rtol=1e-13, atol=1e-15)
    assert not fast.requires_grad and slow.requires_grad
    out = bump(x, y)
    assert len(out.grad_fn.saved_tensors) == 3  # x, y and d out / dx: no partial for y


def test_user_supplied_derivative_is_used():
    @numdiff.elementwise
    def square(x):
        return x * x

    @square.derivative
    def _(v):
        return (3.0 * v,)

    x = _random(3)
    square(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * x.detach().numpy())


def test_vmap_and_grad_batch_an_elementwise_op():
    x = _random(4, 3).detach()
    per_row = numdiff.func.vmap(numdiff.func.grad(lambda r: softclip(r, -1.0, 2.0).sum()))(x)
    x.requires_grad_()
    softclip(x, -1.0, 2.0).sum().backward()
    np.testing.assert_allclose(per_row.numpy(), x.grad.numpy(), rtol=1e-12)


def test_abs_min_max_and_chained_comparisons():
    @numdiff.elementwise
    def shaped(x, y):
        return min(abs(x), 2.0) * max(x, y) if -1.0 < x < 1.5 else x * y

    a, b = _random(8, seed=7), _random(8, seed=8)
    xs, ys = a.detach().numpy(), b.detach().numpy()
    expected = np.where((-1.0 < xs) & (xs < 1.5), np.minimum(np.abs(xs), 2.0) * np.maximum(xs, ys), xs * ys)
    np.testing.assert_allclose(shaped(a, b).detach().numpy(), expected, rtol=1e-12)
    assert gradcheck(shaped, (a, b))
    assert gradgradcheck(shaped, (a, b))


def test_global_and_closed_over_numbers_become_constants():
    scale = 3.0

    @numdiff.elementwise
    def scaled(x):
        return scale * x + math.pi

    np.testing.assert_allclose(scaled(numdiff.tensor([1.0, 2.0])).numpy(), [3.0 + math.pi, 6.0 + math.pi])


def test_unsupported_construct_names_function_and_line():
    def looping(x):
        total = 0.0
        while total < 3.0:
            total = total + x
        return total

    with pytest.raises(ElementwiseSyntaxError, match=r"looping .*test_elementwise.py, line \d+\): the statement While"):
        numdiff.elementwise(looping)

    def unknown_call(x):
        return round(x)

    with pytest.raises(ElementwiseSyntaxError, match=r"unknown_call .*the call 'round\(x\)'"):
        numdiff.elementwise(unknown_call)


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match="takes 3 arguments"):
        softclip(numdiff.ones(2), 1.0)
    with pytest.raises(TypeError, match="floating-point"):
        softclip(numdiff.tensor([1, 2]), 0.0, 1.0)
    with pytest.raises(ValueError, match=r"\[\(2,\), \(3,\)\] do not broadcast"):
        softclip(numdiff.ones(2), 0.0, numdiff.ones(3))
    with pytest.raises(TypeError, match="at least one argument must be a Tensor"):
        softclip(1.0, 0.0, 1.0)


def test_float16_computes_in_float32_and_bfloat16_raises_a_type_error():
    # Both once leaked a Numba TypingError (Numba's math has no float16 or bfloat16).
    rng = np.random.default_rng(5)
    x, hi = rng.standard_normal((3, 4)), rng.standard_normal(4)
    half = numdiff.tensor(x).half().requires_grad_()
    out = softclip(half, -1.0, numdiff.tensor(hi).half())
    assert out.dtype == numdiff.float16
    expected = softclip(numdiff.tensor(x).half().float(), -1.0, numdiff.tensor(hi).half().float()).half()
    np.testing.assert_array_equal(out.detach().numpy(), expected.numpy())
    out.sum().backward()
    assert half.grad.dtype == numdiff.float16
    with pytest.raises(TypeError, match="softclip: numdiff stores bfloat16"):
        softclip(numdiff.tensor(x).bfloat16(), -1.0, 1.0)
