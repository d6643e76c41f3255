"""numdiff.func results stay differentiable with respect to captured tensors that require grad
(a critic's parameters in a gradient penalty), as torch.func's are inside an outer autograd
graph; and backward() inside a transform is refused, as torch.func refuses it."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd.engine import BackwardInTransformError

torch = pytest.importorskip("torch")


def _penalties(lib, func):
    """Per transform, the gradient reaching the captured parameter w."""
    w = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    x = lib.tensor([3.0, 4.0], dtype=lib.float64)
    xs = lib.tensor([[3.0, 4.0], [1.0, -2.0]], dtype=lib.float64)

    def critic(v):
        return (w * v * v).sum() + (w * w * v).sum()

    def pointwise(v):
        return w * v * v

    cases = {
        "grad": lambda: (func.grad(critic)(x) ** 2).sum(),
        "grad_and_value": lambda: (lambda g, v: g.sum() + v)(*func.grad_and_value(critic)(x)),
        "vjp": lambda: (lambda o, fn: fn(lib.ones_like(o))[0].sum() + o)(*func.vjp(critic, x)),
        "jacrev": lambda: (func.jacrev(pointwise)(x) ** 2).sum(),
        "hessian": lambda: func.hessian(critic)(x).sum(),
        "jvp": lambda: func.jvp(critic, (x,), (lib.ones_like(x),))[1],
        "jacfwd": lambda: func.jacfwd(pointwise)(x).sum(),
        "grad_of_grad": lambda: func.grad(lambda v: func.grad(critic)(v).pow(3).sum())(x).sum(),
        "vmap_of_grad": lambda: (func.vmap(func.grad(critic))(xs) ** 2).sum(),
    }
    results = {}
    for name, loss in cases.items():
        w.grad = None
        loss().backward()
        results[name] = w.grad.tolist()
    return results


def test_gradient_penalty_reaches_captured_parameters_as_in_torch():
    # Before, func.grad detached its result: the WGAN-GP penalty gave the critic's parameters
    # [3, 4] (the critic term only) where torch gives the full gradient.
    theirs = _penalties(torch, torch.func)
    ours = _penalties(numdiff, numdiff.func)
    for name in theirs:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-12, err_msg=name)


def _wgan_gp_gradients(lib, weight, bias, inputs):
    critic = lib.nn.Sequential(lib.nn.Linear(3, 1), lib.nn.Tanh()).double()
    with lib.no_grad():
        critic[0].weight.copy_(lib.tensor(weight))
        critic[0].bias.copy_(lib.tensor(bias))
    x = lib.tensor(inputs)
    per_sample = lib.func.vmap(lib.func.grad(lambda v: critic(v).sum()))(x)
    penalty = ((per_sample.norm(dim=1) - 1) ** 2).mean()
    (critic(x).mean() + 10 * penalty).backward()
    return critic[0].weight.grad.numpy().copy(), critic[0].bias.grad.numpy().copy()


def test_wgan_gp_penalty_on_a_critic_module_matches_torch():
    rng = np.random.default_rng(0)
    args = rng.standard_normal((1, 3)), rng.standard_normal(1), rng.standard_normal((4, 3))
    for ours, theirs in zip(_wgan_gp_gradients(numdiff, *args), _wgan_gp_gradients(torch, *args)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_result_without_captured_tracked_tensors_stays_detached():
    x = numdiff.tensor([1.0, 2.0])
    assert not numdiff.func.grad(lambda v: (v**3).sum())(x).requires_grad
    w = numdiff.ones(2, requires_grad=True)
    with numdiff.no_grad():
        assert not numdiff.func.grad(lambda v: (w * v**3).sum())(x).requires_grad


def _call_with_backward_inside(lib, transform):
    w = lib.ones(3, requires_grad=True)
    x = lib.ones(3)

    def f(v):
        y = (v * w).sum()
        y.backward()
        return y

    call = {
        "grad": lambda: lib.func.grad(f)(x),
        "vjp": lambda: lib.func.vjp(f, x),
        "jvp": lambda: lib.func.jvp(f, (x,), (x,)),
        "vmap": lambda: lib.func.vmap(f)(lib.ones(2, 3)),
        "jacrev": lambda: lib.func.jacrev(f)(x),
        "jacfwd": lambda: lib.func.jacfwd(f)(x),
        "hessian": lambda: lib.func.hessian(f)(x),
    }[transform]
    try:
        call()
    finally:
        assert w.grad is None


@pytest.mark.parametrize("transform", ["grad", "vjp", "jvp", "vmap", "jacrev", "jacfwd", "hessian"])
def test_backward_inside_a_transform_is_refused_like_torch(transform):
    with pytest.raises(RuntimeError, match="backward\\(\\) called inside a"):
        _call_with_backward_inside(torch, transform)
    with pytest.raises(BackwardInTransformError, match="backward\\(\\) called inside a numdiff.func transform"):
        _call_with_backward_inside(numdiff, transform)


def test_autograd_grad_inside_a_transform_still_works():
    x = numdiff.tensor([1.0, 2.0])

    def f(v):
        (g,) = numdiff.autograd.grad((v**3).sum(), v, create_graph=True)
        return g.sum()

    np.testing.assert_allclose(numdiff.func.grad(f)(x).numpy(), (6 * x).numpy())
