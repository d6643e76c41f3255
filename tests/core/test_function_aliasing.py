"""The leaf contract through a custom Function whose outputs alias its inputs (or each other).

Each case is run on torch and on numdiff: where torch refuses the in-place op on the output,
numdiff refuses it too, and the leaf keeps its value. numdiff is stricter in one place, where
torch silently writes into a leaf that requires grad: an output made without recording (under
no_grad, or with `detach()` inside forward) that shares the leaf's memory is a view made under
no_grad, and modifying it in place with grad mode on is refused as for any such view.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd.custom_function import CustomFunctionError
from numdiff.tensor import InPlaceOnLeafError

torch = pytest.importorskip("torch")


def _make(lib, forward):
    class Aliasing(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return forward(ctx, x)

        @staticmethod
        def backward(ctx, *grads):
            return grads[0] if tuple(grads[0].shape) == (3, 4) else None

    return Aliasing


CASES = {
    "identity": lambda ctx, x: x,
    "view": lambda ctx, x: x.view(3, 4),
    "slice": lambda ctx, x: x[1:],
    "reshape": lambda ctx, x: x.reshape(12),
    "transpose": lambda ctx, x: x.t(),
    "expand": lambda ctx, x: x[None].expand(2, 3, 4),
    "same_tensor_twice": lambda ctx, x: (x, x),
    "view_and_input": lambda ctx, x: (x[0], x),
}


def _run(lib, forward, leaf, no_grad, output):
    x0 = lib.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    x = x0 if leaf else x0 * 1
    function = _make(lib, forward)
    if no_grad:
        with lib.no_grad():
            out = function.apply(x)
    else:
        out = function.apply(x)
    out = out[output] if isinstance(out, tuple) else out
    try:
        out.mul_(2)
    except RuntimeError as error:
        return error, x0
    return None, x0


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non_leaf"])
@pytest.mark.parametrize("output", [0, 1])
def test_inplace_on_an_output_aliasing_an_input_is_refused_as_torch_refuses_it(name, leaf, output):
    forward = CASES[name]
    if output == 1 and not name.endswith(("twice", "input")):
        pytest.skip("one output")
    torch_error, _ = _run(torch, forward, leaf, False, output)
    error, x0 = _run(numdiff, forward, leaf, False, output)
    assert torch_error is not None
    assert error is not None, f"{name}: the in-place op on the output was accepted"
    assert "custom Function Aliasing" in str(error) and "clone()" in str(error)
    assert x0.tolist() == np.arange(12.0).reshape(3, 4).tolist()


@pytest.mark.parametrize("name", ["view", "slice", "reshape", "transpose", "expand"])
def test_output_viewing_an_input_under_no_grad_is_refused_later_as_torch_does(name):
    torch_error, _ = _run(torch, CASES[name], True, True, 0)
    error, x0 = _run(numdiff, CASES[name], True, True, 0)
    assert torch_error is not None and error is not None
    assert "no_grad" in str(error)
    assert x0.tolist() == np.arange(12.0).reshape(3, 4).tolist()


@pytest.mark.parametrize("forward", [lambda ctx, x: x, lambda ctx, x: x.detach()], ids=["identity", "detach"])
def test_output_sharing_a_leafs_memory_without_recording_cannot_write_into_the_leaf(forward):
    # torch writes into the leaf here without a word; numdiff refuses it as a no_grad view.
    error, x0 = _run(numdiff, forward, True, True, 0)
    assert error is not None
    assert x0.tolist() == np.arange(12.0).reshape(3, 4).tolist()


def test_output_aliasing_an_input_shares_its_version_counter():
    # A saved input changed through the Function's output is detected at backward.
    class Identity(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    w = numdiff.ones(3, requires_grad=True)
    x = w * 1
    y = x * x  # saves x
    out = Identity.apply(x)
    assert out._base is x and out._version == x._version
    with numdiff.no_grad():
        out.mul_(2)
    assert x._version == 1 and x.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_outputs_aliasing_each_other_refuse_inplace_on_the_view_like_torch():
    def forward(ctx, x):
        y = x * 2
        return y, y.view(12)

    for lib in (torch, numdiff):
        x = lib.ones(3, 4, requires_grad=True)
        first, second = _make(lib, forward).apply(x)
        first.add_(1)  # the first output owns its memory: fine in both
        with pytest.raises(RuntimeError):
            second.add_(1)


def test_gradient_flows_through_an_output_that_is_the_input():
    results = []
    for lib in (torch, numdiff):
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grad):
                return 2 * grad

        (Twice.apply(x) * 3).sum().backward()
        results.append(x.grad.tolist())
    assert results[0] == results[1] == [6.0, 6.0]


# mark_dirty


class AddOneInPlace:
    @staticmethod
    def make(lib, mark=True):
        class AddOne(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                if mark:
                    ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad * 5

        return AddOne


def test_mark_dirty_on_a_leaf_that_requires_grad_is_refused_and_names_the_function():
    x = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        AddOneInPlace.make(torch).apply(x)
    x = numdiff.zeros(3, requires_grad=True)
    with pytest.raises(InPlaceOnLeafError, match="AddOne.forward modified argument 0 in place, a leaf"):
        AddOneInPlace.make(numdiff).apply(x)


def test_inplace_on_a_leaf_inside_forward_without_mark_dirty_is_refused():
    # torch lets this change the leaf silently; it breaks the leaf contract, so numdiff refuses it.
    x = numdiff.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="AddOne.forward modified argument 0 in place, a leaf"):
        AddOneInPlace.make(numdiff, mark=False).apply(x)


def test_mark_dirty_on_a_non_leaf_rebases_it_onto_the_function_as_torch_does():
    grads = []
    for lib in (torch, numdiff):
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = w * 2
        out = AddOneInPlace.make(lib).apply(x)
        assert out is x
        assert x.grad_fn.name() == "AddOneBackward"
        assert x.tolist() == [3.0, 5.0, 7.0]
        (x * x).sum().backward()
        grads.append(w.grad.tolist())
    assert grads[0] == grads[1]


def test_modified_non_leaf_input_not_marked_dirty_is_refused_naming_mark_dirty():
    w = numdiff.ones(3, requires_grad=True)
    with pytest.raises(CustomFunctionError, match="without ctx.mark_dirty"):
        AddOneInPlace.make(numdiff, mark=False).apply(w * 1)


def test_input_marked_dirty_but_not_returned_is_refused():
    class Forgets(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad

    w = numdiff.ones(3, requires_grad=True)
    with pytest.raises(CustomFunctionError, match="marked argument 0 dirty .* did not return it"):
        Forgets.apply(w * 1)


def test_mark_dirty_under_no_grad_leaves_the_leaf_rule_to_the_inplace_ops():
    x = numdiff.zeros(3, requires_grad=True)
    with numdiff.no_grad():
        out = AddOneInPlace.make(numdiff).apply(x)
    assert out is x and x.tolist() == [1.0, 1.0, 1.0] and x.grad_fn is None


def _returns(lib, forward):
    class Returns(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return forward(x)

        @staticmethod
        def backward(ctx, grad):
            return None

    return Returns


@pytest.mark.parametrize("what", ["view_of_captured", "captured_itself", "view_of_intermediate"])
def test_output_that_is_a_captured_tensor_or_a_view_made_in_forward_refuses_inplace(what):
    # These wrapped the memory in a new tensor: mul_ on the output changed the captured leaf w.
    for lib in (torch, numdiff):
        w = lib.ones(3, requires_grad=True)
        forward = {
            "view_of_captured": lambda x, w=w: w[:2],
            "captured_itself": lambda x, w=w: w,
            "view_of_intermediate": lambda x: (x * 2)[:2],
        }[what]
        out = _returns(lib, forward).apply(lib.ones(3, requires_grad=True))
        if lib is torch and what == "captured_itself":
            continue  # torch writes into the leaf w here without a word
        with pytest.raises(RuntimeError):
            out.mul_(2)
        assert w.tolist() == [1.0, 1.0, 1.0]
