"""Tensor.new_zeros/new_ones/new_empty/new_full/new_tensor, Tensor.narrow and Tensor.flip's forms, against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name, args", [("new_zeros", (2, 3)), ("new_zeros", ((2, 3),)), ("new_ones", (4,)), ("new_full", ((2, 2), 1.5))])
def test_new_factories_take_dtype_and_device_from_self(name, args):
    ours = getattr(numdiff.zeros(1, dtype=numdiff.float64), name)(*args)
    theirs = getattr(torch.zeros(1, dtype=torch.float64), name)(*args)
    assert ours.dtype is numdiff.float64 and ours.is_leaf and not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_new_factories_accept_overrides():
    base = numdiff.zeros(1)
    assert base.new_empty(3, dtype=numdiff.int64).dtype is numdiff.int64
    assert base.new_zeros(2, requires_grad=True).requires_grad
    copied = base.new_tensor([1, 2])
    assert copied.dtype is numdiff.float32 and copied.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dim, start, length", [(0, 1, 2), (1, -3, 2), (-1, 0, 4), (0, 3, 0)])
def test_narrow_matches_torch_and_passes_gradient(dim, start, length):
    values = np.arange(12.0).reshape(3, 4)
    ours = numdiff.tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    out, out_t = ours.narrow(dim, start, length), theirs.narrow(dim, start, length)
    np.testing.assert_array_equal(out.detach().numpy(), out_t.detach().numpy())
    out.sum().backward()
    out_t.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_narrow_refuses_out_of_range():
    x = numdiff.zeros(3, 4)
    with pytest.raises(ValueError, match=r"narrow: start \(2\) \+ length \(3\) exceeds the size 3 of dimension 0 \(shape \(3, 4\)\)"):
        x.narrow(0, 2, 3)
    with pytest.raises(IndexError, match="narrow: start 5 is out of range for dimension 1 of size 4"):
        x.narrow(1, 5, 1)


def test_layout_and_introspection_methods_answer_as_torch():
    torch = pytest.importorskip("torch")
    questions = [
        lambda t: t.stride(), lambda t: t.transpose(0, 2).stride(), lambda t: t.stride(1), lambda t: t[:, 1:].stride(),
        lambda t: t.nelement(), lambda t: t.nbytes, lambda t: t.itemsize, lambda t: t.ndimension(),
        lambda t: t.is_complex(), lambda t: t.is_cpu, lambda t: t.get_device(), lambda t: 5.0 in t, lambda t: 100.0 in t,
    ]  # fmt: skip
    x, tx = numdiff.arange(24.0).reshape(2, 3, 4), torch.arange(24.0).reshape(2, 3, 4)
    for number, question in enumerate(questions):
        assert question(x) == question(tx), number


def test_deepcopy_copies_a_leaf_with_its_grad_and_refuses_an_op_result():
    import copy

    a = numdiff.tensor([1.0, 2.0], requires_grad=True)
    (a * 3).sum().backward()
    c = copy.deepcopy(a)
    assert c.is_leaf and c.requires_grad and c is not a
    np.testing.assert_array_equal(c.grad.numpy(), [3.0, 3.0])
    c.detach().add_(1)  # its own storage: the original is untouched
    np.testing.assert_array_equal(a.detach().numpy(), [1.0, 2.0])
    pair = copy.deepcopy([a, a])
    assert pair[0] is pair[1]  # the memo keeps shared tensors shared
    with pytest.raises(RuntimeError, match=r"deepcopy: only leaf tensors .* produced by MulBackward"):
        copy.deepcopy(a * 2)


@pytest.mark.parametrize(
    "method, args, kwargs",
    [
        ("flip", (0, 2), {}),
        ("flip", (1,), {}),
        ("flip", ((0, 1),), {}),
        ("flip", (), {"dims": [2]}),
        ("flip", (-1, 0, 1), {}),
        ("squeeze", (0, 2), {}),
        ("squeeze", ((0, 2),), {}),
        ("squeeze", (), {"dim": 2}),
        ("squeeze", (), {}),
        ("tile", (2, 1, 1), {}),
        ("tile", (1, 2, 1, 2), {}),
        ("tile", (3,), {}),
        ("tile", (), {"dims": (2, 1)}),
    ],
)
def test_shape_methods_take_dims_one_by_one_like_torch(method, args, kwargs):
    array = np.arange(24.0).reshape((1, 2, 1, 12) if method == "squeeze" else (2, 3, 4))
    expected = getattr(torch.tensor(array), method)(*args, **kwargs)
    np.testing.assert_array_equal(getattr(numdiff.tensor(array), method)(*args, **kwargs).numpy(), expected.numpy())


def test_flip_method_with_dims_one_by_one_has_a_gradient_and_refuses_a_repeat():
    array = np.arange(24.0).reshape(2, 3, 4)
    x = numdiff.tensor(array, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: t.flip(0, 2), (x,))
    with pytest.raises(ValueError, match=r"flip: dim \(1, 1\) names a dimension more than once"):
        x.flip(1, 1)
