"""In-place ops on views while recording (PyTorch's CopySlices): ``h[:, 0].mul_(2)``,
``h.diagonal().sub_(x)``, ``v[1] = y`` on a view. The write goes into the base, whose history
takes it as one index_put, and every view of the base (the one written, and those made before)
takes that history through its view ops. Compared with torch in float64: values, the gradient of
the leaf and of what the written value depends on, and views made before the write."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff as nd
from numdiff import func

RNG = np.random.default_rng(41)
W = RNG.standard_normal((8, 6))
MASK = RNG.random((8, 6)) < 0.4

WRITES = {
    "mul_ a column": lambda lib, h: h[:, 0].mul_(2.0),
    "add_ a narrow view": lambda lib, h: h.narrow(1, 1, 2).add_(h[:, 3:5] * 0.5),
    "sub_ the diagonal": lambda lib, h: h.diagonal().sub_(0.1),
    "clamp_ through view + getitem": lambda lib, h: h.view(8, 2, 3)[:, 1].clamp_(min=-0.5),
    "pow_ a row of t()": lambda lib, h: h.t()[2].pow_(2),
    "relu_ a select": lambda lib, h: h.select(0, 4).relu_(),
    "setitem into a view": lambda lib, h: h.view(4, 12).__setitem__((1, slice(2, 5)), h[0, :3] * 3),
    "add_ another row": lambda lib, h: h[1].add_(h[2]),
    "zero_ rows": lambda lib, h: h[2:4].zero_(),
    "fill_ a column": lambda lib, h: h[:, 5].fill_(1.5),
    "copy_ a row": lambda lib, h: h[0].copy_(h[7] * 2),
    "exp_ rows of a permute": lambda lib, h: h.permute(1, 0)[1:3].exp_(),
    "mul_ a strided slice of a reshape": lambda lib, h: h.reshape(48)[::5].mul_(3),
    "sigmoid_ through unsqueeze": lambda lib, h: h.unsqueeze(0)[0, 3].sigmoid_(),
    "masked_fill_ a row block": lambda lib, h: h[4:].masked_fill_(lib.from_numpy(MASK[4:]), 0.25),
    "mul_ after transpose_ of the view": lambda lib, h: h[:4].transpose_(0, 1)[1].mul_(3),
}


def _run(lib, write):
    w = lib.tensor(W.copy(), requires_grad=True)
    scale = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)
    h = w * scale + 0.1
    earlier = h[:, 1:3]  # a view made before the write: it reads, and differentiates, the new values
    write(lib, h)
    weights = lib.arange(48, dtype=lib.float64).reshape(8, 6) / 10
    loss = (h ** 2 * weights).sum() + (earlier ** 3).sum()
    loss.backward()
    return h.detach().numpy().copy(), w.grad.numpy().copy(), scale.grad.numpy().copy()


@pytest.mark.parametrize("name", list(WRITES))
def test_inplace_write_into_a_view_matches_torch(name):
    for ours, theirs in zip(_run(nd, WRITES[name]), _run(torch, WRITES[name])):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_inplace_write_into_a_view_passes_gradcheck():
    def f(w, v):
        h = w * 1.0
        h[1:3, ::2].mul_(v)
        h.diagonal().add_(v.sum())
        return h.sin()

    w = nd.tensor(RNG.standard_normal((4, 5)), requires_grad=True)
    v = nd.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    assert nd.autograd.gradcheck(f, (w, v))
    assert nd.autograd.gradgradcheck(f, (w, v))


def test_base_of_a_view_that_needs_no_grad_takes_the_written_values_history():
    # A buffer that requires no grad, filled through a view with a value that does.
    for lib in (nd, torch):
        w = lib.tensor(W[0].copy(), requires_grad=True)
        out = lib.zeros(3, 6, dtype=lib.float64)
        out[1].copy_(w * 2)
        out.narrow(0, 2, 1).add_(w.exp())
        (out.sum(0) ** 2).sum().backward()
        if lib is nd:
            ours = (out.detach().numpy().copy(), w.grad.numpy().copy())
    np.testing.assert_allclose(ours[0], out.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours[1], w.grad.numpy(), rtol=1e-12)


def test_inplace_write_into_a_view_under_grad_transform_matches_torch_func():
    def f(v):
        y = v * 2.0
        y[:, 1].mul_(v[:, 0])
        return (y ** 2).sum()

    data = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(func.grad(f)(nd.tensor(data)).numpy(), torch.func.grad(f)(torch.tensor(data)).numpy(),
                               rtol=1e-12)


def test_a_value_of_the_wrong_shape_names_the_op_and_the_shapes_and_leaves_the_base_alone():
    w = nd.tensor(W.copy(), requires_grad=True)
    h = w * 1.0
    with pytest.raises(ValueError, match=r"value of shape \(3,\) cannot be broadcast to the indexed shape \(6,\)"):
        h[0].copy_(nd.ones(3, dtype=nd.float64))
    np.testing.assert_array_equal(h.detach().numpy(), W)


def test_writing_into_an_expanded_view_is_refused_before_any_write():
    w = nd.tensor(W[0].copy(), requires_grad=True)
    h = (w * 1.0).expand(3, 6)
    with pytest.raises(RuntimeError, match="add_"):
        h[0:2].add_(1.0)
    with pytest.raises(RuntimeError):
        (torch.tensor(W[0].copy(), requires_grad=True) * 1.0).expand(3, 6)[0:2].add_(1.0)
    np.testing.assert_array_equal(w.detach().numpy(), W[0])
