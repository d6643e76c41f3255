"""autograd.graph.register_multi_grad_hook in its "all" and "any" modes, against torch."""

from __future__ import annotations

import pytest
import torch

import numdiff


def _record_all(lib, calls):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
    c, d = a * b, a * b
    handle = lib.autograd.graph.register_multi_grad_hook(
        (a, b, c, d), lambda grads: calls.append([None if g is None else g.tolist() for g in grads])
    )
    c.sum().backward(retain_graph=True)  # d is not reached: None for it
    c.sum().backward(inputs=(a,), retain_graph=True)  # b is not needed: None for it
    (c.sum() + d.sum()).backward(retain_graph=True)
    handle.remove()
    c.sum().backward()  # removed: no call
    return calls


def test_all_mode_passes_what_each_backward_computed_as_torch():
    assert _record_all(numdiff, []) == _record_all(torch, [])


def test_all_mode_fires_once_per_backward_after_the_last_gradient():
    x = numdiff.tensor([1.0, -2.0], requires_grad=True)
    h = x.exp()
    seen = []
    order = []
    x.register_hook(lambda g: order.append("x"))
    numdiff.autograd.graph.register_multi_grad_hook((h, x), lambda grads: order.append("multi") or seen.append(grads))
    (h * 3).sum().backward()
    assert order == ["x", "multi"] and len(seen) == 1
    assert seen[0][0].tolist() == [3.0, 3.0] and seen[0][1].allclose(3 * x.exp())


def _record_any(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([5.0, 7.0], requires_grad=True)
    h = x * 2
    got = []
    handle = lib.autograd.graph.register_multi_grad_hook((x, h, w), lambda g: got.append(g.tolist()), mode="any")
    (h * w).sum().backward(retain_graph=True)  # three gradients, one call
    (w * 3).sum().backward()
    (x * 5).sum().backward()
    handle.remove()
    (h * w).sum().backward()
    return got


def test_any_mode_gets_the_first_gradient_once_per_backward_as_torch():
    got = _record_any(numdiff)
    assert len(got) == 3 and got[1:] == [[3.0, 3.0], [5.0, 5.0]]
    assert got == _record_any(torch)


def test_the_hook_changes_no_gradient():
    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    numdiff.autograd.graph.register_multi_grad_hook((x,), lambda grads: [g * 0 for g in grads])
    (x * 4).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_bad_arguments_name_the_function_and_the_values():
    x = numdiff.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="register_multi_grad_hook: mode must be 'all' or 'any', got 'first'"):
        numdiff.autograd.graph.register_multi_grad_hook((x,), print, mode="first")
    with pytest.raises(TypeError, match="register_multi_grad_hook.*callable.*int"):
        numdiff.autograd.graph.register_multi_grad_hook((x,), 3)
    with pytest.raises(TypeError, match=r"register_multi_grad_hook: tensors\[1\] is a list"):
        numdiff.autograd.graph.register_multi_grad_hook((x, [1.0]), print)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        numdiff.autograd.graph.register_multi_grad_hook((x, numdiff.ones(2)), print)
