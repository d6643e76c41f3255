"""Errors that teach: each mistake raises the built-in exception users already catch, says what was
wrong with the values involved, and what to do instead. One test per behaviour."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import numdiff
from numdiff.autograd import Function, SavedTensorFreedError, SavedTensorModifiedError
from numdiff.tensor import NonLeafRequiresGradError


@pytest.fixture
def w():
    return numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)


# ----------------------------------------------------------------------------- the leaf contract
def _assert_teaches_leaf_rule(message: str, op: str) -> None:
    assert op in message
    assert "retain_grad()" in message
    assert "detach().requires_grad_()" in message


def test_requires_grad_on_non_leaf_names_the_op(w):
    h = w * 2
    with pytest.raises(RuntimeError) as info:
        h.requires_grad_(True)
    _assert_teaches_leaf_rule(str(info.value), "MulBackward")


def test_requires_grad_false_on_non_leaf_names_the_op(w):
    h = w.exp()
    with pytest.raises(RuntimeError) as info:
        h.requires_grad_(False)
    _assert_teaches_leaf_rule(str(info.value), "ExpBackward")


def test_requires_grad_assignment_on_non_leaf_names_the_op(w):
    h = w + 1
    with pytest.raises(RuntimeError) as info:
        h.requires_grad = False
    _assert_teaches_leaf_rule(str(info.value), "AddBackward")


def test_refused_requires_grad_switch_leaves_the_non_leaf_unchanged(w):
    h = w * 2
    node = h.grad_fn
    with pytest.raises(RuntimeError):
        h.requires_grad_(False)
    assert h.requires_grad and h.grad_fn is node
    h.sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_requires_grad_switch_on_a_leaf_is_allowed_both_ways():
    x = numdiff.ones(2)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad and x.is_leaf


def test_grad_of_non_leaf_warns_and_names_the_op(w):
    h = w.sin()
    h.sum().backward()
    with pytest.warns(UserWarning, match="not a leaf Tensor") as caught:
        assert h.grad is None
    assert "SinBackward" in str(caught[0].message)
    assert "retain_grad()" in str(caught[0].message)


def test_grad_of_leaf_or_retained_non_leaf_does_not_warn(w):
    h = w * 3
    h.retain_grad()
    h.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert w.grad is not None and h.grad is not None


def test_requires_grad_on_integer_tensor_names_the_dtype():
    x = numdiff.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match=r"only floating point.*int64.*float\(\)"):
        x.requires_grad_()


def test_creating_an_integer_tensor_that_requires_grad_is_refused():
    with pytest.raises(RuntimeError, match="floating point"):
        numdiff.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="bool"):
        numdiff.tensor([True, False], requires_grad=True)


def test_inplace_on_leaf_requiring_grad_names_the_op_and_suggests_no_grad(w):
    with pytest.raises(RuntimeError) as info:
        w.add_(1)
    message = str(info.value)
    assert "add_" in message and "leaf" in message and "no_grad()" in message
    assert w.tolist() == [1.0, 2.0, 3.0] and w._version == 0


def test_inplace_on_leaf_requiring_grad_is_allowed_under_no_grad(w):
    with numdiff.no_grad():
        w.mul_(2)
    assert w.tolist() == [2.0, 4.0, 6.0] and w.is_leaf and w.requires_grad


def test_setitem_on_leaf_requiring_grad_is_refused(w):
    with pytest.raises(RuntimeError, match="__setitem__"):
        w[0] = 5.0


# ----------------------------------------------------------------------------- backward misuse
def test_backward_on_non_scalar_without_gradient_names_the_shape(w):
    out = (w * 2).reshape(3, 1)
    with pytest.raises(RuntimeError, match=r"scalar outputs.*\(3, 1\).*gradient="):
        out.backward()


def test_backward_with_gradient_of_wrong_shape_names_both_shapes(w):
    with pytest.raises(RuntimeError, match=r"\(2,\).*\(3,\)"):
        (w * 2).backward(numdiff.ones(2))


def test_backward_on_tensor_that_does_not_require_grad_explains(w):
    x = numdiff.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad.*requires_grad=True"):
        (x * 2).sum().backward()


def test_backward_on_result_computed_under_no_grad_mentions_no_grad(w):
    with numdiff.no_grad():
        out = (w * 2).sum()
    with pytest.raises(RuntimeError, match="no_grad"):
        out.backward()


def test_second_backward_through_freed_saved_tensors_mentions_retain_graph(w):
    loss = (w * w).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=r"MulBackward.*second time.*retain_graph=True") as info:
        loss.backward()
    assert isinstance(info.value, SavedTensorFreedError)


def test_second_backward_with_retain_graph_accumulates(w):
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), 4 * w.detach().numpy())


def test_autograd_grad_of_unused_input_mentions_allow_unused(w):
    unused = numdiff.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        numdiff.autograd.grad((w * 2).sum(), [w, unused])


def test_numpy_of_tensor_requiring_grad_suggests_detach(w):
    with pytest.raises(RuntimeError, match=r"detach\(\)\.numpy\(\)"):
        w.numpy()


def test_item_of_many_elements_names_the_count(w):
    with pytest.raises(RuntimeError, match="3 elements"):
        w.item()


def test_assigned_grad_of_wrong_shape_names_both_shapes(w):
    with pytest.raises(RuntimeError, match=r"\(2,\).*\(3,\)"):
        w.grad = numdiff.zeros(2)


def test_register_hook_on_tensor_without_grad_is_refused():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        numdiff.ones(2).register_hook(lambda g: g)


# ----------------------------------------------------------------------------- in-place vs saved tensors
def test_inplace_modification_of_saved_input_detected_at_backward(w):
    h = w * 2
    out = h.sin()  # saves h
    h.add_(1)
    with pytest.raises(RuntimeError) as info:
        out.sum().backward()
    assert isinstance(info.value, SavedTensorModifiedError)
    message = str(info.value)
    assert "(3,)" in message and "SinBackward" in message
    assert re.search(r"version 0\b.*version 1\b", message), message


def test_inplace_modification_of_saved_output_detected_at_backward(w):
    h = w.exp()  # saves its own output
    loss = h.sum()
    with numdiff.no_grad():
        h.mul_(2)
        h.mul_(2)
    with pytest.raises(SavedTensorModifiedError, match=r"\(3,\).*ExpBackward.*version 0\b.*version 2\b"):
        loss.backward()


def test_inplace_modification_through_a_view_is_detected(w):
    h = w * 1
    out = h.exp() * h  # mul saves h
    view = h[1:]
    with numdiff.no_grad():
        view.zero_()
    with pytest.raises(SavedTensorModifiedError, match=r"\(3,\).*MulBackward"):
        out.sum().backward()


def test_inplace_on_unsaved_tensor_is_not_an_error(w):
    h = w * 2
    out = h + 1  # add saves nothing
    h.mul_(3)
    out.sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


# ----------------------------------------------------------------------------- shape errors
def test_broadcast_mismatch_names_both_shapes():
    a, b = numdiff.ones(2, 3), numdiff.ones(4)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4,\)"):
        a + b


def test_reshape_mismatch_names_the_shape_and_the_size():
    with pytest.raises(ValueError, match=r"\[4, 2\].*6.*\(2, 3\)"):
        numdiff.ones(2, 3).reshape(4, 2)


def test_cat_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"dimension 1.*\(2, 3\).*\(3, 3\)"):
        numdiff.cat([numdiff.ones(2, 3), numdiff.ones(3, 3)], dim=1)


def test_index_out_of_range_names_the_index_and_the_shape():
    with pytest.raises(IndexError, match=r"5.*\(2, 3\)"):
        numdiff.ones(2, 3)[:, 5]


def test_bool_mask_of_wrong_shape_names_both_shapes():
    mask = numdiff.tensor([True, False, True])
    with pytest.raises(IndexError, match=r"\(3,\).*\(2, 3\)"):
        numdiff.ones(2, 3)[mask]


def test_gather_index_out_of_range_names_the_valid_range():
    index = numdiff.tensor([[0, 3]])
    with pytest.raises(IndexError, match=r"\[0, 2\).*\(1, 2\)"):
        numdiff.gather(numdiff.ones(1, 2), 1, index)


def test_dim_out_of_range_names_the_valid_range():
    with pytest.raises(IndexError, match=r"dimension 2.*\[-2, 1\]"):
        numdiff.ones(2, 3).sum(2)


def test_setitem_value_of_wrong_shape_names_both_shapes():
    x = numdiff.zeros(2, 3)
    with pytest.raises(ValueError, match=r"\(2,\).*\(2, 3\)"):
        x[:] = numdiff.ones(2)


def test_function_backward_returning_too_few_gradients_names_the_function():
    class TwoInputs(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, grad):
            return grad

    a = numdiff.ones(2, requires_grad=True)
    b = numdiff.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"TwoInputsBackward.*1 gradients.*2 inputs"):
        TwoInputs.apply(a, b).sum().backward()


def test_rewrapping_a_tensor_with_tensor_warns_and_suggests_detach_clone(w):
    h = w * 2
    with pytest.warns(UserWarning, match=r"detach\(\)\.clone\(\)") as caught:
        copy = numdiff.tensor(h)
    assert copy.is_leaf and not copy.requires_grad and copy.tolist() == [2.0, 4.0, 6.0]
    assert caught[0].filename == __file__, "the warning points at the user's line"


def test_tensor_from_python_data_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        numdiff.tensor([[1.0, 2.0]])
        numdiff.tensor(np.ones(2))


def test_requires_grad_true_on_a_non_leaf_says_numdiff_is_stricter_than_pytorch():
    h = numdiff.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(NonLeafRequiresGradError, match="deliberately stricter than PyTorch"):
        h.requires_grad_(True)
    with pytest.raises(NonLeafRequiresGradError) as caught:
        h.requires_grad_(False)  # PyTorch refuses this one too: no such remark
    assert "stricter" not in str(caught.value)
