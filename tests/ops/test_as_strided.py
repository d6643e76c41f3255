"""as_strided against PyTorch: values and gradients (overlapping views sum), views of views with a storage
offset, writes through the view reaching the input, vmap, and what numdiff refuses (by name, with the
values). (Float64 gradchecks are the cases in tests/ops/cases_strided.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff

RNG = np.random.default_rng(3)


@pytest.mark.parametrize(
    "shape, size, stride, offset",
    [
        ((3, 4), (4, 3), (1, 4), None),  # a transpose
        ((12,), (5, 4), (2, 1), None),  # overlapping windows
        ((2, 3, 4), (3, 2, 2), (4, 12, 1), 1),
        ((6,), (3, 3), (0, 2), 0),  # a zero stride repeats
        ((6,), (0, 4), (1, 1), 2),  # empty
        ((2, 3), (), (), 5),  # a 0-d view of the last element
    ],
)
def test_values_and_gradients_match_torch(shape, size, stride, offset):
    x = RNG.standard_normal(shape)
    ours_in, theirs_in = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours = ours_in.as_strided(size, stride, offset)
    theirs = theirs_in.as_strided(size, stride, offset)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    weights = RNG.standard_normal(size)
    (ours * numdiff.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours_in.grad.numpy(), theirs_in.grad.numpy(), rtol=1e-14, atol=0.0)


def test_a_view_of_a_view_counts_the_storage_offset_as_torch():
    base = np.arange(20.0)
    ours, theirs = numdiff.tensor(base)[4:16], torch.tensor(base)[4:16]
    assert ours.storage_offset() == theirs.storage_offset() == 4
    for args in [((3, 2), (2, 1)), ((3, 2), (2, 1), 6), ((2, 2), (3, 1), 10)]:
        np.testing.assert_array_equal(ours.as_strided(*args).numpy(), theirs.as_strided(*args).numpy())
    np.testing.assert_array_equal(numdiff.as_strided(ours, (2,), (5,)).numpy(), torch.as_strided(theirs, (2,), (5,)).numpy())


def test_writes_through_the_view_reach_the_input():
    x = numdiff.zeros(6)
    view = x.as_strided((2, 2), (3, 1), 1)
    view.add_(1.0)
    assert x.tolist() == [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    x.mul_(2.0)
    assert view.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_under_vmap_each_example_gets_its_own_view():
    x = RNG.standard_normal((3, 2, 5))
    ours = numdiff.vmap(lambda a: a.as_strided((3, 2), (2, 1), 1))(numdiff.tensor(x))
    theirs = torch.vmap(lambda a: a.as_strided((3, 2), (2, 1), 1))(torch.tensor(x))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: numdiff.ones(6).as_strided((2, 2), (3, 1), 4), ValueError,
         r"as_strided: size=\(2, 2\), stride=\(3, 1\), storage_offset=4 reads storage elements 4..8, but the input .* "
         r"holds elements 0..5"),
        (lambda: numdiff.ones(3, 4).t().as_strided((2,), (1,)), ValueError,
         r"as_strided: .*contiguous=False"),
        (lambda: numdiff.arange(10.0)[2:].as_strided((2,), (1,), 0), ValueError,
         r"as_strided: .*storage_offset=0 reads storage elements 0..1, .* holds elements 2..9"),
        (lambda: numdiff.ones(6).as_strided((2,), (-1,), 3), ValueError,
         r"as_strided: size and stride must be non-negative, got size=\(2,\), stride=\(-1,\)"),
        (lambda: numdiff.ones(6).as_strided((2, 2), (1,)), ValueError,
         r"as_strided: size and stride must be sequences of ints of one length"),
        (lambda: numdiff.ones(6).as_strided((2,), (1,), -1), ValueError,
         r"as_strided: storage_offset must be a non-negative int, got -1"),
        (lambda: numdiff.as_strided([1.0, 2.0], (1,), (1,)), TypeError, r"as_strided: argument 'input' must be a Tensor, not list"),
    ],
)
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()
