"""functorch's legacy API (``import functorch`` reads torch._functorch.*) and torch.func's
linearize, functionalize and replace_all_batch_norm_modules_, as the forward-mode AD tutorial
and the model-ensembling tutorial's functorch version use them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff._functorch import deprecated as ft
from numdiff._functorch.apis import chunk_vmap
from numdiff._functorch.python_key import make_fx
from numdiff.func import functionalize, linearize, replace_all_batch_norm_modules_


def _linear(lib, seed=0):
    rng = np.random.default_rng(seed)
    model = lib.nn.Linear(5, 3).double()
    with lib.no_grad():
        model.weight.copy_(lib.from_numpy(rng.standard_normal((3, 5))))
        model.bias.copy_(lib.from_numpy(rng.standard_normal(3)))
    return model


def test_make_functional_runs_the_model_with_the_given_parameters_and_grads_match_torch():
    x = np.random.default_rng(1).standard_normal((4, 5))

    def grads(lib, make_functional, grad):
        func, params = make_functional(_linear(lib))
        loss = lambda p: (func(p, lib.from_numpy(x)) ** 2).sum()  # noqa: E731
        return [g.detach().numpy() for g in grad(loss)(params)]

    from torch._functorch.make_functional import make_functional as torch_make_functional

    ours = grads(numdiff, ft.make_functional, ft.grad)
    theirs = grads(torch, torch_make_functional, torch.func.grad)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_make_functional_with_buffers_and_jvp_over_parameters():
    model = numdiff.nn.Sequential(numdiff.nn.Linear(5, 5), numdiff.nn.BatchNorm1d(5)).double()
    func, params, buffers = ft.make_functional_with_buffers(model)
    assert len(params) == 4 and len(buffers) == 3
    x = numdiff.randn(16, 5, dtype=numdiff.float64)
    tangents = tuple(numdiff.rand_like(p) for p in params)
    out, jvp_out = ft.jvp(lambda p: func(p, buffers, x), (params,), (tangents,))
    eps = 1e-6
    shifted = tuple(p + eps * t for p, t in zip(params, tangents))
    backed = tuple(b.clone() for b in buffers)
    numeric = (func(shifted, backed, x) - func(params, tuple(b.clone() for b in buffers), x)) / eps
    np.testing.assert_allclose(jvp_out.detach().numpy(), numeric.detach().numpy(), atol=1e-4)


def test_combine_state_for_ensemble_under_vmap_matches_each_model():
    models = [_linear(numdiff, seed) for seed in range(3)]
    func, params, buffers = ft.combine_state_for_ensemble(models)
    x = numdiff.randn(4, 5, dtype=numdiff.float64)
    out = ft.vmap(func, in_dims=(0, 0, None))(params, buffers, x)
    for k, model in enumerate(models):
        np.testing.assert_allclose(out[k].detach().numpy(), model(x).detach().numpy(), rtol=1e-12)


def test_legacy_api_rejects_bad_inputs_by_name():
    with pytest.raises(TypeError, match="make_functional: expected an nn.Module, got a int"):
        ft.make_functional(3)
    with pytest.raises(RuntimeError, match="use make_functional_with_buffers"):
        ft.make_functional(numdiff.nn.BatchNorm1d(3))
    func, params = ft.make_functional(numdiff.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="expected 2 parameters"):
        func(params[:1], numdiff.randn(1, 2))
    with pytest.raises(RuntimeError, match="of one class"):
        ft.combine_state_for_ensemble([numdiff.nn.Linear(2, 2), numdiff.nn.Tanh()])
    with pytest.raises(NotImplementedError, match="make_fx"):
        make_fx(numdiff.sin)(numdiff.zeros(2))


def test_linearize_gives_the_jvp_and_checks_tangent_shapes():
    x = numdiff.tensor([0.3, -1.2, 2.0], dtype=numdiff.float64)
    out, jvp_fn = linearize(lambda t: t.sin() * t, x)
    t = numdiff.tensor([1.0, 0.5, -2.0], dtype=numdiff.float64)
    xs = x.numpy()
    np.testing.assert_allclose(out.numpy(), np.sin(xs) * xs)
    np.testing.assert_allclose(jvp_fn(t).numpy(), (np.cos(xs) * xs + np.sin(xs)) * t.numpy(), rtol=1e-12)
    reference = torch.func.linearize(lambda v: v.sin() * v, torch.from_numpy(xs))[1](torch.from_numpy(t.numpy()))
    np.testing.assert_allclose(jvp_fn(t).numpy(), reference.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match=r"tangent 0 has shape \(2,\), but its primal has shape \(3,\)"):
        jvp_fn(numdiff.zeros(2, dtype=numdiff.float64))
    with pytest.raises(TypeError, match="primals must be tensors"):
        linearize(numdiff.sin, 1.0)


def test_functionalize_keeps_outputs_and_input_mutations():
    def f(x):
        y = x.clone()
        y.add_(1)
        x.mul_(2)
        return y

    x = numdiff.ones(3)
    out = functionalize(f)(x)
    np.testing.assert_array_equal(out.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(x.numpy(), [2, 2, 2])
    with pytest.raises(ValueError, match="remove must be one of"):
        functionalize(f, remove="views")


def test_replace_all_batch_norm_modules_lets_vmap_run_a_batch_norm_model():
    model = numdiff.nn.Sequential(numdiff.nn.Linear(3, 4), numdiff.nn.BatchNorm1d(4), numdiff.nn.InstanceNorm1d(4))
    assert replace_all_batch_norm_modules_(model) is model
    assert model[1].running_mean is None and not model[1].track_running_stats
    x = numdiff.randn(2, 6, 3)
    out = numdiff.func.vmap(model[:2])(x)
    for k in range(2):
        np.testing.assert_allclose(out[k].detach().numpy(), model[:2](x[k]).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="expected an nn.Module"):
        replace_all_batch_norm_modules_([model])


def test_chunk_vmap_equals_vmap():
    x = numdiff.randn(5, 3)
    np.testing.assert_array_equal(chunk_vmap(numdiff.sin, chunks=2)(x).numpy(), numdiff.sin(x).numpy())
    with pytest.raises(ValueError, match="chunks must be a positive int"):
        chunk_vmap(numdiff.sin, chunks=0)
