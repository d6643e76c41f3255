"""numdiff.compile's direct kernel calls (numdiff.compile.direct): planned once, same results as eager."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.compile.direct import plans
from numdiff.ops.registry import SPECS


def _cnn(dtype):
    nn = numdiff.nn
    numdiff.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, stride=2, padding=1, bias=False), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
        nn.Flatten(), nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3),
    )
    return model.to(dtype=dtype)


def _grads(model, x, y, compiled):
    for p in model.parameters():
        p.grad = None
    x.grad = None

    def loss_of(a, b):
        return numdiff.nn.functional.cross_entropy(model(a), b)

    loss = (numdiff.compile(loss_of) if compiled else loss_of)(x, y)
    loss.backward()
    return [loss.detach().numpy()] + [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("dtype, rtol", [(numdiff.float64, 1e-12), (numdiff.float32, 1e-5)])
def test_cnn_step_calls_kernel_cores_and_matches_eager(dtype, rtol):
    model = _cnn(dtype)
    x = numdiff.randn(3, 2, 8, 8, dtype=dtype, requires_grad=True)
    y = numdiff.tensor(np.array([0, 2, 1]))
    f = numdiff.compile(lambda a, b: numdiff.nn.functional.cross_entropy(model(a), b))
    f(x, y).backward()
    source = f.compiled.sources[0]
    for core in ("conv2d_forward_core", "conv2d_backward_input_core", "conv2d_backward_weight_core",
                 "max_pool2d_core", "max_pool_scatter_core", "linear_2d(", "matmul_2d(", "sum_dims",
                 ".transpose("):
        assert core in source
    for forward in ("Conv2d_forward", "MaxPool2d_forward", "Sum_forward", "Permute_forward"):
        assert forward not in source
    eager = _grads(model, x, y, compiled=False)
    compiled = _grads(model, x, y, compiled=True)
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(c, e, rtol=rtol, atol=rtol)


def test_a_non_contiguous_input_of_the_traced_shape_gives_eagers_result():
    w = numdiff.randn(4, 3, 3, 3, dtype=numdiff.float64, requires_grad=True)
    f = numdiff.compile(lambda a: numdiff.nn.functional.conv2d(a, w, padding=1).sum())
    f(numdiff.randn(2, 3, 6, 6, dtype=numdiff.float64))
    # Same shape, dtype and requires_grad (so no retrace), but a transposed view in memory.
    x = numdiff.randn(2, 3, 6, 6, dtype=numdiff.float64).transpose(2, 3)
    assert not x.numpy().flags.c_contiguous
    out = f(x)
    out.backward()
    np.testing.assert_allclose(out.detach().numpy(), numdiff.nn.functional.conv2d(x, w.detach(), padding=1).sum().numpy(),
                               rtol=1e-12)
    assert f.compiled.compile_count == 1


@pytest.mark.parametrize("form, b_shape", [("a.T @ b", (5, 3)), ("a @ b.T", (3, 4)), ("a.T @ b.T", (3, 5))])
def test_matmul_of_transposed_views_matches_eager(form, b_shape):
    rng = np.random.default_rng(0)
    a = numdiff.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(b_shape), requires_grad=True)

    def fn(a, b):
        return eval(form, {"a": a, "b": b}).sin().sum()

    f = numdiff.compile(fn)
    out = f(a, b)
    out.backward()
    assert "matmul_2d(" in f.compiled.sources[0]
    ga, gb = a.grad.numpy().copy(), b.grad.numpy().copy()
    a.grad = b.grad = None
    expected = fn(a, b)
    expected.backward()
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ga, a.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gb, b.grad.numpy(), rtol=1e-12)


def test_cases_without_a_direct_form_are_emitted_as_forward_calls():
    # A batched matmul has no direct form: it stays an ordinary forward call.
    f = numdiff.compile(lambda a, b: (a @ b).sum())
    a, b = numdiff.randn(2, 3, 4, requires_grad=True), numdiff.randn(2, 4, 5, requires_grad=True)
    f(a, b).backward()
    assert "Matmul_forward" in f.compiled.sources[0] and "matmul_2d(" not in f.compiled.sources[0]
    np.testing.assert_allclose(a.grad.numpy(), np.ones((2, 3, 5), np.float32) @ b.detach().numpy().transpose(0, 2, 1),
                               rtol=1e-5)


def test_direct_plans_live_on_the_specs_of_the_ops_they_plan():
    planned = {name for name, spec in SPECS.items() if spec.direct is not None}
    assert {"conv2d", "matmul", "linear", "max_pool2d", "sum"} <= planned
    assert all(SPECS[name].direct.planner.__module__ == "numdiff.compile.direct" for name in planned)
    with pytest.raises(ValueError, match="'conv2d': direct is already attached"):
        plans("conv2d")(lambda call, values, ref: None)
