"""PyTorch's other names (arccos, greater_equal, fix, ger, ...) are numdiff's originals themselves,
as functions, methods and in-place methods; and comparisons/logical ops work in place, writing
1/0 in the tensor's dtype. The fx examples (invert.py) use arcsin/arccos/arctan."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff._torch_aliases import ALIASES, INPLACE_ALIASES

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_alias_is_its_original_as_function_and_method(alias):
    original = ALIASES[alias]
    assert getattr(numdiff, alias) is getattr(numdiff, original)
    assert alias in numdiff.__all__
    if hasattr(torch.Tensor, alias):  # concatenate is a function only, in PyTorch too
        assert getattr(numdiff.Tensor, alias) is getattr(numdiff.Tensor, original)


@pytest.mark.parametrize("alias", sorted(INPLACE_ALIASES))
def test_in_place_aliases_are_the_original_in_place_methods(alias):
    assert getattr(numdiff.Tensor, alias) is getattr(numdiff.Tensor, INPLACE_ALIASES[alias])


@pytest.mark.parametrize("name", ["arccos", "arcsin", "arctan", "arctanh", "fix", "sgn"])
def test_alias_values_and_in_place_forms_match_torch(name):
    values = np.array([-0.7, -0.2, 0.3, 0.9])
    ours, theirs = numdiff.tensor(values), torch.tensor(values)
    np.testing.assert_allclose(getattr(numdiff, name)(ours).numpy(), getattr(torch, name)(theirs).numpy(), rtol=1e-12)
    getattr(ours, name + "_")()
    getattr(theirs, name + "_")()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_arcsin_has_the_gradient_of_asin():
    x = numdiff.tensor([0.1, -0.4], dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(numdiff.arcsin, (x,))


@pytest.mark.parametrize("name", ["eq_", "ne_", "gt_", "ge_", "lt_", "le_", "greater_", "less_equal_",
                                  "logical_and_", "logical_or_", "logical_xor_"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_comparisons_in_place_write_one_or_zero_in_the_tensors_dtype(name, dtype):
    a, b = np.array([1, 0, 2, -3]), np.array([1, 2, 0, -3])
    ours = numdiff.tensor(a, dtype=getattr(numdiff, dtype))
    theirs = torch.tensor(a, dtype=getattr(torch, dtype))
    assert getattr(ours, name)(numdiff.tensor(b, dtype=ours.dtype)) is ours
    getattr(theirs, name)(torch.tensor(b, dtype=theirs.dtype))
    assert ours.dtype == getattr(numdiff, dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_logical_not_in_place_and_a_scalar_comparison():
    m = numdiff.tensor([1, 0, 2])
    m.logical_not_()
    assert m.tolist() == [0, 1, 0]
    x = numdiff.tensor([0.5, -0.2])
    x.gt_(0.0)
    assert x.tolist() == [1.0, 0.0]


def test_in_place_comparison_on_a_leaf_that_requires_grad_is_refused():
    w = numdiff.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        w.gt_(0.5)
