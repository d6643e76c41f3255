"""In-place ops: recorded on non-leaves (the tensor takes the new grad_fn), refused on leaves that
require grad while recording, version counters, and the optimizer update pattern."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff


def _leaf(values):
    return numdiff.tensor(values, dtype=numdiff.float64, requires_grad=True)


def _torch_leaf(torch, values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


SEQUENCES = {
    "add_": lambda h, x: h.add_(x),
    "iadd_isub_imul_idiv": lambda h, x: h.__iadd__(1).__isub__(x).__imul__(x).__itruediv__(2),
    "pow_": lambda h, x: h.pow_(3),
    "exp_": lambda h, x: h.exp_(),
    "sqrt_": lambda h, x: h.clamp_(min=0.5).sqrt_(),
    "clamp_": lambda h, x: h.clamp_(-1.0, 1.5),
    "relu_": lambda h, x: h.relu_(),
    "neg_div_": lambda h, x: h.neg_().div_(x),
    "setitem_slice": lambda h, x: h.__setitem__(slice(0, 2), x[1:] * 3) or h,
    "setitem_scalar": lambda h, x: h.__setitem__(1, 7.0) or h,
    "masked_fill_": lambda h, x: h.masked_fill_(x > 0, 0.5),
    "zero_then_add_": lambda h, x: h.zero_().add_(x * x),
    "copy_": lambda h, x: h.copy_(x.sin()),
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_inplace_on_non_leaf_backpropagates_like_torch(name):
    torch = pytest.importorskip("torch")
    values = [0.7, -1.3, 2.1]
    run = SEQUENCES[name]
    x, tx = _leaf(values), _torch_leaf(torch, values)
    h, th = x * 2, tx * 2
    out = run(h, x)
    run(th, tx)
    assert out is h, "an in-place op returns the tensor it modified"
    assert h._version >= 1
    np.testing.assert_allclose(h.detach().numpy(), th.detach().numpy(), rtol=1e-12)
    (h * h).sum().backward()
    (th * th).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_inplace_multiply_by_itself_differentiates_the_old_value():
    # PyTorch refuses this (mul saved the tensor it then overwrote); numdiff saves a snapshot.
    x = _leaf([1.0, -2.0])
    h = x * 2
    h.mul_(h)
    h.sum().backward()
    assert h.tolist() == [4.0, 16.0]
    assert x.grad.tolist() == [8.0, -16.0]


def test_inplace_on_non_leaf_takes_over_the_new_grad_fn():
    x = _leaf([1.0, 2.0])
    h = x * 2
    h.add_(1)
    assert h.grad_fn.name() == "AddBackward" and not h.is_leaf and h.requires_grad


def test_inplace_with_an_operand_that_requires_grad_makes_a_plain_tensor_require_grad():
    y = _leaf([1.0, 2.0])
    h = numdiff.zeros(2, dtype=numdiff.float64)
    h.add_(y * 3)
    assert h.requires_grad and not h.is_leaf
    h.sum().backward()
    assert y.grad.tolist() == [3.0, 3.0]


def test_setitem_with_a_value_that_requires_grad_routes_its_gradient():
    v = _leaf([5.0])
    buffer = numdiff.zeros(3, dtype=numdiff.float64)
    buffer[1:2] = v
    (buffer * numdiff.tensor([1.0, 2.0, 3.0], dtype=numdiff.float64)).sum().backward()
    assert v.grad.tolist() == [2.0]


def test_retain_grad_survives_an_inplace_op():
    x = _leaf([1.0, 2.0])
    h = x * 2
    h.retain_grad()
    h.mul_(3)
    h.sum().backward()
    assert h.grad.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [6.0, 6.0]


def test_version_counter_counts_each_inplace_op():
    t = numdiff.zeros(3)
    assert t._version == 0
    t.add_(1)
    t[0] = 5.0
    t.mul_(2)
    assert t._version == 3
    assert t.tolist() == [10.0, 2.0, 2.0]


def test_views_share_the_version_counter_of_their_base():
    t = numdiff.zeros(2, 3)
    row = t[0]
    t.add_(1)
    assert row._version == t._version == 1
    assert row.tolist() == [1.0, 1.0, 1.0]


def test_inplace_on_a_view_while_recording_writes_through_to_the_base_gradient():
    x = _leaf([1.0, 2.0, 3.0])
    h = x * 1
    view = h[1:]
    view.mul_(2)  # PyTorch's CopySlices: h's history takes the write (tests/core/test_inplace_view_writes.py)
    (h * numdiff.tensor([1.0, 10.0, 100.0], dtype=numdiff.float64)).sum().backward()
    np.testing.assert_array_equal(h.detach().numpy(), [1.0, 4.0, 6.0])
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 20.0, 200.0])


def test_optimizer_update_under_no_grad_keeps_the_leaf():
    w = _leaf([1.0, -2.0])
    for _ in range(3):
        loss = (w * w).sum()
        loss.backward()
        with numdiff.no_grad():
            w -= 0.25 * w.grad
        w.grad = None
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    np.testing.assert_allclose(w.detach().numpy(), np.array([1.0, -2.0]) * 0.5**3)


def test_updating_through_data_bypasses_the_tape():
    w = _leaf([1.0, 2.0])
    w.data.mul_(3)
    assert w.is_leaf and w.tolist() == [3.0, 6.0]
    w.data = numdiff.tensor([7.0, 8.0], dtype=numdiff.float64)
    (w * 2).sum().backward()
    assert w.tolist() == [7.0, 8.0] and w.grad.tolist() == [2.0, 2.0]


def test_grad_can_be_zeroed_in_place_and_reaccumulated():
    w = _leaf([1.0, 2.0])
    (w * 3).sum().backward()
    w.grad.zero_()
    (w * 5).sum().backward()
    assert w.grad.tolist() == [5.0, 5.0]


def test_fill_and_copy_on_a_leaf_under_no_grad():
    w = _leaf([1.0, 2.0])
    with numdiff.no_grad():
        w.fill_(4.0)
        assert w.tolist() == [4.0, 4.0]
        w.copy_(numdiff.tensor([1, 2]))
    assert w.tolist() == [1.0, 2.0] and w.dtype is numdiff.float64 and w.is_leaf


def test_inplace_result_that_cannot_be_cast_back_is_refused():
    t = numdiff.tensor([1, 2, 3])
    with pytest.raises(TypeError, match="int64"):
        t.mul_(0.5)
    assert t.tolist() == [1, 2, 3]


def test_inplace_result_of_a_different_shape_is_refused():
    t = numdiff.zeros(3)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3,\)"):
        t.add_(numdiff.ones(2, 3))
    assert t.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "product",
    [
        lambda lib, v: v * 2,
        lambda lib, v: 2 * v,
        lambda lib, v: v / 3,
        lambda lib, v: v * lib.tensor([1.0, 2.0], dtype=lib.float64),
        lambda lib, v: v - lib.tensor([1.0, 2.0], dtype=lib.float64) ** 2,
    ],
)
def test_an_elementwise_op_keeps_no_input_that_no_needed_gradient_reads(product):
    # x * 2 saved x for the gradient of the constant 2, so changing x in place afterwards made
    # backward raise SavedTensorModifiedError where PyTorch (which keeps no x) computes it.
    torch = pytest.importorskip("torch")
    results = []
    for lib in (numdiff, torch):
        a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        b = a * 1
        c = product(lib, b.t())
        b.add_(1)
        d = a * 1
        d[1] = product(lib, d[0])  # reads d[0] before writing into d: PyTorch's own idiom
        (c.sum() + d.sum()).backward()
        results.append(a.grad.numpy())
    np.testing.assert_allclose(*results, rtol=1e-15)


def test_an_input_a_needed_gradient_reads_is_still_checked():
    a = numdiff.tensor([1.0, 2.0], requires_grad=True)
    w = numdiff.tensor([3.0, 4.0], requires_grad=True)
    b = a * 1
    c = b * w  # w's gradient reads b
    b.add_(1)
    with pytest.raises(RuntimeError, match="MulBackward.*version 0.*version 1"):
        c.sum().backward()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("other_shape", [(), (1,), (4,), (3, 1), (1, 4), (3, 4)])
@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_"])
def test_untracked_inplace_arithmetic_with_a_broadcast_operand_matches_torch(op, other_shape, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((3, 4)).astype(dtype), (rng.standard_normal(other_shape) + 3.0).astype(dtype)
    mine, theirs = numdiff.tensor(x), torch.tensor(x)
    storage, version = mine._data, mine._version
    assert getattr(mine, op)(numdiff.tensor(y)) is mine
    getattr(theirs, op)(torch.tensor(y))
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())  # one rounding, as PyTorch's
    assert mine._data is storage and mine._version == version + 1


def test_untracked_inplace_arithmetic_refuses_an_operand_that_would_grow_self():
    with pytest.raises(Exception, match=r"\(2, 3\)|broadcast"):
        numdiff.ones(3).mul_(numdiff.ones(2, 3))


def test_untracked_inplace_multiply_by_a_row_of_itself_reads_the_row_before_writing():
    x = np.arange(1.0, 7.0).reshape(2, 3)
    t = numdiff.tensor(x)
    t.mul_(t[0])
    np.testing.assert_array_equal(t.numpy(), x * x[0])


@pytest.mark.parametrize(
    "make, change",
    [
        # x / 2 kept its output for the gradient of the 2: a contrastive loss's sim.fill_diagonal_
        (lambda lib, x, y: (x @ x.T) / 0.5, lambda q: q.fill_diagonal_(float("-inf"))),
        (lambda lib, x, y: x ** 2, lambda q: q.add_(1.0)),
        # div's divisor gradient recomputes x / y, as PyTorch's does, instead of reading the output
        (lambda lib, x, y: x / y, lambda q: q.masked_fill_(q > 0.5, 0.0)),
        (lambda lib, x, y: 2.0 / y, lambda q: q.mul_(3.0)),
    ],
)
def test_an_output_no_needed_gradient_reads_can_change_in_place(make, change):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x0, y0 = rng.normal(size=(3, 3)), rng.uniform(1.0, 2.0, size=(3, 3))
    results = []
    for lib in (numdiff, torch):
        x, y = _torch_leaf(lib, x0), _torch_leaf(lib, y0)
        q = make(lib, x, y)
        change(q)
        q.logsumexp(1).sum().backward()
        results.append([None if leaf.grad is None else leaf.grad.numpy() for leaf in (x, y)])
    for got, want in zip(*results):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-13)


def test_an_output_a_needed_gradient_reads_is_still_checked():
    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    q = x.exp()  # exp's gradient is its output
    q.add_(1.0)
    with pytest.raises(RuntimeError, match="ExpBackward.*version 0.*version 1"):
        q.sum().backward()
