"""autograd.grad takes torch 2's keywords: the deprecated `only_inputs` (the canonical WGAN-GP
penalty passes it), `is_grads_batched`, `materialize_grads` and a dict of inputs, with torch's
numbers and errors that name the call and the values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

DATA = np.random.default_rng(0).standard_normal((4, 3))


def _both(fn):
    """fn(lib, x, z) on numdiff and torch with the same leaves: x (4, 3) and z (3,), unused."""
    out = []
    for lib in (numdiff, torch):
        x = lib.tensor(DATA, requires_grad=True)
        z = lib.tensor(DATA[0], requires_grad=True)
        out.append(fn(lib, x, z))
    return out


def test_only_inputs_is_accepted_as_in_a_gradient_penalty_and_false_warns():
    def penalty(lib, x, z):
        y = (x * x * x).sum(1)
        (slope,) = lib.autograd.grad(outputs=y, inputs=x, grad_outputs=lib.ones_like(y), create_graph=True,
                                     retain_graph=True, only_inputs=True)
        ((slope.norm(2, dim=1) - 1) ** 2).mean().backward()
        return slope.detach().numpy(), x.grad.numpy()

    got, want = _both(penalty)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    x = numdiff.tensor(DATA, requires_grad=True)
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        numdiff.autograd.grad((x * 2).sum(), x, only_inputs=False)


@pytest.mark.parametrize("create_graph", [False, True])
def test_is_grads_batched_stacks_one_vjp_per_row(create_graph):
    def batched(lib, x, z):
        y = (x.sin() * x).sum(1)  # (4,)
        cotangents = lib.tensor(np.random.default_rng(1).standard_normal((5, 4)))
        gx, gz = lib.autograd.grad(y, [x, z], cotangents, create_graph=create_graph, is_grads_batched=True,
                                   allow_unused=True)
        assert gz is None and tuple(gx.shape) == (5, 4, 3)
        if create_graph:  # the stacked rows are differentiable again
            return gx.detach().numpy(), lib.autograd.grad(gx.sum(), x)[0].numpy()
        return (gx.numpy(),)

    got, want = _both(batched)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_is_grads_batched_first_row_is_the_plain_vjp_to_the_bit():
    x = numdiff.tensor(DATA, requires_grad=True)
    y = x.exp() * x
    cotangents = numdiff.tensor(np.random.default_rng(2).standard_normal((2, 4, 3)))
    (rows,) = numdiff.autograd.grad(y, x, cotangents, is_grads_batched=True, retain_graph=True)
    for b in range(2):
        (single,) = numdiff.autograd.grad(y, x, cotangents[b], retain_graph=True)
        assert rows[b].numpy().tobytes() == single.numpy().tobytes()


def test_materialize_grads_gives_zeros_and_a_dict_of_inputs_a_dict():
    def materialized(lib, x, z):
        grads = lib.autograd.grad((x * x).sum(), {"x": x, "z": z}, create_graph=True, materialize_grads=True)
        assert list(grads) == ["x", "z"] and grads["z"].requires_grad
        return grads["x"].detach().numpy(), grads["z"].detach().numpy()

    got, want = _both(materialized)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_grad_keyword_errors_name_the_call_and_the_values():
    x = numdiff.tensor(DATA, requires_grad=True)
    y = (x * x).sum(1)
    with pytest.raises(ValueError, match=r"grad: materialize_grads=True .* allow_unused=False"):
        numdiff.autograd.grad(y.sum(), x, materialize_grads=True, allow_unused=False)
    with pytest.raises(RuntimeError, match=r"grad: the inputs argument cannot be empty"):
        numdiff.autograd.grad(y.sum(), [])
    with pytest.raises(RuntimeError, match=r"grad_outputs\[0\] must be a tensor of shape \(batch, \*\(4,\)\).*got \(3, 5\)"):
        numdiff.autograd.grad(y, x, numdiff.ones(3, 5), is_grads_batched=True)
    with pytest.raises(RuntimeError, match=r"grad_outputs\[0\] .*got \(0, 4\)"):
        numdiff.autograd.grad(y, x, numdiff.ones(0, 4), is_grads_batched=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # only_inputs=True (the default) warns about nothing
        numdiff.autograd.grad(y.sum(), x, only_inputs=True)
