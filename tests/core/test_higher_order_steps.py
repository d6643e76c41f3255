"""Steps that differentiate gradients: the values of first and second derivatives through linear,
matmul and transposes match torch's and central differences (PINN, MAML, WGAN-GP and
Hessian-vector shapes)."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck


@pytest.mark.parametrize("activation", ["tanh", "sin", "softplus"])
def test_pinn_derivatives_match_torch(activation):
    """u_x, u_t and u_xx of an MLP by autograd.grad(create_graph=True), then the residual's gradient
    with respect to every weight, equal torch's in float64."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal((8, 2)), rng.standard_normal(8), rng.standard_normal((8, 8)),
               rng.standard_normal(8), rng.standard_normal((1, 8)), rng.standard_normal(1)]  # fmt: skip
    points = rng.random((16, 2))

    def run(lib):
        act = {"tanh": lib.tanh, "sin": lib.sin, "softplus": lib.nn.functional.softplus}[activation]
        params = [lib.tensor(w, dtype=lib.float64, requires_grad=True) for w in weights]
        p = lib.tensor(points, dtype=lib.float64, requires_grad=True)
        h = act(lib.nn.functional.linear(p, params[0], params[1]))
        h = act(lib.nn.functional.linear(h, params[2], params[3]))
        u = lib.nn.functional.linear(h, params[4], params[5])
        (du,) = lib.autograd.grad(u.sum(), p, create_graph=True)
        (ddu,) = lib.autograd.grad(du[:, 0:1].sum(), p, create_graph=True)
        loss = ((du[:, 1:2] + u * du[:, 0:1] - 0.01 * ddu[:, 0:1]) ** 2).mean()
        loss.backward()
        return [loss.detach().numpy(), du.detach().numpy(), ddu.detach().numpy()] + [w.grad.numpy() for w in params]

    for mine, theirs in zip(run(numdiff), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_maml_meta_gradient_matches_torch():
    """One inner SGD step by autograd.grad(create_graph=True) and functional_call, the outer loss's
    gradient through it with respect to the initial weights, against torch in float64."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    shapes = [(6, 1), (6,), (6, 6), (6,), (1, 6), (1,)]
    values = [rng.standard_normal(s) * 0.5 for s in shapes]
    xs = rng.uniform(-3, 3, (5, 1))

    def run(lib):
        nn = lib.nn
        model = nn.Sequential(nn.Linear(1, 6), nn.ReLU(), nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 1)).double()
        with lib.no_grad():
            for p, v in zip(model.parameters(), values):
                p.copy_(lib.tensor(v, dtype=lib.float64))
        x = lib.tensor(xs, dtype=lib.float64)
        y = lib.sin(x)
        params = dict(model.named_parameters())
        inner = nn.functional.mse_loss(lib.func.functional_call(model, params, (x,)), y)
        grads = lib.autograd.grad(inner, list(params.values()), create_graph=True)
        fast = {k: v - 0.1 * g for (k, v), g in zip(params.items(), grads)}
        nn.functional.mse_loss(lib.func.functional_call(model, fast, (x,)), y).backward()
        return [p.grad.numpy() for p in model.parameters()]

    for mine, theirs in zip(run(numdiff), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_gradient_penalty_matches_torch():
    """WGAN-GP: the norm of d critic / d x at interpolated points, squared distance to 1, and its
    gradient with respect to the critic's weights."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    w1, b1, w2, b2 = rng.standard_normal((7, 4)), rng.standard_normal(7), rng.standard_normal((1, 7)), rng.standard_normal(1)
    points = rng.standard_normal((6, 4))

    def run(lib):
        fn = lib.nn.functional
        params = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (w1, b1, w2, b2)]
        x = lib.tensor(points, dtype=lib.float64, requires_grad=True)
        out = fn.linear(fn.leaky_relu(fn.linear(x, params[0], params[1]), 0.2), params[2], params[3])
        (slope,) = lib.autograd.grad(out.sum(), x, create_graph=True)
        loss = out.mean() + 10 * ((slope.norm(2, dim=1) - 1) ** 2).mean()  # b2 reaches only the first term
        loss.backward()
        return [loss.detach().numpy()] + [p.grad.numpy() for p in params]

    for mine, theirs in zip(run(numdiff), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_hessian_vector_products_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    a, v0, x0 = rng.standard_normal((5, 5)), rng.standard_normal(5), rng.standard_normal(5)

    def run(lib):
        m = lib.tensor(a, dtype=lib.float64)

        def f(x):
            return lib.tanh(m @ x).pow(2).sum() + (x * x * x).sum()

        x, v = lib.tensor(x0, dtype=lib.float64), lib.tensor(v0, dtype=lib.float64)
        return [lib.autograd.functional.hvp(f, x, v)[1].numpy(), lib.autograd.functional.vhp(f, x, v)[1].numpy(),
                lib.func.hessian(f)(x).numpy()]  # fmt: skip

    for mine, theirs in zip(run(numdiff), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layout", ["plain", "transposed_weight", "batched_input"])
def test_linear_and_matmul_double_backward_pass_gradgradcheck(layout):
    """The create_graph backward of linear and matmul (products of transposes, no separate copies)
    against central differences, first and second order."""
    rng = np.random.default_rng(5)
    x_shape = (2, 3, 4) if layout == "batched_input" else (3, 4)
    x = numdiff.tensor(rng.standard_normal(x_shape), requires_grad=True)
    w_values = rng.standard_normal((4, 5)).T if layout == "transposed_weight" else rng.standard_normal((5, 4))
    w = numdiff.tensor(np.ascontiguousarray(w_values), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(5), requires_grad=True)
    m = numdiff.tensor(rng.standard_normal((5, 2)), requires_grad=True)

    def f(x, w, b, m):
        weight = w.t().contiguous().t() if layout == "transposed_weight" else w
        return numdiff.tanh(numdiff.nn.functional.linear(x, weight, b)) @ m

    assert gradcheck(f, (x, w, b, m))
    assert gradgradcheck(f, (x, w, b, m))


def test_grad_names_an_input_the_outputs_do_not_depend_on():
    x = numdiff.tensor([1.0], dtype=numdiff.float64, requires_grad=True)
    unused = numdiff.tensor([2.0], dtype=numdiff.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"input 1, shape \(1,\).*allow_unused=True"):
        numdiff.autograd.grad((x * x).sum(), [x, unused], create_graph=True)
