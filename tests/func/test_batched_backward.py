"""vjp_fn under vmap as one batched reverse pass (and so jacrev), over every case of the op table.

Where every op behind the output has a backward that batches (their spec's batched_backward), the cotangents
run through the recorded graph as one batched pass and the function runs once; elsewhere vjp_fn
reruns the function batched. Either way the Jacobian must equal the one built row by row with
plain numdiff.autograd.grad, which involves no vmap at all.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import numdiff
from numdiff import func
from numdiff.ops.registry import SPECS
from tests.ops.op_cases import all_cases, case_rng, recorded_ops

BATCHED_BACKWARD = frozenset(name for name, spec in SPECS.items() if spec.batched_backward)

CASES = all_cases()


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _case_inputs(case):
    """The case's arguments as tensors that do not require grad, and the differentiable positions."""
    arguments = case.inputs(case_rng(case))
    values, positions = [], []
    for i, value in enumerate(arguments):
        if isinstance(value, np.ndarray):
            values.append(numdiff.tensor(value))
            if value.dtype == np.float64:
                positions.append(i)
        elif hasattr(value, "array"):  # Const
            values.append(numdiff.tensor(value.array))
        else:
            values.append(value)
    return values, tuple(positions)


def _rowwise_jacobian(fn, values, positions):
    """Per output, per differentiable input: the (*out, *in) Jacobian, one plain backward per row."""
    tracked = list(values)
    for i in positions:
        tracked[i] = values[i].detach().requires_grad_()
    outputs = _as_tuple(fn(*tracked))
    jacobians = []
    for out in outputs:
        rows = []
        for e in range(out.numel()):
            seed = np.zeros(out.numel())
            seed[e] = 1.0
            grads = numdiff.autograd.grad(
                out, [tracked[i] for i in positions], grad_outputs=numdiff.tensor(seed.reshape(tuple(out.shape))),
                retain_graph=True, allow_unused=True,
            )
            rows.append([np.zeros(tuple(values[i].shape)) if g is None else g.numpy() for g, i in zip(grads, positions)])
        jacobians.append(
            [np.stack([row[k] for row in rows]).reshape(tuple(out.shape) + tuple(values[i].shape)) for k, i in enumerate(positions)]
        )
    return jacobians, outputs


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jacrev_matches_rowwise_backward(case):
    values, positions = _case_inputs(case)
    expected, outputs = _rowwise_jacobian(case.fn, values, positions)
    batches = recorded_ops(outputs) <= BATCHED_BACKWARD
    calls = []

    def f(*diff):
        calls.append(1)
        full = list(values)
        for i, v in zip(positions, diff):
            full[i] = v
        return case.fn(*full)

    with warnings.catch_warnings():
        if batches:  # the whole backward runs on batching rules: no op falls back to a loop
            warnings.simplefilter("error", func.VmapPerformanceWarning)
        else:
            warnings.simplefilter("ignore", func.VmapPerformanceWarning)
        jac = func.jacrev(f, argnums=tuple(range(len(positions))))(*[values[i] for i in positions])
    assert len(calls) == (1 if batches else 2), "a graph of batching backwards runs the function once"
    jac = jac if isinstance(jac, tuple) and isinstance(jac[0], tuple) else (jac,) if len(outputs) == 1 else jac
    for ours, theirs in zip(jac, expected):
        for a, b in zip(ours, theirs):
            assert not a.requires_grad
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-10, atol=1e-12)


def test_every_batched_backward_op_has_a_case_on_the_batched_path():
    covered = {case.op for case in CASES}
    missing = sorted(name for name in BATCHED_BACKWARD if name not in covered)
    assert not missing, f"ops whose spec says batched_backward without an op-table case: {missing}"


def test_vmap_of_vjp_fn_through_a_linear_layer_matches_torch():
    rng = np.random.default_rng(3)
    w, b, x, cot = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal((2, 3)), rng.standard_normal((5, 2, 4))
    model = numdiff.nn.Linear(3, 4).double()
    with numdiff.no_grad():
        model.weight.copy_(numdiff.tensor(w))
        model.bias.copy_(numdiff.tensor(b))
    _, vjp_fn = func.vjp(lambda v: numdiff.tanh(model(v)).log_softmax(-1), numdiff.tensor(x))
    _, tvjp_fn = torch.func.vjp(lambda v: torch.log_softmax(torch.tanh(v @ torch.tensor(w).T + torch.tensor(b)), -1), torch.tensor(x))
    ours = func.vmap(vjp_fn)(numdiff.tensor(cot))
    theirs = torch.func.vmap(tvjp_fn)(torch.tensor(cot))
    np.testing.assert_allclose(ours[0].detach().numpy(), theirs[0].numpy(), rtol=1e-10, atol=1e-12)
    # Twice nested: a grid of cotangents, both vmap levels through the same recorded graph.
    ours = func.vmap(func.vmap(vjp_fn))(numdiff.tensor(cot).reshape(5, 1, 2, 4).expand(5, 3, 2, 4))
    np.testing.assert_allclose(ours[0].detach().numpy(), np.broadcast_to(theirs[0].numpy()[:, None], (5, 3, 2, 3)), rtol=1e-10, atol=1e-12)


def test_jacrev_inside_grad_differentiates_through_the_batched_backward():
    # d/dx sum(J(x)) for f = sin(x) * x: J is diagonal, sum(J) = sum(cos(x) x + sin(x)).
    x = numdiff.tensor(np.array([0.3, -1.2, 2.0]))
    ours = func.grad(lambda v: func.jacrev(lambda u: u.sin() * u)(v).sum())(x)
    theirs = torch.func.grad(lambda v: torch.func.jacrev(lambda u: u.sin() * u)(v).sum())(torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_custom_function_in_the_graph_reruns_the_function():
    class Square(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    calls = []

    def f(x):
        calls.append(1)
        return Square.apply(x).sin()

    x = numdiff.tensor(np.array([0.5, -0.25, 1.5]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", func.VmapPerformanceWarning)
        jac = func.jacrev(f)(x)
    assert len(calls) == 2
    np.testing.assert_allclose(jac.numpy(), np.diag(2 * x.numpy() * np.cos(x.numpy() ** 2)), rtol=1e-12)


def test_has_aux_on_the_rerun_path_returns_the_aux_and_skips_it_in_the_pullback():
    class Double(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.0

    x = numdiff.tensor(np.array([0.5, -1.0, 2.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", func.VmapPerformanceWarning)
        jac, aux = func.jacrev(lambda v: (Double.apply(v).exp(), v.sum() * 3.0), has_aux=True)(x)
    np.testing.assert_allclose(jac.numpy(), np.diag(2 * np.exp(2 * x.numpy())), rtol=1e-12)
    np.testing.assert_allclose(aux.numpy(), 4.5)


def test_outputs_no_recorded_op_produced_have_zero_jacobians_as_in_torch_func():
    data = np.array([1.0, 2.0])
    x, tx = numdiff.tensor(data), torch.tensor(data)
    cases = [
        (lambda v: (v.sin(), v.detach() * 2), lambda v: (v.sin(), v.detach() * 2)),
        (lambda v: numdiff.ones(3, dtype=numdiff.float64), lambda v: torch.ones(3, dtype=torch.float64)),
    ]
    for f, tf in cases:
        ours, theirs = _as_tuple(func.jacrev(f)(x)), _as_tuple(torch.func.jacrev(tf)(tx))
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    _, vjp_fn = func.vjp(lambda v: v.detach() * 2, x)
    np.testing.assert_array_equal(vjp_fn(numdiff.ones(2, dtype=numdiff.float64))[0].numpy(), [0.0, 0.0])


def test_jacobian_of_inputs_that_require_grad_is_differentiable_through_the_batched_pass():
    from numdiff.autograd import functional as af

    data = np.array([0.3, -0.7, 1.1])
    x, tx = numdiff.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    jac = af.jacobian(lambda a: a.sin() * a.sum(), x, create_graph=True)
    tjac = torch.autograd.functional.jacobian(lambda a: a.sin() * a.sum(), tx, create_graph=True)
    np.testing.assert_allclose(jac.detach().numpy(), tjac.detach().numpy(), rtol=1e-12)
    (jac * jac).sum().backward()
    (tjac * tjac).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
