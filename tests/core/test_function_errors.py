"""Mistakes on the custom Function, hook and autograd.grad paths end in errors that name the
Function (or hook) and the fix, instead of leaking an internal exception or passing silently."""

from __future__ import annotations

import pytest

import numdiff
from numdiff.autograd import Function


def _x():
    return numdiff.ones(3, requires_grad=True)


def test_save_for_backward_of_a_non_tensor_names_the_function():
    # It was wrapped as a tensor's data and failed later, far away.
    class SaveList(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward([x])
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(TypeError, match="SaveList: save_for_backward can only save tensors .* argument 0 is a list"):
        SaveList.apply(_x())


def test_forward_that_is_not_a_staticmethod_is_refused_naming_it():
    class NotStatic(Function):
        def forward(self, ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(TypeError, match="NotStatic.forward must be a @staticmethod"):
        NotStatic.apply(_x())


def test_calling_a_function_instance_says_to_use_apply():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    with pytest.raises(TypeError, match=r"Double\(\) instances are not called.*Double.apply"):
        Double()(_x())


def test_reading_saved_tensors_inside_forward_is_refused_clearly():
    class Early(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * ctx.saved_tensors[0]

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(RuntimeError, match="Early.forward read ctx.saved_tensors"):
        Early.apply(_x())


@pytest.mark.parametrize("register", ["register_hook", "register_post_accumulate_grad_hook", "prehook", "non_leaf"])
def test_a_hook_that_cannot_be_called_is_refused_when_registered(register):
    x = _x()
    with pytest.raises(TypeError, match="the hook must be callable.*got int"):
        if register == "prehook":
            (x * 2).grad_fn.register_prehook(3)
        elif register == "non_leaf":
            (x * 2).register_hook(3)
        else:
            getattr(x, register)(3)
    (x * 2).sum().backward()  # nothing was registered
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("call", ["grad", "backward"])
def test_autograd_with_a_non_tensor_output_names_the_argument(call):
    x = _x()
    with pytest.raises(TypeError, match=f"{call}: .* must be Tensors .* item 0 is a float"):
        if call == "grad":
            numdiff.autograd.grad(3.0, x)
        else:
            numdiff.autograd.backward(3.0)


def test_gradcheck_of_a_function_returning_no_tensor_says_so():
    # It leaked NumPy's "need at least one array to concatenate".
    x = numdiff.ones(3, dtype=numdiff.float64, requires_grad=True)
    with pytest.raises(numdiff.autograd.GradcheckError, match="returned no floating-point tensor"):
        numdiff.autograd.gradcheck(lambda t: 3.0, (x,))


def test_gradcheck_without_an_input_that_requires_grad_is_refused_like_torch():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        numdiff.autograd.gradcheck(lambda t: t * 2, (numdiff.ones(3, dtype=numdiff.float64),))
