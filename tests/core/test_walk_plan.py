"""A backward call that names its inputs computes only the gradients that lead to them: built-in
ops see a per-call needs_input_grad (numdiff.autograd._walk_plan), so autograd.grad of a network's
output with respect to its input records no weight-gradient op, while the recorded graph keeps its
own needs for later calls."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradgradcheck


def _ops_recorded(call):
    with numdiff.profiler.profile() as prof:
        result = call()
    return {event.key: event.count for event in prof.key_averages()}, result


def _mlp(lib, rng_seed=0):
    """x -> Linear(3, 6) -> tanh -> Linear(6, 1) in float64, every weight requiring grad."""
    rng = np.random.default_rng(rng_seed)
    shapes = [(6, 3), (6,), (1, 6), (1,)]  # two Linear layers' weights and biases
    params = [lib.tensor(rng.standard_normal(s), dtype=lib.float64, requires_grad=True) for s in shapes]
    x = lib.tensor(rng.standard_normal((4, 3)), dtype=lib.float64, requires_grad=True)
    hidden = lib.tanh(lib.nn.functional.linear(x, params[0], params[1]))
    return x, params, lib.nn.functional.linear(hidden, params[2], params[3])


def test_grad_of_the_input_through_linear_records_no_weight_gradient_op():
    x, params, out = _mlp(numdiff)
    total = out.sum()
    ops, (dx,) = _ops_recorded(lambda: numdiff.autograd.grad(total, x, create_graph=True))
    # One product per Linear (the input gradient), none for a weight; no bias sum.
    assert ops.get("matmul") == 2, ops
    assert "sum" not in ops and "permute" not in ops, ops
    assert dx.grad_fn is not None


def test_grad_of_the_input_through_conv_and_matmul_records_no_weight_gradient_op():
    rng = np.random.default_rng(2)
    x = numdiff.tensor(rng.standard_normal((1, 2, 5, 5)), requires_grad=True)
    weight = numdiff.tensor(rng.standard_normal((3, 2, 3, 3)), requires_grad=True)
    other = numdiff.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    total = (numdiff.nn.functional.conv2d(x, weight).sum(dim=(2, 3)) @ other).sum()
    ops, _ = _ops_recorded(lambda: numdiff.autograd.grad(total, x, create_graph=True))
    assert "conv2d_weight_grad" not in ops, ops
    assert ops.get("matmul") == 1 and ops.get("conv_transpose2d") == 1, ops


def test_input_gradient_and_its_weight_derivatives_equal_torchs():
    """grad of the input with create_graph (weights not asked for), then the gradient penalty's
    gradient with respect to every weight, as a WGAN-GP critic step does."""
    torch = pytest.importorskip("torch")

    def run(lib):
        x, params, out = _mlp(lib)
        (dx,) = lib.autograd.grad(out.sum(), x, create_graph=True)
        ((dx.norm(2, dim=1) - 1) ** 2).mean().backward()
        # The output bias gets no gradient: the penalty does not depend on it.
        assert params[3].grad is None
        return [dx.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in params[:3]]

    for mine, theirs in zip(run(numdiff), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_a_second_call_on_the_retained_graph_gets_the_weights():
    x, params, out = _mlp(numdiff)
    (dx,) = numdiff.autograd.grad(out.sum(), x, retain_graph=True)
    grads = numdiff.autograd.grad(out.sum(), params + [x])
    torch = pytest.importorskip("torch")
    tx, tparams, tout = _mlp(torch)
    expected = torch.autograd.grad(tout.sum(), tparams + [tx])
    for mine, theirs in zip(grads, expected):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)
    np.testing.assert_allclose(dx.numpy(), expected[-1].numpy(), rtol=1e-12)


def test_a_saved_output_differentiated_again_flows_through_the_recorded_node():
    """pow saves its output, which d/d exponent reads; asked for the exponent only, the narrowed
    backward's recorded formula must still lead back to the base through pow's own node."""
    torch = pytest.importorskip("torch")

    def run(lib):
        base = lib.tensor([1.5, 2.0, 0.7], dtype=lib.float64, requires_grad=True)
        exponent = lib.tensor([0.3, 1.2, 2.5], dtype=lib.float64, requires_grad=True)
        (d_exponent,) = lib.autograd.grad((base**exponent).sum(), exponent, create_graph=True)
        d_exponent.sum().backward()  # every input: the needs the graph recorded
        return d_exponent.detach().numpy(), base.grad.numpy(), exponent.grad.numpy()

    for mine, theirs in zip(run(numdiff), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_backward_with_inputs_leaves_other_grads_and_hooks_alone():
    x, params, out = _mlp(numdiff)
    fired = []
    params[0].register_hook(lambda g: fired.append("weight"))
    out.sum().backward(inputs=[x])
    assert x.grad is not None
    assert all(p.grad is None for p in params) and fired == []


def test_a_node_hook_sees_no_gradient_for_an_input_the_call_does_not_need():
    x, params, out = _mlp(numdiff)
    seen = []
    out.grad_fn.register_hook(lambda grad_inputs, _: seen.append([g is not None for g in grad_inputs]))
    numdiff.autograd.grad(out.sum(), x, retain_graph=True)
    numdiff.autograd.grad(out.sum(), params[2])
    assert seen == [[True, False, False], [False, True, False]]


def test_a_custom_function_sees_the_recorded_needs_input_grad():
    seen = []

    class Scale(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            seen.append(ctx.needs_input_grad)
            a, b = ctx.saved_tensors
            return grad * b, grad * a

    a = numdiff.tensor([1.0, 2.0], requires_grad=True)
    b = numdiff.tensor([3.0, 4.0], requires_grad=True)
    (grad_a,) = numdiff.autograd.grad(Scale.apply(a, b).sum(), a)
    assert seen == [(True, True)]
    np.testing.assert_array_equal(grad_a.numpy(), [3.0, 4.0])


def test_a_narrowed_call_under_anomaly_mode_matches_the_plain_one():
    x, params, out = _mlp(numdiff)
    (plain,) = numdiff.autograd.grad(out.sum(), x, retain_graph=True)
    with numdiff.autograd.set_detect_anomaly(True):
        (checked,) = numdiff.autograd.grad(out.sum(), x, create_graph=True)
    np.testing.assert_allclose(plain.numpy(), checked.detach().numpy(), rtol=1e-12)


def test_gradgradcheck_of_linear_with_respect_to_input_and_weight():
    rng = np.random.default_rng(3)
    x = numdiff.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    weight = numdiff.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    assert gradgradcheck(lambda a, w: numdiff.tanh(numdiff.nn.functional.linear(a, w)), (x, weight))
