"""autograd.grad's is_grads_batched and materialize_grads, autograd.functional.jacobian's
forward-mode strategy and is_inference_mode_enabled, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff

RNG = np.random.default_rng(3)
X = RNG.standard_normal(3)
Y = RNG.standard_normal(3)
ROWS = np.vstack([np.eye(3), RNG.standard_normal((2, 3))])


def _pair(lib):
    x = lib.tensor(X, requires_grad=True)
    y = lib.tensor(Y, requires_grad=True)
    return x, y


def _curve(lib, x, y):
    return lib.stack([x.sin() * y, (x * y).exp().sum().expand(3)]).sum(0)


@pytest.mark.parametrize("create_graph", [False, True])
def test_batched_grad_outputs_give_each_rows_vector_jacobian_product(create_graph):
    results = []
    for lib in (torch, numdiff):
        x, y = _pair(lib)
        out = _curve(lib, x, y)
        grads = lib.autograd.grad(out, (x, y), lib.tensor(ROWS), create_graph=create_graph, is_grads_batched=True)
        if create_graph:  # the batched results stay differentiable
            grads = grads + lib.autograd.grad(grads[0].sum(), x)
        results.append([g.detach().numpy() for g in grads])
    for theirs, ours in zip(*results):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_batched_grad_of_a_second_derivative_is_the_hessian():
    x = numdiff.tensor(X, requires_grad=True)
    (gx,) = numdiff.autograd.grad((x**3).prod(), x, create_graph=True)
    (hessian,) = numdiff.autograd.grad(gx, x, numdiff.eye(3, dtype=numdiff.float64), is_grads_batched=True)
    expected = torch.autograd.functional.hessian(lambda t: (t**3).prod(), torch.tensor(X))
    np.testing.assert_allclose(hessian.numpy(), expected.numpy(), rtol=1e-12)


def test_batched_grad_outputs_without_a_batch_dimension_are_refused_by_name():
    x, y = _pair(numdiff)
    out = _curve(numdiff, x, y)
    with pytest.raises(RuntimeError, match=r"grad: with is_grads_batched=True, grad_outputs\[0\].*\(3,\).*got \(3,\)"):
        numdiff.autograd.grad(out, x, numdiff.ones(3, dtype=numdiff.float64), is_grads_batched=True)
    two = [numdiff.ones(2, 3, dtype=numdiff.float64), numdiff.ones(4, 3, dtype=numdiff.float64)]
    with pytest.raises(RuntimeError, match=r"one batch size, got \[2, 4\]"):
        numdiff.autograd.grad([out, out * 2], x, two, is_grads_batched=True)


def test_materialize_grads_gives_zeros_for_an_unused_input_like_torch():
    results = []
    for lib in (torch, numdiff):
        x, y = _pair(lib)
        unused = lib.ones(2, requires_grad=True)
        grads = lib.autograd.grad((x * 2).sum(), [x, unused, y], materialize_grads=True)
        results.append([g.numpy().tolist() for g in grads])
        with pytest.raises(ValueError, match="allow_unused"):
            lib.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True, allow_unused=False)
    assert results[0] == results[1]
    x = numdiff.tensor(X, requires_grad=True)
    assert numdiff.autograd.grad((x * 2).sum(), [x, numdiff.ones(1, requires_grad=True)], allow_unused=True)[1] is None


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_strategies_match_torch(strategy):
    expected = torch.autograd.functional.jacobian(
        lambda a, b: _curve(torch, a, b), _pair(torch), vectorize=True, strategy=strategy
    )
    got = numdiff.autograd.functional.jacobian(
        lambda a, b: _curve(numdiff, a, b), _pair(numdiff), vectorize=True, strategy=strategy
    )
    for theirs, ours in zip(expected, got):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_jacobian_refuses_an_unknown_strategy_and_forward_mode_without_vectorize():
    x = numdiff.tensor(X)
    with pytest.raises(ValueError, match="jacobian: strategy must be"):
        numdiff.autograd.functional.jacobian(numdiff.sin, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        numdiff.autograd.functional.jacobian(numdiff.sin, x, strategy="forward-mode")


def test_is_inference_mode_enabled_follows_the_block_and_the_decorator():
    assert not numdiff.is_inference_mode_enabled()
    with numdiff.inference_mode():
        assert numdiff.is_inference_mode_enabled() and not numdiff.is_grad_enabled()
        with numdiff.inference_mode(False):
            assert not numdiff.is_inference_mode_enabled()
        assert numdiff.is_inference_mode_enabled()

    @numdiff.inference_mode()
    def inside():
        return numdiff.is_inference_mode_enabled()

    assert inside() and not numdiff.is_inference_mode_enabled()
    assert numdiff.autograd.is_inference_mode_enabled is numdiff.is_inference_mode_enabled
