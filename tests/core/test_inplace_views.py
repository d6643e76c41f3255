"""The leaf rule holds through views: PyTorch 2.13's two view rules for in-place ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff as nd
from numdiff._inplace import InPlaceOnViewError
from numdiff.tensor import InPlaceOnLeafError


def _both(make_view, inplace):
    """Run the same code on numdiff and torch; return (numdiff error, torch error, w values)."""
    results = []
    for lib in (nd, torch):
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        view = make_view(lib, w)
        try:
            inplace(view)
            error = None
        except RuntimeError as caught:
            error = caught
        results.append((error, w.detach().numpy().copy()))
    return results


@pytest.mark.parametrize(
    "make_view",
    [
        lambda lib, w: w[0:2],
        lambda lib, w: w[0:2][0:1],
        lambda lib, w: w.reshape(3, 1),
    ],
    ids=["slice", "slice-of-slice", "reshape"],
)
def test_view_made_under_no_grad_refuses_inplace_with_grad_mode_on(make_view):
    def under_no_grad(lib, w):
        with lib.no_grad():
            return make_view(lib, w)

    (nd_error, nd_w), (torch_error, torch_w) = _both(under_no_grad, lambda v: v.add_(1))
    assert isinstance(torch_error, RuntimeError)
    assert isinstance(nd_error, InPlaceOnViewError)
    assert "no_grad" in str(nd_error) and "add_" in str(nd_error)
    np.testing.assert_array_equal(nd_w, [1.0, 2.0, 3.0])  # nothing the user holds changed
    np.testing.assert_array_equal(nd_w, torch_w)


def test_no_grad_view_of_a_non_leaf_that_requires_grad_is_refused_naming_its_op():
    h = nd.tensor([1.0, 2.0, 3.0], requires_grad=True) * 2
    with nd.no_grad():
        view = h[0:2]
    with pytest.raises(InPlaceOnViewError, match="MulBackward"):
        view.add_(1)
    np.testing.assert_array_equal(h.detach().numpy(), [2.0, 4.0, 6.0])


def test_view_of_a_leaf_made_with_grad_mode_on_refuses_inplace_naming_the_leaf():
    (nd_error, nd_w), (torch_error, _) = _both(lambda lib, w: w[0:2], lambda v: v.mul_(2))
    assert "view of a leaf" in str(torch_error)
    assert isinstance(nd_error, InPlaceOnLeafError)
    assert "leaf of shape (3,)" in str(nd_error) and "mul_" in str(nd_error)
    np.testing.assert_array_equal(nd_w, [1.0, 2.0, 3.0])


def test_setitem_on_a_no_grad_view_is_refused_too():
    w = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with nd.no_grad():
        v = w[1:]
    with pytest.raises(InPlaceOnViewError):
        v[0] = 10.0
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0, 3.0])


def test_views_and_inplace_both_under_no_grad_still_update_the_leaf():
    w = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with nd.no_grad():
        w[0:2].add_(1)
    np.testing.assert_array_equal(w.detach().numpy(), [2.0, 3.0, 3.0])


def test_views_of_tensors_that_need_no_grad_and_of_detached_leaves_stay_writable():
    x = nd.tensor([1.0, 2.0])
    with nd.no_grad():
        xv = x[0:1]
    xv.add_(1)
    w = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w.detach()[0:2].add_(1)  # detach() leaves autograd: PyTorch allows this as well
    np.testing.assert_array_equal(x.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(w.detach().numpy(), [2.0, 3.0, 3.0])


VIEWS = [
    lambda b: b[:2],
    lambda b: b.reshape(3, 1),
    lambda b: b.unsqueeze(0).expand(2, 3),
    lambda b: b.unsqueeze(1).permute(1, 0)[0, ::2],
    lambda b: b.reshape(3, 1).expand(3, 3).diagonal(),
    lambda b: b.t()[1:].reshape(2, 1)[:, 0],
]


def _through_view(lib, make_view, inplace, use):
    a = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    b = a * 1
    view = make_view(b)
    inplace(b, a)
    use(view).sum().backward()
    return a.grad.tolist()


@pytest.mark.parametrize("make_view", VIEWS)
@pytest.mark.parametrize(
    "inplace",
    [lambda b, a: b.mul_(3), lambda b, a: (b.mul_(2), b.mul_(a)), lambda b, a: b.__setitem__(slice(1, None), a[:2] * a[1:])],
    ids=["mul_", "twice", "setitem"],
)
@pytest.mark.parametrize("use", [lambda v: v, lambda v: v * v], ids=["backward", "op"])
def test_a_view_made_before_an_inplace_op_on_its_base_takes_the_new_history_as_in_torch(make_view, inplace, use):
    # It raised StaleViewError; before that its gradient silently missed the in-place op.
    np.testing.assert_allclose(_through_view(nd, make_view, inplace, use), _through_view(torch, make_view, inplace, use))


def test_a_view_made_before_its_base_took_a_value_that_requires_grad_follows_it_as_in_torch():
    grads = []
    for lib in (nd, torch):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.zeros(3)
        view = b[1:]
        b[:] = a * 2
        (view * 2).sum().backward()
        grads.append(a.grad.tolist())
    assert grads[0] == grads[1] == [0.0, 4.0, 4.0]


def test_a_replayed_view_keeps_retain_grad_and_leaves_its_old_hooks_behind_as_torch():
    results = []
    for lib in (nd, torch):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a * 1
        view = b[:2]
        view.register_hook(lambda g: g * 10)
        view.retain_grad()
        b.add_(1)
        view.sum().backward()
        results.append((a.grad.tolist(), view.grad.tolist()))
    assert results[0] == results[1]


def test_a_custom_functions_view_output_is_still_refused_after_its_base_changes():
    from numdiff.autograd.function import StaleViewError

    class Identity(nd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    a = nd.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    out = Identity.apply(b)
    b.mul_(2)
    with pytest.raises(StaleViewError, match="Identity|sum"):
        out.sum()


def test_views_stay_usable_after_inplace_ops_that_are_not_recorded():
    a = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    view = b[:2]
    with nd.no_grad():
        b.mul_(3)  # not recorded: torch's gradient through the view ignores it too
    view.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 0.0]
    with nd.no_grad():
        c = a * 1
        v = c[:2]
        c.add_(1)
        assert v.sum().item() == 5.0


@pytest.mark.parametrize(
    "write",
    [lambda t: t.add_(1.0), lambda t: t.__setitem__(0, 5.0), lambda t: t.zero_(), lambda t: t.copy_(nd.ones(3, 2))],
)
def test_inplace_write_into_an_expanded_view_names_the_op_and_the_cause(write):
    # NumPy's "assignment destination is read-only" came out instead, naming neither.
    x = nd.tensor([[1.0, 2.0]])
    with pytest.raises(RuntimeError, match=r"cannot write in place into the tensor of shape \(3, 2\): it is an expanded view"):
        write(x.expand(3, 2))
    assert x.tolist() == [[1.0, 2.0]]
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(RuntimeError, match="add_: .* read-only memory"):
        nd.as_tensor(frozen).add_(1.0)
