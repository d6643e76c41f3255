"""A grad_fn's saved tensors one by one: ``_raw_saved_<name>.register_hooks``, ``_saved_<attr>``,
``_raw_saved_tensors`` of a user Function, and dir() listing them (what graph walkers such as
torchviz's make_dot(show_saved=True) read), as in PyTorch's autograd_saved_tensors_hooks tutorial."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff


def test_register_hooks_packs_at_once_and_unpacks_for_backward_and_for_reads():
    calls = []
    x = numdiff.tensor([1.0, -2.0, 3.0], dtype=numdiff.float64, requires_grad=True)
    y = x.pow(2)

    def pack(t):
        calls.append("pack")
        return t.detach().numpy().copy()

    def unpack(array):
        calls.append("unpack")
        return numdiff.from_numpy(array)

    y.grad_fn._raw_saved_self.register_hooks(pack, unpack)
    assert calls == ["pack"]
    np.testing.assert_array_equal(y.grad_fn._saved_self.numpy(), x.detach().numpy())
    assert calls == ["pack", "unpack"]
    y.sum().backward()
    assert calls == ["pack", "unpack", "unpack"]
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_the_hooks_change_what_backward_sees_as_pytorchs_do():
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x * x
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t * 10, lambda t: t)
        y.sum().backward()
        return x.grad.numpy()

    np.testing.assert_allclose(run(numdiff), run(torch))


def test_dir_lists_the_saved_names_and_the_op_arguments():
    x = numdiff.randn(3, 4, requires_grad=True)
    y = x * x.exp()
    names = dir(y.grad_fn)
    assert {"_saved_self", "_saved_other", "_raw_saved_self", "_raw_saved_other"} <= set(names)
    s = x.sum(dim=0, keepdim=True)
    assert s.grad_fn._saved_keepdim is True
    assert "_saved_keepdim" in dir(s.grad_fn)


def test_a_user_function_node_gives_raw_saved_tensors():
    class Square(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * grad * x

    x = numdiff.tensor([3.0], dtype=numdiff.float64, requires_grad=True)
    out = Square.apply(x)
    (raw,) = out.grad_fn._raw_saved_tensors
    raw.register_hooks(lambda t: t + 1, lambda t: t)
    out.backward()
    assert x.grad.item() == 8.0


def test_register_hooks_refuses_bad_hooks_a_second_pair_and_freed_tensors():
    x = numdiff.randn(3, requires_grad=True)
    y = x * x
    with pytest.raises(TypeError, match="pack_hook must be callable"):
        y.grad_fn._raw_saved_self.register_hooks(3, lambda t: t)
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match="already has hooks"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    z = x.exp()
    raw = z.grad_fn._raw_saved_result
    z.sum().backward()
    with pytest.raises(RuntimeError, match="freed by a backward"):
        raw.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(AttributeError, match="_raw_saved_nothing"):
        _ = y.grad_fn._raw_saved_nothing
