"""User-defined ops: autograd.Function with forward/backward, save_for_backward,
needs_input_grad and apply, checked with gradcheck like the built-ins."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import Function, GradcheckError, gradcheck, gradgradcheck


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


class ScaledProduct(Function):
    """a * b * scale, with a plain (non-tensor) argument and needs_input_grad bookkeeping."""

    calls: list = []

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        return a * b * scale

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ScaledProduct.calls.append(ctx.needs_input_grad)
        grad_a = grad * b * ctx.scale if ctx.needs_input_grad[0] else None
        grad_b = grad * a * ctx.scale if ctx.needs_input_grad[1] else None
        return grad_a, grad_b, None


class WrongCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x * x


def _leaf(*shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape)
    return numdiff.tensor(data, requires_grad=True)


def test_function_apply_records_a_node_named_after_the_class():
    x = _leaf(3)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward" and not y.is_leaf
    np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy() ** 3)


def test_function_backward_gives_the_gradient():
    x = _leaf(3)
    Cube.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.detach().numpy() ** 2)


def test_function_passes_gradcheck_and_gradgradcheck():
    x = _leaf(2, 2)
    assert gradcheck(Cube.apply, (x,))
    assert gradgradcheck(Cube.apply, (x,))


def test_gradcheck_catches_a_wrong_backward():
    x = _leaf(3)
    with pytest.raises(GradcheckError, match="input 0"):
        gradcheck(WrongCube.apply, (x,))
    assert gradcheck(WrongCube.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_catches_a_backward_that_is_not_differentiable():
    class DetachedCube(Cube):
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * (x * x).detach()

    x = _leaf(3)
    assert gradcheck(DetachedCube.apply, (x,))
    with pytest.raises(GradcheckError):
        gradgradcheck(DetachedCube.apply, (x,))


def test_needs_input_grad_reflects_which_inputs_require_grad():
    ScaledProduct.calls.clear()
    a = _leaf(2)
    b = numdiff.tensor([3.0, 4.0], dtype=numdiff.float64)
    ScaledProduct.apply(a, b, 2.0).sum().backward()
    assert ScaledProduct.calls == [(True, False, False)]
    assert b.grad is None
    np.testing.assert_allclose(a.grad.numpy(), [6.0, 8.0])


def test_function_with_non_tensor_argument_passes_gradcheck():
    a, b = _leaf(3, seed=1), _leaf(3, seed=2)
    assert gradcheck(lambda a, b: ScaledProduct.apply(a, b, 0.5), (a, b))


def test_function_without_inputs_requiring_grad_records_nothing():
    x = numdiff.tensor([1.0, 2.0])
    y = Cube.apply(x)
    assert y.grad_fn is None and not y.requires_grad


def test_function_under_no_grad_records_nothing():
    x = _leaf(2)
    with numdiff.no_grad():
        y = Cube.apply(x)
    assert y.grad_fn is None


def test_function_forward_runs_with_grad_mode_off():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(numdiff.is_grad_enabled())
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    Probe.apply(_leaf(2)).sum().backward()
    assert seen == [False]


def test_function_composes_with_builtin_ops_in_one_graph():
    x = _leaf(3)
    y = (Cube.apply(x.sin()) + x).sum()
    y.backward()
    s = np.sin(x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), 3 * s**2 * np.cos(x.detach().numpy()) + 1, rtol=1e-12)


def test_saved_tensors_of_a_function_are_checked_for_inplace_changes():
    x = _leaf(3)
    h = x * 1
    y = Cube.apply(h)
    h.mul_(2)
    with pytest.raises(RuntimeError, match=r"CubeBackward.*version 0.*version 1"):
        y.sum().backward()


def test_saved_arrays_are_the_saved_values_checked_like_saved_tensors():
    x = _leaf(3)
    h = x * 1
    y = h.exp()  # saves its output
    node = y.grad_fn
    (saved,) = node.saved_arrays()
    assert saved is y._data
    z = h * 3.0  # saves the number 3.0, and no h: only the number's gradient would read it
    assert [None if a is None else a.tolist() for a in z.grad_fn.saved_arrays()] == [None, 3.0]
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"ExpBackward.*version 0.*version 1"):
        node.saved_arrays()
    z.sum().backward()
    with pytest.raises(RuntimeError, match=r"MulBackward.*second time"):
        z.grad_fn.saved_arrays()


def test_function_with_two_outputs_of_backward_for_one_input_is_refused():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(RuntimeError, match="TooManyBackward.*2 gradients.*1 inputs"):
        TooMany.apply(_leaf(2)).sum().backward()


def test_variable_is_pytorchs_pre_0_4_wrapper():
    from numdiff.autograd import Variable

    x = numdiff.ones(2)
    v = Variable(x, requires_grad=True)
    assert v.is_leaf and v.requires_grad and isinstance(x, Variable) and not isinstance(x.numpy(), Variable)
    v.data.add_(1.0)
    assert x.tolist() == [2.0, 2.0]  # shares x's memory
    y = numdiff.ones(2, requires_grad=True) * 2
    alias = Variable(y)
    assert alias.grad_fn is None and not alias.requires_grad
    with pytest.raises(TypeError, match="Variable: data must be a Tensor, got list"):
        Variable([1.0])


@pytest.mark.parametrize("requires_grad", [True, False])
def test_function_whose_forward_returns_several_outputs_gives_a_tuple_of_tensors(requires_grad):
    # The tuple used to become the tensor's data (AttributeError "'tuple' object has no attribute
    # 'dtype'"), then was refused; PyTorch returns one tensor per output.
    class TwoOutputs(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, first, second):
            return first * 2 + second * 3

    x = numdiff.ones(2, requires_grad=requires_grad)
    first, second = TwoOutputs.apply(x)
    assert first.tolist() == [2.0, 2.0] and second.tolist() == [3.0, 3.0]
    assert first.requires_grad is requires_grad and second.requires_grad is requires_grad
    if requires_grad:
        (first.sum() + 10 * second.sum()).backward()
        assert x.grad.tolist() == [32.0, 32.0]
