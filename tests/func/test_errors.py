"""numdiff.func errors: non-scalar grad, mismatched in_dims, in-place mutation of captured tensors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
from numdiff import func
from numdiff._inplace import TransformMutationError


def test_grad_of_non_scalar_output_names_the_shape():
    with pytest.raises(func.TransformOutputError, match=r"scalar \(0-d\) tensor, got \(3,\)"):
        func.grad(lambda x: x * 2)(numdiff.ones(3))


def test_grad_of_integer_input_raises():
    with pytest.raises(TypeError, match="floating-point"):
        func.grad(lambda x: x.sum())(numdiff.tensor([1, 2]))


def test_vmap_mismatched_in_dims_sizes_list_the_inputs():
    with pytest.raises(ValueError, match=r"input 0 of shape \(3, 2\) has size 3, input 1 of shape \(4, 2\) has size 4"):
        func.vmap(lambda a, b: a + b)(numdiff.ones(3, 2), numdiff.ones(4, 2))


def test_vmap_without_batched_input_and_bad_in_dims_raise():
    with pytest.raises(ValueError, match="no input is batched"):
        func.vmap(lambda a: a, in_dims=None)(numdiff.ones(2))
    with pytest.raises(ValueError, match="out of range"):
        func.vmap(lambda a: a, in_dims=2)(numdiff.ones(2, 2))
    with pytest.raises(ValueError, match="one entry per argument"):
        func.vmap(lambda a, b: a, in_dims=(0,))(numdiff.ones(2), numdiff.ones(2))


def test_inplace_mutation_of_captured_tensor_under_vmap_and_grad_raises():
    captured = numdiff.zeros(3)

    def leak(x):
        captured.add_(x)
        return x.sum()

    with pytest.raises(TransformMutationError, match=r"shape \(3,\) and dtype numdiff.float32"):
        func.vmap(leak)(numdiff.ones(2, 3))
    with pytest.raises(TransformMutationError, match="being differentiated"):
        func.grad(leak)(numdiff.ones(3))
    assert captured.numpy().tolist() == [0.0, 0.0, 0.0]


def test_data_dependent_control_flow_under_vmap_raises():
    with pytest.raises(func.VmapDataDependentError, match="bool"):
        func.vmap(lambda x: x if x.sum() > 0 else -x)(numdiff.ones(2, 3))


class Cube(numdiff.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


def test_op_without_batching_rule_loops_with_one_warning():
    x = numdiff.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.warns(func.VmapPerformanceWarning, match="'Cube' has no batching rule"):
        out = func.vmap(Cube.apply)(x)
    np.testing.assert_allclose(out.numpy(), np.arange(6.0).reshape(2, 3) ** 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", func.VmapPerformanceWarning)  # warned once already
        grads = func.vmap(func.grad(lambda r: Cube.apply(r).sum()))(x)
    np.testing.assert_allclose(grads.numpy(), 3 * np.arange(6.0).reshape(2, 3) ** 2)


def test_per_sample_gradients_run_without_fallback_loops():
    model = numdiff.nn.Linear(4, 3)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        out = func.functional_call(model, p, (x.unsqueeze(0),))
        return numdiff.nn.functional.cross_entropy(out, y.unsqueeze(0))

    with warnings.catch_warnings():
        warnings.simplefilter("error", func.VmapPerformanceWarning)
        grads = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, numdiff.randn(5, 4), numdiff.tensor([0, 1, 2, 0, 1]))
    assert grads["weight"].shape == (5, 3, 4)


def test_argnums_must_name_each_argument_once():
    # Repeated argnums made jacrev overwrite one primal with the other (a wrong, all-zero block),
    # and () or a float were accepted or leaked a TypeError from iterating them.
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64)
    for transform in (func.grad, func.jacrev, func.jacfwd):
        with pytest.raises(ValueError, match=r"argnums \(0, -2\) names an argument more than once"):
            transform(lambda a, b: (a * b).sum(), argnums=(0, -2))(x, x)
        for bad in ((), 0.0, True, "0"):
            with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple of ints"):
                transform(lambda a, b: (a * b).sum(), argnums=bad)(x, x)


def test_vmap_out_dims_out_of_range_or_not_an_int_raise():
    # An out_dim past the output's dims was taken modulo them (out_dims=3 on a 2-D result acted as
    # 1, and out_dims=1 on a scalar result was ignored); torch.func raises.
    x = numdiff.ones(4, 3)
    with pytest.raises(ValueError, match=r"out_dim 3 is out of range for an output of shape \(3,\).*\[-2, 1\]"):
        func.vmap(lambda r: r * 2, out_dims=3)(x)
    with pytest.raises(ValueError, match=r"out_dim 1 is out of range for an output of shape \(\)"):
        func.vmap(lambda r: r.sum(), out_dims=1)(x)
    with pytest.raises(TypeError, match="out_dims must be ints or None, got 1.5"):
        func.vmap(lambda r: r, out_dims=1.5)(x)
    with pytest.raises(TypeError, match="in_dims must be ints or None, got 0.0"):
        func.vmap(lambda r: r, in_dims=(0.0,))(x)
    assert func.vmap(lambda r: r * 2, out_dims=-2)(x).shape == (4, 3)
