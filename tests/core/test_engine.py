"""The tape: accumulation, retain_grad, detach, hooks, .grad assignment, autograd.grad,
backward(inputs=...), deep chains, and freeing the graph."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import numdiff
from numdiff.autograd import SavedTensorFreedError


def _leaf(values, dtype=numdiff.float64):
    return numdiff.tensor(values, dtype=dtype, requires_grad=True)


# ----------------------------------------------------------------------------- accumulation
def test_grads_accumulate_across_backward_calls():
    x = _leaf([1.0, -2.0, 3.0])
    (x * x).sum().backward()
    first = x.grad
    (3 * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.array([1.0, -2.0, 3.0]) + 3)
    assert x.grad is first, "accumulation is in place (+=), into the same tensor"


def test_first_gradient_does_not_alias_the_upstream_gradient():
    x = _leaf([1.0, 2.0])
    seed = numdiff.ones(2, dtype=numdiff.float64)
    (x + 0).backward(seed)
    (x + 0).backward(seed)
    assert seed.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [2.0, 2.0]


def test_fan_out_sums_gradients_of_every_use():
    x = _leaf([2.0])
    y = x * 3
    (y * y + y.exp() + x).sum().backward()
    expected = 2 * 3 * 6.0 + 3 * np.exp(6.0) + 1
    np.testing.assert_allclose(x.grad.item(), expected, rtol=1e-12)


def test_broadcast_gradient_is_summed_back_to_the_input_shape():
    a = _leaf(np.ones((2, 1)))
    b = _leaf(np.arange(3.0))
    (a * b).sum().backward()
    assert a.grad.shape == (2, 1) and b.grad.shape == (3,)
    np.testing.assert_array_equal(a.grad.numpy(), [[3.0], [3.0]])
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 2.0, 2.0])


def test_leaf_without_requires_grad_gets_no_grad():
    x = _leaf([1.0])
    c = numdiff.tensor([5.0], dtype=numdiff.float64)
    (x * c).sum().backward()
    assert c.grad is None and x.grad.tolist() == [5.0]


def test_zeroing_grad_with_none_restarts_accumulation():
    x = _leaf([1.0, 2.0])
    (x * 2).sum().backward()
    x.grad = None
    (x * 5).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


def test_grad_is_settable_to_a_same_shape_tensor_and_accumulates_into_it():
    x = _leaf([1.0, 2.0])
    x.grad = numdiff.tensor([10.0, 20.0], dtype=numdiff.float64)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [12.0, 22.0]


def test_second_backward_without_saved_tensors_works_as_in_pytorch():
    x = _leaf([1.0, 2.0])
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


# ----------------------------------------------------------------------------- retain_grad, detach
def test_retain_grad_keeps_an_intermediate_gradient():
    x = _leaf([1.0, 2.0])
    h = x * x
    h.retain_grad()
    assert h.retains_grad
    (h * 3).sum().backward()
    assert h.grad.tolist() == [3.0, 3.0]
    assert x.grad.tolist() == [6.0, 12.0]


def test_retain_grad_on_a_leaf_is_a_no_op():
    x = _leaf([1.0])
    x.retain_grad()
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]


def test_detach_starts_a_new_leaf_sharing_storage():
    x = _leaf([1.0, 2.0])
    h = x * 2
    d = h.detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None
    assert np.shares_memory(d._data, h._data)
    with numdiff.no_grad():
        d[0] = 100.0
    assert h.detach().tolist() == [100.0, 4.0]


def test_detach_requires_grad_blocks_gradient_to_the_original():
    x = _leaf([1.0, 2.0])
    d = (x * 2).detach().requires_grad_()
    (d * d).sum().backward()
    assert x.grad is None
    assert d.grad.tolist() == [4.0, 8.0]


def test_detach_shares_the_version_counter():
    x = _leaf([1.0, 2.0])
    h = x * 1
    out = h.sin()
    h.detach().add_(1)
    assert h._version == 1
    with pytest.raises(RuntimeError, match="modified in place"):
        out.sum().backward()


def test_a_write_through_data_is_hidden_from_the_saved_tensor_check_as_in_pytorch():
    # The autograd tutorial's .data example: torch's .data has its own version counter, so
    # out.data.zero_() goes unnoticed and backward uses the zeroed sigmoid output (a gradient of 0);
    # detach() shares the counter and the same write raises (the test above).
    a = _leaf([1.0, 2.0, 3.0])
    out = a.sigmoid()
    out.data.zero_()
    assert out._version == 0 and out.data._version == 0
    out.sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0]


# ----------------------------------------------------------------------------- hooks
def test_hook_sees_the_gradient_and_can_replace_it():
    x = _leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [30.0, 30.0]


def test_hook_on_intermediate_changes_what_flows_upstream():
    x = _leaf([1.0, 2.0])
    h = x * 2
    h.register_hook(lambda g: g + 1)
    h.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_hook_returning_none_keeps_the_gradient():
    x = _leaf([1.0])
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * 4).sum().backward()
    assert calls == [1] and x.grad.tolist() == [4.0]


def test_removed_hook_is_not_called():
    x = _leaf([1.0])
    calls = []
    handle = x.register_hook(lambda g: calls.append(1) or g * 0)
    handle.remove()
    (x * 4).sum().backward()
    assert calls == [] and x.grad.tolist() == [4.0]


def test_removed_hook_on_intermediate_is_not_called():
    x = _leaf([1.0])
    h = x * 2
    handle = h.register_hook(lambda g: g * 100)
    handle.remove()
    h.sum().backward()
    assert x.grad.tolist() == [2.0]


def test_hooks_run_in_registration_order_and_chain():
    x = _leaf([1.0])
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 10)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [20.0]


def test_hook_of_retained_intermediate_applies_before_retaining():
    x = _leaf([1.0])
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 5)
    h.sum().backward()
    assert h.grad.tolist() == [5.0]
    assert x.grad.tolist() == [10.0]


# ----------------------------------------------------------------------------- autograd.grad
def test_autograd_grad_returns_gradients_without_touching_dot_grad():
    x = _leaf([1.0, 2.0])
    y = _leaf([3.0, 4.0])
    gx, gy = numdiff.autograd.grad((x * y).sum(), [x, y])
    assert gx.tolist() == [3.0, 4.0] and gy.tolist() == [1.0, 2.0]
    assert x.grad is None and y.grad is None


def test_autograd_grad_allow_unused_gives_none():
    x = _leaf([1.0])
    unused = _leaf([2.0])
    gx, gu = numdiff.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gx.tolist() == [2.0] and gu is None


def test_autograd_grad_with_create_graph_gives_second_derivative_of_cube():
    x = _leaf([0.5, -1.0, 2.0])
    (dx,) = numdiff.autograd.grad((x**3).sum(), x, create_graph=True)
    np.testing.assert_allclose(dx.detach().numpy(), 3 * x.detach().numpy() ** 2)
    assert dx.requires_grad
    (d2x,) = numdiff.autograd.grad(dx.sum(), x)
    np.testing.assert_allclose(d2x.numpy(), 6 * x.detach().numpy())


def test_third_derivative_through_nested_create_graph():
    x = _leaf([0.3, 1.1])
    (d1,) = numdiff.autograd.grad(x.sin().sum(), x, create_graph=True)
    (d2,) = numdiff.autograd.grad(d1.sum(), x, create_graph=True)
    (d3,) = numdiff.autograd.grad(d2.sum(), x)
    np.testing.assert_allclose(d3.numpy(), -np.cos(x.detach().numpy()), rtol=1e-12)


def test_backward_with_create_graph_makes_grad_differentiable():
    x = _leaf([2.0])
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    g = x.grad
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [12.0]


def test_autograd_grad_with_grad_outputs_weights_the_outputs():
    x = _leaf([1.0, 2.0])
    (g,) = numdiff.autograd.grad(x * x, x, grad_outputs=numdiff.tensor([1.0, 10.0], dtype=numdiff.float64))
    assert g.tolist() == [2.0, 40.0]


def test_autograd_grad_with_respect_to_an_intermediate():
    x = _leaf([1.0, 2.0])
    h = x * 3
    (gh,) = numdiff.autograd.grad((h * h).sum(), h)
    assert gh.tolist() == [6.0, 12.0]
    assert x.grad is None


# ----------------------------------------------------------------------------- backward(inputs=...)
def test_backward_inputs_accumulates_only_into_the_named_leaves():
    x = _leaf([1.0])
    y = _leaf([2.0])
    (x * y).sum().backward(inputs=[x])
    assert x.grad.tolist() == [2.0] and y.grad is None


def test_backward_inputs_may_name_an_intermediate_whose_grad_then_reads_without_warning():
    x = _leaf([1.0])
    h = x * 2
    (h * h).sum().backward(inputs=h)
    assert x.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as PyTorch: the warning is for a .grad that stays None
        assert h.grad.tolist() == [4.0]


def test_autograd_backward_with_several_roots_sums_their_gradients():
    x = _leaf([1.0, 2.0])
    numdiff.autograd.backward([(x * 2).sum(), (x * x).sum()])
    assert x.grad.tolist() == [4.0, 6.0]


# ----------------------------------------------------------------------------- deep graphs and freeing
def test_chain_of_100000_ops_backpropagates_without_recursion():
    x = _leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0]


def test_deep_chain_is_freed_without_recursion_when_dropped():
    x = _leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y + 0.0
    node = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node() is None


def test_graph_is_freed_when_its_tensors_go_out_of_scope():
    x = _leaf([1.0, 2.0])
    loss = (x.exp() * x).sum()
    node = weakref.ref(loss.grad_fn)
    saved = weakref.ref(loss.grad_fn.next_functions[0][0])
    del loss
    assert node() is None and saved() is None, "freed by reference counting, no global tape"


def test_graph_is_freed_after_backward_even_with_retain_graph_when_dropped():
    x = _leaf([1.0, 2.0])
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    node = weakref.ref(loss.grad_fn)
    del loss
    gc.collect()
    assert node() is None


def test_saved_tensors_are_released_after_backward():
    x = _leaf([1.0, 2.0])
    h = x * 2
    out = h.exp() * h
    mul = out.grad_fn
    assert mul.saved_tensors  # the tensors are there before backward
    out.sum().backward()
    with pytest.raises(SavedTensorFreedError, match="retain_graph=True"):
        _ = mul.saved_tensors


def test_saved_tensors_survive_backward_with_retain_graph():
    x = _leaf([1.0, 2.0])
    out = x.exp() * x
    out.sum().backward(retain_graph=True)
    assert len(out.grad_fn.saved_tensors) == 2


def test_saved_intermediate_array_is_freed_by_backward():
    x = _leaf(np.ones(4))
    h = x * 2
    out = h.sin()
    data = weakref.ref(h)
    del h
    assert data() is not None, "held by SinBackward for backward"
    out.sum().backward()
    gc.collect()
    assert data() is None, "backward released it"


def test_leaf_does_not_keep_its_graph_alive():
    x = _leaf([1.0])
    out = x * 2
    node = weakref.ref(out.grad_fn)
    del out
    assert node() is None


def test_grad_fn_is_named_like_pytorch_and_links_to_the_next_functions():
    x = _leaf([1.0])
    y = (x * 2).exp()
    assert y.grad_fn.name() == "ExpBackward"
    ((mul, _),) = y.grad_fn.next_functions
    assert mul.name() == "MulBackward"
    assert mul.next_functions[0][0].name() == "AccumulateGrad"
    assert mul.next_functions[0][0].variable is x
