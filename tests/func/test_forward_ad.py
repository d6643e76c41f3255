"""numdiff.autograd.forward_ad (dual tensors) against torch.autograd.forward_ad: tangents through
functions and modules, nesting with grad, and misuse refused by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import numdiff
import numdiff.autograd.forward_ad as fwad

RNG = np.random.default_rng(4)
P, D, Y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), RNG.standard_normal(4)


def function(lib, x, y):
    return (x**2).sin().sum(1) * y.exp().sum() + lib.tanh(x @ y)


def test_tangents_match_torch():
    with fwad.dual_level():
        dual = fwad.make_dual(numdiff.tensor(P), numdiff.tensor(D))
        primal, tangent = fwad.unpack_dual(function(numdiff, dual, numdiff.tensor(Y)))
        assert fwad.unpack_dual(primal).tangent is None
    with tfw.dual_level():
        dual = tfw.make_dual(torch.tensor(P), torch.tensor(D))
        their_primal, their_tangent = tfw.unpack_dual(function(torch, dual, torch.tensor(Y)))
    np.testing.assert_allclose(primal.numpy(), their_primal.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tangent.numpy(), their_tangent.numpy(), rtol=1e-10)


def test_module_tangent_and_backward_through_the_primal():
    layer = numdiff.nn.Linear(4, 2).double()
    x = numdiff.tensor(P, requires_grad=True)
    with fwad.dual_level():
        out = layer(fwad.make_dual(x, numdiff.tensor(D)))
        primal, tangent = fwad.unpack_dual(out)
        np.testing.assert_allclose(tangent.detach().numpy(), D @ layer.weight.detach().numpy().T, rtol=1e-12)
        primal.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(layer.weight.detach().numpy().sum(0), (3, 1)), rtol=1e-12)


def test_misuse_is_refused_by_name():
    with pytest.raises(RuntimeError, match="make_dual: no dual level"):
        fwad.make_dual(numdiff.ones(2), numdiff.ones(2))
    with fwad.dual_level():
        with pytest.raises(ValueError, match="make_dual: tangent of shape"):
            fwad.make_dual(numdiff.ones(2), numdiff.ones(3))
        with pytest.raises(TypeError, match="make_dual: tensor must be a floating"):
            fwad.make_dual(numdiff.tensor([1, 2]), numdiff.ones(2))
    assert fwad.unpack_dual(numdiff.ones(1)).tangent is None
    with pytest.raises(RuntimeError, match="exit_dual_level: no dual level"):
        fwad.exit_dual_level()


def test_a_custom_function_jvp_reads_and_frees_what_forward_kept_on_ctx():
    class Exp(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.result = numdiff.exp(x)
            return ctx.result

        @staticmethod
        def jvp(ctx, tangent):
            out = tangent * ctx.result
            del ctx.result  # as PyTorch's forward-AD tutorial frees it
            return out

    primal = numdiff.tensor(P, requires_grad=True)
    with fwad.dual_level():
        tangent = fwad.unpack_dual(Exp.apply(fwad.make_dual(primal, numdiff.tensor(D)))).tangent
    np.testing.assert_allclose(tangent.numpy(), D * np.exp(P), rtol=1e-12)
