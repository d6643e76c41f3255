"""The second batch of PyTorch's names: host integer and IEEE functions, view scatters and copies,
torch.gradient, memory methods (data_ptr, storage_offset, resize_, apply_, map_), and the top-level
predicates and in-place forms, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.autograd import gradcheck

RNG = np.random.default_rng(9)
X = RNG.standard_normal((3, 5))


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_integer_functions_match_torch(name):
    a, b = [12, -18, 0, 7], [8, 27, 5, 0]
    ours = getattr(numdiff, name)(numdiff.tensor(a), numdiff.tensor(b))
    assert ours.tolist() == getattr(torch, name)(torch.tensor(a), torch.tensor(b)).tolist()
    with pytest.raises(TypeError, match=f"{name}: expected integer"):
        getattr(numdiff, name)(numdiff.ones(2), numdiff.ones(2))


def test_ieee_helpers_match_torch():
    x = [8.0, 0.3, -5.0, 0.0]
    mantissa, exponent = numdiff.frexp(numdiff.tensor(x))
    their_mantissa, their_exponent = torch.frexp(torch.tensor(x))
    assert mantissa.tolist() == their_mantissa.tolist() and exponent.tolist() == their_exponent.tolist()
    assert numdiff.nextafter(numdiff.tensor([1.0]), numdiff.tensor([2.0])).item() == torch.nextafter(torch.tensor([1.0]), torch.tensor([2.0])).item()
    # Mixed float dtypes promote, as in torch; integers are refused by name.
    mixed = numdiff.nextafter(numdiff.ones(1), numdiff.full((1,), 2.0, dtype=numdiff.float64))
    assert mixed.dtype is numdiff.float64 and mixed.item() == torch.nextafter(torch.ones(1), torch.full((1,), 2.0, dtype=torch.float64)).item()
    with pytest.raises((TypeError, NotImplementedError), match="nextafter"):
        numdiff.nextafter(numdiff.ones(1, dtype=numdiff.int64), numdiff.ones(1, dtype=numdiff.int64))


@pytest.mark.parametrize("kwargs", [{}, {"return_inverse": True, "return_counts": True}, {"dim": 0, "return_counts": True}])
def test_unique_consecutive_matches_torch(kwargs):
    data = [[1, 1, 2], [1, 1, 2], [3, 1, 1]] if "dim" in kwargs else [1, 1, 2, 2, 3, 1, 1, 2]
    ours = numdiff.unique_consecutive(numdiff.tensor(data), **kwargs)
    theirs = torch.unique_consecutive(torch.tensor(data), **kwargs)
    ours, theirs = (ours, theirs) if isinstance(theirs, tuple) else ((ours,), (theirs,))
    assert [o.tolist() for o in ours] == [t.tolist() for t in theirs]


CASES = {
    "select_scatter": (lambda lib, x, s: lib.select_scatter(x, s[0], 0, 1), [X, X]),
    "slice_scatter": (lambda lib, x, s: lib.slice_scatter(x, s[:, :2], 1, 1, 5, 2), [X, X]),
    "diagonal_scatter": (lambda lib, x, s: lib.diagonal_scatter(x, s[0, :3], 1), [X, X]),
    "diagonal_scatter_below": (lambda lib, x, s: lib.diagonal_scatter(x.t(), s[0, :3], -1), [X, X]),
    "gradient": (lambda lib, x: lib.stack(list(lib.gradient(x, spacing=0.5))), [X]),
    "gradient_dim": (lambda lib, x: lib.gradient(x, dim=1)[0], [X]),
    "split_with_sizes": (lambda lib, x: lib.split_with_sizes(x, [2, 3], 1)[1], [X]),
    "narrow_copy": (lambda lib, x: lib.narrow_copy(x, 1, 1, 3), [X]),
    "transpose_copy": (lambda lib, x: lib.transpose_copy(x, 0, 1), [X]),
    "fill": (lambda lib, x: lib.fill(x, 2.5) + x, [X]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_value_and_gradient_match_torch(case):
    function, arrays = CASES[case]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours_in = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    theirs, ours = function(torch, *theirs_in), function(numdiff, *ours_in)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    weights = RNG.standard_normal(tuple(theirs.shape))
    (theirs * torch.tensor(weights)).sum().backward()
    (ours * numdiff.tensor(weights)).sum().backward()
    for mine, their in zip(ours_in, theirs_in):
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), rtol=1e-10)
    assert gradcheck(lambda *xs: function(numdiff, *xs), [numdiff.tensor(a, requires_grad=True) for a in arrays])


def test_view_scatters_refuse_a_src_of_the_wrong_shape():
    with pytest.raises(ValueError, match="select_scatter: src must have shape"):
        numdiff.select_scatter(numdiff.zeros(2, 3), numdiff.ones(2), 0, 0)
    with pytest.raises(ValueError, match="diagonal_scatter: src must have shape"):
        numdiff.diagonal_scatter(numdiff.zeros(2, 3), numdiff.ones(3))
    with pytest.raises(ValueError, match="split_with_sizes: sizes"):
        numdiff.split_with_sizes(numdiff.zeros(5), [2, 2])
    with pytest.raises(ValueError, match="gradient: dimension 0 needs at least 2"):
        numdiff.gradient(numdiff.zeros(1))


def test_memory_methods_match_torch():
    base = numdiff.arange(6.0)
    view = base[2:]
    their_base = torch.arange(6.0)
    assert view.storage_offset() == their_base[2:].storage_offset() == 2
    assert view.data_ptr() - base.data_ptr() == their_base[2:].data_ptr() - their_base.data_ptr()
    grown = numdiff.tensor([1.0, 2.0]).resize_(2, 2)
    assert tuple(grown.shape) == (2, 2) and grown.flatten()[:2].tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="resize_: cannot resize a view"):
        view.resize_(2)
    with pytest.raises(RuntimeError, match="resize_: cannot resize a tensor that requires grad"):
        numdiff.ones(2, requires_grad=True).resize_(3)
    values = numdiff.tensor([1.0, 2.0])
    values.apply_(lambda v: v * 10)
    values.map_(numdiff.tensor([1.0, 2.0]), lambda a, b: a + b)
    assert values.tolist() == [11.0, 22.0]


def test_toplevel_predicates_and_inplace_forms():
    assert numdiff.is_nonzero(numdiff.tensor([3])) and not numdiff.is_complex(numdiff.ones(1))
    assert numdiff.is_same_size(numdiff.ones(2, 3), numdiff.zeros(2, 3)) and numdiff.is_signed(numdiff.ones(1))
    assert numdiff.get_device(numdiff.ones(1)) == -1
    assert numdiff.concatenate([numdiff.ones(1), numdiff.zeros(2)], axis=0).tolist() == [1.0, 0.0, 0.0]
    x = numdiff.tensor([0.5])
    assert numdiff.arccos_(x) is x
    kept = numdiff.ones(1000)
    numdiff.dropout_(kept, 0.5, True)
    assert set(kept.unique().tolist()) <= {0.0, 2.0}
    y = numdiff.tensor([0.5])
    y.logit_()
    assert y.tolist() == [0.0]
