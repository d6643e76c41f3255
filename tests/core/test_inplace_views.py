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


@pytest.mark.parametrize(
    "make_view",
    [lambda b: b[:2], lambda b: b.reshape(3, 1), lambda b: b.unsqueeze(0).expand(2, 3), lambda b: b.unsqueeze(1).permute(1, 0)[0, ::2]],
)
def test_a_view_used_after_a_recorded_inplace_op_on_its_base_raises_instead_of_a_wrong_gradient(make_view):
    # The view's history reads the base's old value: its gradient missed the later b.mul_(3)
    # (grad [1, 1, 0] where PyTorch gives [3, 3, 0]).
    from numdiff.autograd.function import StaleViewError

    a = nd.tensor([1.0, 2.0, 3.0], dtype=nd.float64, requires_grad=True)
    b = a * 1
    view = make_view(b)
    b.mul_(3)
    with pytest.raises(StaleViewError, match=r"sum: a view \(shape .*\) of a tensor of shape \(3,\) is used after .* MulBackward"):
        view.sum()
    with pytest.raises(StaleViewError, match="backward: a view"):
        view.backward(nd.ones_like(view))
    fresh = make_view(b)  # made again after the in-place op: its gradient includes it
    fresh.sum().backward()
    t_a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    t_b = t_a * 1
    t_view = make_view(t_b)
    t_b.mul_(3)
    t_view.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), t_a.grad.numpy())


def test_a_view_made_before_its_base_took_a_value_that_requires_grad_raises():
    # The view records no history at all, so its result silently required no gradient.
    from numdiff.autograd.function import StaleViewError

    a = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = nd.zeros(3)
    view = b[1:]
    b[:] = a * 2
    with pytest.raises(StaleViewError, match="recorded SetItemBackward|recorded .*Backward"):
        view * 2


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
