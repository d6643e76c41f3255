"""autograd.graph.saved_tensors_hooks / save_on_cpu, grad_fn._saved_<name>, and nn.DataParallel
without a GPU, as PyTorch's autograd-saved-tensors-hooks tutorial uses them."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.autograd import graph


def test_saved_names_follow_pytorch():
    a = numdiff.randn(5, requires_grad=True)
    b = numdiff.ones(5, requires_grad=True)
    y = a * b
    assert y.grad_fn._saved_self is a and y.grad_fn._saved_other is b
    e = numdiff.exp(a)
    assert e.grad_fn._saved_result.equal(e) and e.grad_fn._saved_result is not e
    with pytest.raises(AttributeError, match="_saved_weight"):
        getattr(y.grad_fn, "_saved_weight")  # noqa: B009 - the attribute access is what is tested


def test_a_tensor_used_twice_fills_self_and_other():
    x = numdiff.randn(3, requires_grad=True)
    y = x * x
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is x


def test_pack_and_unpack_run_once_each_per_saved_tensor():
    calls = []
    a = numdiff.ones(5, requires_grad=True)
    b = numdiff.ones(5, requires_grad=True) * 2
    with graph.saved_tensors_hooks(lambda t: calls.append("pack") or t, lambda t: calls.append("unpack") or t):
        y = a * b
    assert calls == ["pack", "pack"]
    y.sum().backward()
    assert calls == ["pack", "pack", "unpack", "unpack"]
    np.testing.assert_array_equal(a.grad.numpy(), np.full(5, 2.0))


def test_backward_uses_what_unpack_returns():
    x = numdiff.randn(5, requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: t * 4, lambda t: t / 4):
        y = numdiff.pow(x, 2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)
    storage = []
    z = numdiff.randn(4, requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: storage.append(t) or len(storage) - 1, lambda i: storage[i]):
        w = (z * z).exp()  # an output saved (exp's result) goes through the hooks too
    w.sum().backward()
    expected = 2 * z.detach().numpy() * np.exp(z.detach().numpy() ** 2)
    np.testing.assert_allclose(z.grad.numpy(), expected, rtol=1e-5)
    assert len(storage) == 3


def test_custom_function_saves_go_through_the_hooks():
    class Square(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    packed = []
    x = numdiff.randn(3, requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        Square.apply(x).sum().backward()
    assert len(packed) == 1
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_save_on_cpu_gives_the_same_gradients():
    numdiff.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
    x = numdiff.randn(3, 4)
    model(x).sum().backward()
    expected = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    with graph.save_on_cpu(pin_memory=True):
        out = model(x)
    out.sum().backward()
    for p, g in zip(model.parameters(), expected):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-6)


def test_an_unpack_hook_must_return_a_tensor_and_hooks_can_be_disabled():
    x = numdiff.randn(3, requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        y = x * x
    with pytest.raises(TypeError, match="unpack hook .* returned a str .* must return a tensor"):
        y.sum().backward()
    with graph.disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="no hooks in here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with pytest.raises(TypeError, match="two callables"):
        graph.saved_tensors_hooks(1, lambda t: t)


def test_data_parallel_without_a_gpu_is_the_module():
    numdiff.manual_seed(0)
    inner = nn.Linear(4, 2)
    net = nn.DataParallel(inner)
    x = numdiff.randn(8, 4)
    np.testing.assert_array_equal(net(x).detach().numpy(), inner(x).detach().numpy())
    assert list(net.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(TypeError, match="wraps an nn.Module"):
        nn.DataParallel(lambda t: t)
