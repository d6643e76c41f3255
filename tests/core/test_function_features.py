"""PyTorch's custom Function features, each run on torch and on numdiff with the same code:
several outputs, non-tensor outputs, mark_non_differentiable, set_materialize_grads,
needs_input_grad, trailing Nones from backward, once_differentiable."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd.custom_function import CustomFunctionError

torch = pytest.importorskip("torch")

LIBS = [torch, numdiff]


def _once_differentiable(lib):
    return lib.autograd.function.once_differentiable


def _split(lib, materialize=True, record=None):
    class Split(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.set_materialize_grads(materialize)
            ctx.save_for_backward(x)
            ctx.scale = scale
            positive = x > 0
            ctx.mark_non_differentiable(positive)
            return x * scale, x.exp(), positive, "label"

        @staticmethod
        def backward(ctx, grad_scaled, grad_exp, grad_positive, grad_label):
            if record is not None:
                record.append((grad_scaled is None, grad_exp is None, tuple(ctx.needs_input_grad)))
            (x,) = ctx.saved_tensors
            total = None
            if grad_scaled is not None:
                total = grad_scaled * ctx.scale
            if grad_exp is not None:
                total = grad_exp * x.exp() if total is None else total + grad_exp * x.exp()
            return total, None

    return Split


def _x(lib):
    return lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)


def test_several_outputs_each_carry_their_gradient():
    results = []
    for lib in LIBS:
        x = _x(lib)
        scaled, exp, positive, label = _split(lib).apply(x, 3.0)
        (scaled.sum() + (exp * exp).sum()).backward()
        results.append((x.grad.tolist(), positive.requires_grad, label, scaled.grad_fn.name()))
    assert results[0][1:] == results[1][1:]
    np.testing.assert_allclose(results[1][0], results[0][0])


@pytest.mark.parametrize("materialize", [True, False])
def test_an_output_without_gradient_is_zeros_or_none_as_set_materialize_grads_says(materialize):
    seen = {}
    for lib in LIBS:
        record = []
        x = _x(lib)
        scaled, exp, _, _ = _split(lib, materialize, record).apply(x, 3.0)
        exp.sum().backward()
        seen[lib.__name__] = (record, x.grad.tolist())
    assert seen["torch"][0] == seen["numdiff"][0]
    np.testing.assert_allclose(seen["numdiff"][1], seen["torch"][1])


def _argmax_too(lib, received):
    class ArgmaxToo(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            index = x.argmax()
            ctx.mark_non_differentiable(index)
            return x * 2, index

        @staticmethod
        def backward(ctx, grad, grad_index):
            received.append((grad_index.tolist(), str(grad_index.dtype).split(".")[-1]))
            return grad * 2

    return ArgmaxToo


@pytest.mark.parametrize("lib", LIBS, ids=["torch", "numdiff"])
def test_a_non_differentiable_output_gets_zeros_of_its_own_dtype_in_backward(lib):
    # PyTorch materializes the gradient of an output marked non-differentiable too: an argmax
    # gets int64 zeros (numdiff passed None, so `grad_index.sum()` in a backward crashed).
    received = []
    x = _x(lib)
    doubled, _ = _argmax_too(lib, received).apply(x)
    doubled.sum().backward()
    assert received == [(0, "int64")] and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_needs_input_grad_follows_which_inputs_require_grad():
    seen = []
    for lib in LIBS:

        class Mul(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, k):
                ctx.save_for_backward(a, b)
                return a * b * k

            @staticmethod
            def backward(ctx, grad):
                seen.append(tuple(ctx.needs_input_grad))
                a, b = ctx.saved_tensors
                return grad * b if ctx.needs_input_grad[0] else None, grad * a if ctx.needs_input_grad[1] else None, None

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0])
        Mul.apply(a, b, 2).sum().backward()
        assert a.grad.tolist() == [3.0, 4.0]
    assert seen[0] == seen[1] == (True, False, False)


def test_backward_may_return_trailing_nones_for_extra_arguments():
    for lib in LIBS:

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor, name):
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.factor, None, None, None  # one None more than the arguments

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        Scale.apply(x, 3.0, "s").sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]


def test_backward_returning_a_gradient_for_a_non_tensor_argument_is_refused():
    class Scale(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor):
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(CustomFunctionError, match="gradient for argument 1, which was not a Tensor"):
        Scale.apply(x, 3.0).sum().backward()


def test_backward_returning_a_non_tensor_is_refused_naming_the_function():
    class Bad(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad.numpy()

    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(CustomFunctionError, match="Bad.backward returned a ndarray as the gradient of argument 0"):
        Bad.apply(x).sum().backward()


def test_forward_returning_a_list_is_refused_naming_tuple():
    class Listy(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 2, x * 3]

        @staticmethod
        def backward(ctx, a, b):
            return a

    with pytest.raises(CustomFunctionError, match="Listy.forward returned a list: return a tuple"):
        Listy.apply(numdiff.ones(2, requires_grad=True))


def _exp(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        @_once_differentiable(lib)
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    return Exp


def test_once_differentiable_backward_gives_the_first_derivative():
    grads = []
    for lib in LIBS:
        x = _x(lib)
        _exp(lib).apply(x).sum().backward()
        grads.append(x.grad.tolist())
    np.testing.assert_allclose(grads[1], grads[0])


def test_once_differentiable_result_refuses_a_second_derivative_like_torch():
    for lib in LIBS:
        x = _x(lib)
        # The gradient reaching Exp's backward (x) requires grad, so its result would need one.
        (g,) = lib.autograd.grad((_exp(lib).apply(x) * x).sum(), x, create_graph=True)
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="once_differentiable"):
            g.sum().backward()


def test_once_differentiable_without_create_graph_records_nothing():
    x = _x(numdiff)
    (g,) = numdiff.autograd.grad(_exp(numdiff).apply(x).sum(), x)
    assert not g.requires_grad


def test_several_outputs_save_an_output_for_backward():
    grads = []
    for lib in LIBS:

        class SinCos(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                s, c = x.sin(), x.cos()
                ctx.save_for_backward(s, c)
                return s, c

            @staticmethod
            def backward(ctx, gs, gc):
                s, c = ctx.saved_tensors
                return gs * c - gc * s

        x = _x(lib)
        s, c = SinCos.apply(x)
        (s * 2 + c * 3).sum().backward()
        grads.append(x.grad.tolist())
    np.testing.assert_allclose(grads[1], grads[0])


def test_hooks_and_retain_grad_on_one_of_several_outputs():
    results = []
    for lib in LIBS:
        x = _x(lib)
        scaled, exp, _, _ = _split(lib).apply(x, 3.0)
        scaled.register_hook(lambda g: g * 10)
        exp.retain_grad()
        (scaled.sum() + (exp * 2).sum()).backward()
        results.append((x.grad.tolist(), exp.grad.tolist()))
    np.testing.assert_allclose(results[1][0], results[0][0])
    assert results[1][1] == results[0][1]


def test_function_gradcheck_with_several_outputs():
    x = numdiff.tensor([0.3, -0.7], dtype=numdiff.float64, requires_grad=True)
    split = _split(numdiff)
    assert numdiff.autograd.gradcheck(lambda t: split.apply(t, 2.0)[:2], (x,))


def _functorch_style(lib, calls):
    class SinCos(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin(), x.cos()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_sin, grad_cos):
            (x,) = ctx.saved_tensors
            return grad_sin * x.cos() - grad_cos * x.sin()

    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None

        @staticmethod
        def vmap(info, in_dims, x, k):
            calls.append((info.batch_size, in_dims))
            return Scale.apply(x, k), in_dims[0]

    return SinCos, Scale


def _under_vmap(lib):
    calls = []
    sincos, scale = _functorch_style(lib, calls)
    xs = lib.tensor([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]], dtype=lib.float64, requires_grad=True)
    s, c = lib.func.vmap(sincos.apply)(xs)
    y = lib.func.vmap(scale.apply, in_dims=(0, None))(xs, 3.0)
    g = lib.func.vmap(lib.func.grad(lambda x: scale.apply(x, 2.0).sum() + sincos.apply(x)[0].sum()))(xs)
    (y.sum() + s.sum()).backward()
    return [t.detach().numpy() for t in (s, c, y, g, xs.grad)], calls


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_setup_context_style_functions_under_vmap_match_torch():
    # A forward without ctx (setup_context) was called with ctx; several outputs under vmap failed
    # in stack ('tuple' object has no attribute 'shape'); a vmap staticmethod was ignored.
    ours, our_calls = _under_vmap(numdiff)
    theirs, their_calls = _under_vmap(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert our_calls[0] == their_calls[0] == (2, (0, None))


def test_vmap_staticmethod_returning_a_bad_out_dim_is_refused_naming_the_function():
    class Bad(numdiff.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

        @staticmethod
        def vmap(info, in_dims, x):
            return Bad.apply(x).sum(0), 0

    with pytest.raises(ValueError, match="Bad.vmap: out_dim 0 is not a dimension of size 4"):
        numdiff.func.vmap(Bad.apply)(numdiff.ones(4, 3))


def test_an_input_saved_and_returned_as_is_is_saved_as_the_input_for_double_backward():
    results = []
    for lib in LIBS:

        class Identity(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * x

        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad((Identity.apply(x) * 3).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        results.append((g.tolist(), gg.tolist()))
    assert results[0] == results[1]
