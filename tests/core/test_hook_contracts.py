"""What each kind of gradient hook may return, checked against torch: a tensor hook returns None
or a same-shaped tensor; a node pre-hook gets and returns a tuple; a post-accumulate-grad hook
returns None."""

from __future__ import annotations

import pytest

import numdiff

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("returned", [lambda p: p * 2, lambda p: 3, lambda p: p.grad], ids=["tensor", "int", "grad"])
def test_post_accumulate_grad_hook_returning_a_value_is_refused_like_torch(returned):
    for lib in (torch, numdiff):
        x = lib.ones(2, requires_grad=True)
        x.register_post_accumulate_grad_hook(returned)
        with pytest.raises((RuntimeError, TypeError)) as info:
            (x * 2).sum().backward()
        if lib is numdiff:
            assert "post-accumulate-grad hook" in str(info.value) and "must return None" in str(info.value)


def test_post_accumulate_grad_hook_returning_none_may_change_grad_in_place():
    def scale(p):
        p.grad.mul_(10)

    x = numdiff.ones(2, requires_grad=True)
    x.register_post_accumulate_grad_hook(scale)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [20.0, 20.0]


def _node_prehook(lib, hook):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.grad_fn.register_prehook(hook)
    y.sum().backward()
    return x.grad.tolist()


def test_node_prehook_gets_a_tuple_and_may_return_one_like_torch():
    seen = []
    for lib in (torch, numdiff):
        assert _node_prehook(lib, lambda grads: seen.append((type(grads), len(grads)))) == [2.0, 2.0]
        assert _node_prehook(lib, lambda grads: (grads[0] * 5,)) == [10.0, 10.0]
    assert seen == [(tuple, 1), (tuple, 1)]


@pytest.mark.parametrize(
    "hook, error, message",
    [
        (lambda grads: grads[0], TypeError, "must return a tuple"),
        (lambda grads: (grads[0], grads[0]), RuntimeError, "returned 2 gradients, but expected 1"),
    ],
    ids=["tensor", "two"],
)
def test_node_prehook_returning_other_than_a_tuple_of_one_is_refused_like_torch(hook, error, message):
    with pytest.raises(error):
        _node_prehook(torch, hook)
    with pytest.raises(error, match=message):
        _node_prehook(numdiff, hook)


def test_tensor_hook_on_a_non_leaf_still_gets_and_returns_a_tensor():
    x = numdiff.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def _node_hook(lib, hook, make=lambda x: x * 2):
    x = lib.ones(2, requires_grad=True)
    y = make(x)
    y.grad_fn.register_hook(hook)
    y.sum().backward()
    return x.grad.tolist()


def test_node_post_hook_sees_input_and_output_gradients_and_may_replace_them_like_torch():
    # grad_fn.register_hook was missing (AttributeError).
    seen = []
    for lib in (torch, numdiff):
        assert _node_hook(lib, lambda gi, go: seen.append((len(gi), len(go), gi[0].tolist()))) == [2.0, 2.0]
        assert _node_hook(lib, lambda gi, go: (gi[0] * 10,) + gi[1:]) == [20.0, 20.0]
        assert _node_hook(lib, lambda gi, go: (gi[0] * 3,), make=lambda x: x.exp()) == pytest.approx([8.154845] * 2)
    assert seen[0] == seen[1] == (2, 1, [2.0, 2.0])


def test_node_post_hook_returning_a_tensor_or_the_wrong_count_is_refused_like_torch():
    for hook, error in ((lambda gi, go: gi[0], TypeError), (lambda gi, go: (gi[0],), RuntimeError)):
        for lib in (torch, numdiff):
            with pytest.raises(error):
                _node_hook(lib, hook)


def test_node_post_hook_can_be_removed():
    x = numdiff.ones(2, requires_grad=True)
    y = x * 2
    handle = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10,) + gi[1:])
    handle.remove()
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
