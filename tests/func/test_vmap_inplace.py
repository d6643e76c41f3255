"""In-place ops on batched tensors under vmap, against torch.func in float64, and the refusals that stay."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff import func
from numdiff._inplace import TransformMutationError
from numdiff.tensor import InPlaceOnLeafError

RNG = np.random.default_rng(7)


def _close(ours, theirs) -> None:
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-12)


def mutating(lib, x, c):
    """Writes into a tensor made from the batched input: in-place ops with batched and unbatched values."""
    y = x * 1.0
    y.mul_(x)
    y.add_(c)
    y.clamp_(min=-1.0)
    y[0] = 5.0
    y[1:] = x[1:] * lib.tanh(x[1:])
    y.mul_(x)
    return y.sin()


def test_inplace_on_batched_tensors_matches_torch_func():
    data, captured = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    c, tc = numdiff.tensor(captured), torch.tensor(captured)
    x, tx = numdiff.tensor(data), torch.tensor(data)
    _close(func.vmap(lambda v: mutating(numdiff, v, c))(x), torch.func.vmap(lambda v: mutating(torch, v, tc))(tx))
    ours = func.vmap(func.grad(lambda v: mutating(numdiff, v, c).sum()))(x)
    theirs = torch.func.vmap(torch.func.grad(lambda v: mutating(torch, v, tc).sum()))(tx)
    _close(ours, theirs)
    _close(func.jacrev(lambda v: mutating(numdiff, v, c))(x[0]), torch.func.jacrev(lambda v: mutating(torch, v, tc))(tx[0]))
    _close(func.jacfwd(lambda v: mutating(numdiff, v, c))(x[0]), torch.func.jacfwd(lambda v: mutating(torch, v, tc))(tx[0]))
    _close(c, tc)  # the captured tensor is only read


def test_inplace_on_a_vmapped_input_writes_through_to_it_as_torch_does():
    data = RNG.standard_normal((3, 2))
    for in_dims in (0, 1):
        x, tx = numdiff.tensor(data), torch.tensor(data)
        out = func.vmap(lambda v: v.add_(1.0).mul_(2.0), in_dims=in_dims)(x)
        tout = torch.func.vmap(lambda v: v.add_(1.0).mul_(2.0), in_dims=in_dims)(tx)
        _close(out, tout)
        _close(x, tx)


def test_inplace_under_nested_vmap_broadcasts_an_outer_only_value():
    data, rows = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4))

    def f(lib, x, r):
        y = x.clone()
        y.sub_(r)  # r is batched over the outer level only
        return y.exp_()

    ours = func.vmap(lambda x, r: func.vmap(lambda xi: f(numdiff, xi, r))(x))(numdiff.tensor(data), numdiff.tensor(rows))
    theirs = torch.func.vmap(lambda x, r: torch.func.vmap(lambda xi: f(torch, xi, r))(x))(torch.tensor(data), torch.tensor(rows))
    _close(ours, theirs)


def test_inplace_activation_and_setitem_fill_zero_under_vmap():
    data = RNG.standard_normal((3, 5))

    def f(lib, x):
        y = x.clone()
        lib.nn.functional.relu(y, inplace=True)
        y[..., 0] = x[..., 1]
        y[..., -1:].zero_()
        return y

    _close(func.vmap(lambda v: f(numdiff, v))(numdiff.tensor(data)), torch.func.vmap(lambda v: f(torch, v))(torch.tensor(data)))


def test_mutating_a_captured_tensor_with_a_batched_value_raises_naming_it():
    captured = numdiff.zeros(2, 3, dtype=numdiff.float64)
    with pytest.raises(TransformMutationError, match=r"add_: .* shape \(2, 3\) and dtype numdiff.float64 that is not batched"):
        func.vmap(lambda v: captured.add_(v))(numdiff.ones(4, 2, 3, dtype=numdiff.float64))
    assert not captured.numpy().any()


def test_a_tensor_made_inside_without_the_batched_inputs_refuses_a_batched_value():
    def f(v):
        buffer = numdiff.zeros(3)
        buffer.mul_(v)
        return buffer

    with pytest.raises(TransformMutationError, match=r"mul_: .* shape \(3,\) and dtype numdiff.float32"):
        func.vmap(f)(numdiff.ones(2, 3))


def test_a_tensor_batched_over_the_inner_level_only_refuses_an_outer_batched_value():
    def inner(x, r):
        y = x * 1
        y.add_(r)  # y is batched over the inner level, r over the outer one
        return y

    with pytest.raises(TransformMutationError, match=r"shape \(3,\)"):
        func.vmap(lambda r: func.vmap(lambda x: inner(x, r))(numdiff.ones(4, 3)))(numdiff.ones(2, 3))


def test_inplace_on_a_differentiated_input_under_vmap_is_the_leaf_error():
    with pytest.raises(InPlaceOnLeafError, match=r"mul_: a leaf tensor of shape \(2,\)"):
        func.vmap(func.grad(lambda v: v.mul_(2).sum()))(numdiff.ones(3, 2))


def _scale_first_row(x):
    y = x * 1.0
    y[0].mul_(3.0)  # an in-place op on a view writes through to y
    return y


def test_inplace_on_a_view_under_vmap_writes_through_to_its_base_as_torch_does():
    for shape in ((3, 2, 2), (3, 2)):
        data = RNG.standard_normal(shape)
        _close(func.vmap(_scale_first_row)(numdiff.tensor(data)), torch.func.vmap(_scale_first_row)(torch.tensor(data)))


def test_inplace_on_a_view_while_recording_under_vmap_raises():
    from numdiff._inplace import InPlaceOnViewError

    data = numdiff.tensor(RNG.standard_normal((3, 2, 2)))
    # Without vmap the write goes through the view into its base (PyTorch's gradient) ...
    _close(func.grad(lambda v: (_scale_first_row(v) ** 2).sum())(data[0]),
           torch.func.grad(lambda v: (_scale_first_row(v) ** 2).sum())(torch.tensor(data[0].numpy())))
    # ... under vmap a view of the batch is not recorded as one, so the write is refused.
    with pytest.raises(InPlaceOnViewError, match=r"mul_: in-place modification of a view \(shape \(2,\)\)"):
        func.vmap(func.grad(lambda v: (_scale_first_row(v) ** 2).sum()))(data)


def test_writing_a_base_whose_view_was_saved_for_backward_is_detected_under_vmap():
    from numdiff.autograd import SavedTensorModifiedError

    def f(x):
        y = x * 1.0
        v = y[0]
        z = (v * v).sum()  # saves the view v
        y.mul_(2.0)  # ... which this write changes
        return z + y.sum()

    data = numdiff.tensor(RNG.standard_normal((3, 2, 2)))
    with pytest.raises(SavedTensorModifiedError, match="modified in place"):
        func.grad(f)(data[0])
    with pytest.raises(SavedTensorModifiedError, match="modified in place"):
        func.vmap(func.grad(f))(data)


# Every op whose public function returns a view (its spec's `view`), through the public call that
# makes it: a write into the base after the view was saved is caught under vmap as it is eagerly.
VIEW_CALLS = {
    "reshape": lambda y: y.reshape(4),
    "permute": lambda y: y.permute(1, 0),
    "expand": lambda y: y[:1].expand(3, 2),
    "getitem": lambda y: y[0],
    "diagonal": lambda y: y.diagonal(),
    "as_strided": lambda y: y.as_strided((2, 2), (1, 2)),
}


def test_every_view_op_has_a_call_here():
    from numdiff.ops.registry import SPECS

    assert set(VIEW_CALLS) == {name for name, spec in SPECS.items() if spec.view}


@pytest.mark.parametrize("op", sorted(VIEW_CALLS))
def test_writing_the_base_of_a_saved_view_is_detected_under_vmap_for_every_view_op(op):
    from numdiff.autograd import SavedTensorModifiedError

    def f(x):
        y = x * 1.0
        v = VIEW_CALLS[op](y)
        z = (v * v).sum()  # saves the view v
        y.mul_(2.0)  # ... which this write changes
        return z + y.sum()

    data = numdiff.tensor(RNG.standard_normal((3, 2, 2)))
    with pytest.raises(SavedTensorModifiedError, match="modified in place"):
        func.grad(f)(data[0])
    with pytest.raises(SavedTensorModifiedError, match="modified in place"):
        func.vmap(func.grad(f))(data)
