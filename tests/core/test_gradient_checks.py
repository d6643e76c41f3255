"""The engine refuses gradients of the wrong shape, dtype or type from hooks, and casts a
`backward(gradient)` of another dtype to the output's, as PyTorch 2.13 does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff as nd


def _leaf(dtype=nd.float32):
    return nd.ones(3, dtype=dtype, requires_grad=True)


def test_leaf_hook_changing_the_shape_raises_naming_the_hook_and_shapes():
    a = _leaf()

    def first_two(g):
        return g[:2]

    a.register_hook(first_two)
    with pytest.raises(RuntimeError, match=r"first_two.*shape.*\(3,\).*\(2,\)"):
        (a * 3).sum().backward()
    assert a.grad is None


def test_non_leaf_hook_changing_the_shape_raises():
    a = _leaf()
    b = a * 2
    b.register_hook(lambda g: g[:2])
    with pytest.raises(RuntimeError, match=r"<lambda>.*changed the shape"):
        b.sum().backward()


def test_hook_changing_the_dtype_raises_naming_both_dtypes():
    a = _leaf()
    a.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match=r"dtype.*float32.*float64"):
        (a * 3).sum().backward()
    assert a.grad is None
    t = torch.ones(3, requires_grad=True)
    t.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="changed the type"):
        (t * 3).sum().backward()


@pytest.mark.parametrize("value", [1.0, np.ones(3)], ids=["float", "ndarray"])
def test_hook_returning_a_non_tensor_is_a_type_error_naming_the_hook_and_value(value):
    a = _leaf(nd.float64)

    def scale_hook(g):
        return value

    a.register_hook(scale_hook)
    with pytest.raises(TypeError, match=rf"scale_hook.*{type(value).__name__}"):
        (a * 3).sum().backward()


def test_backward_gradient_of_another_dtype_is_cast_to_the_output_dtype():
    a = nd.ones(2, requires_grad=True)
    (a * 3).backward(nd.ones(2, dtype=nd.float64))
    t = torch.ones(2, requires_grad=True)
    (t * 3).backward(torch.ones(2, dtype=torch.float64))
    assert a.grad.dtype is nd.float32 and t.grad.dtype is torch.float32
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())
    opt = nd.optim.SGD([a], lr=0.1)
    opt.step()  # raised TypeError when .grad was float64
    np.testing.assert_allclose(a.detach().numpy(), [0.7, 0.7], rtol=1e-6)


def test_autograd_grad_output_of_another_dtype_is_cast():
    a = nd.ones(2, requires_grad=True)
    (g,) = nd.autograd.grad(a * 3, a, nd.ones(2, dtype=nd.float64))
    assert g.dtype is nd.float32


def test_custom_function_returning_another_dtype_leaves_grad_in_the_leaf_dtype():
    class Double(nd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return (grad * 2).double()

    a = nd.ones(2, requires_grad=True)
    Double.apply(a).sum().backward()
    assert a.grad.dtype is nd.float32
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])
