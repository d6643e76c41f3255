"""bernoulli, normal, randint_like, tril/triu_indices and PyTorch's small module-level names
(is_tensor, numel, pi, ...): their values against PyTorch or known properties, with fixed seeds,
and clear errors for bad arguments. Statistical checks use tolerances many standard errors wide."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")


def test_bernoulli_draws_with_each_elements_probability():
    numdiff.manual_seed(0)
    probabilities = numdiff.tensor(np.repeat([[0.0, 0.2, 0.7, 1.0]], 20000, axis=0))
    draws = numdiff.bernoulli(probabilities)
    assert draws.dtype == numdiff.float64 and draws.shape == probabilities.shape
    assert set(np.unique(draws.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.numpy().mean(0), [0.0, 0.2, 0.7, 1.0], atol=0.02)
    assert numdiff.ones(3).bernoulli(0.0).tolist() == [0.0, 0.0, 0.0]
    x = numdiff.zeros(4)
    assert x.bernoulli_(1.0) is x and x.tolist() == [1.0] * 4


def test_bernoulli_with_a_seed_repeats():
    numdiff.manual_seed(3)
    first = numdiff.bernoulli(numdiff.full((50,), 0.5))
    numdiff.manual_seed(3)
    assert numdiff.bernoulli(numdiff.full((50,), 0.5)).tolist() == first.tolist()


def test_normal_in_each_of_pytorchs_forms():
    numdiff.manual_seed(0)
    sample = numdiff.normal(numdiff.full((40000,), 3.0), numdiff.full((40000,), 2.0))
    assert abs(float(sample.mean()) - 3.0) < 0.05 and abs(float(sample.std()) - 2.0) < 0.05
    assert numdiff.normal(2.0, 0.0, (3,)).tolist() == [2.0, 2.0, 2.0]
    assert numdiff.normal(numdiff.zeros(2, 1), numdiff.ones(3)).shape == (2, 3)
    assert numdiff.normal(0.0, numdiff.ones(3)).shape == (3,)
    assert numdiff.normal(numdiff.zeros(2), 1.0).dtype == numdiff.float32
    assert numdiff.normal(0.0, 1.0, (2,), requires_grad=True).requires_grad


def test_sampling_refuses_bad_arguments():
    with pytest.raises(ValueError, match=r"bernoulli: every probability must lie in \[0, 1\]"):
        numdiff.bernoulli(numdiff.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match=r"bernoulli: every probability must lie in \[0, 1\]"):
        numdiff.bernoulli(numdiff.tensor([math.nan]))
    with pytest.raises(TypeError, match="bernoulli: expected a floating point tensor of probabilities, got dtype numdiff.int64"):
        numdiff.bernoulli(numdiff.tensor([1]))
    with pytest.raises(ValueError, match=r"bernoulli: p must be a number in \[0, 1\], got 2"):
        numdiff.bernoulli(numdiff.ones(2), 2)
    with pytest.raises(TypeError, match="normal: with a number mean and std, give the size of the sample"):
        numdiff.normal(0.0, 1.0)
    with pytest.raises(ValueError, match="normal: std must be at least 0, got -1.0"):
        numdiff.normal(numdiff.zeros(2), -1.0)
    with pytest.raises(ValueError, match="normal: every std must be at least 0"):
        numdiff.normal(numdiff.zeros(2), numdiff.tensor([1.0, -1.0]))
    with pytest.raises(TypeError, match="normal: mean must be a Tensor or a number, got str"):
        numdiff.normal("a", 1.0, (2,))


@pytest.mark.parametrize("row, col, offset", [(3, 3, 0), (3, 4, 1), (4, 3, -1), (0, 3, 0), (5, 2, 3)])
def test_triangle_indices_match_torch(row, col, offset):
    assert numdiff.tril_indices(row, col, offset).tolist() == torch.tril_indices(row, col, offset).tolist()
    assert numdiff.triu_indices(row, col, offset).tolist() == torch.triu_indices(row, col, offset).tolist()
    assert numdiff.tril_indices(row, col, offset).dtype == numdiff.int64
    with pytest.raises(ValueError, match="tril_indices: row and col must be at least 0, got 3 and -1"):
        numdiff.tril_indices(3, -1)


def test_randint_like_and_the_small_names():
    numdiff.manual_seed(0)
    ints = numdiff.randint_like(numdiff.zeros(1000, dtype=numdiff.int64), 3, 5)
    assert ints.dtype == numdiff.int64 and set(ints.tolist()) == {3, 4}
    assert numdiff.randint_like(numdiff.zeros(2, 2), 5).dtype == numdiff.float32
    assert numdiff.is_tensor(numdiff.ones(1)) and numdiff.is_tensor(numdiff.nn.Parameter(numdiff.ones(1)))
    assert not numdiff.is_tensor(np.ones(1))
    assert numdiff.numel(numdiff.ones(2, 3)) == 6
    assert numdiff.is_floating_point(numdiff.ones(1)) and not numdiff.is_floating_point(numdiff.tensor([1]))
    assert (numdiff.pi, numdiff.e, numdiff.inf) == (torch.pi, torch.e, torch.inf) and math.isnan(numdiff.nan)
