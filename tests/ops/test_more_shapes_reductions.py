"""rot90, tensor_split, std_mean/var_mean, dist and prelu/PReLU against PyTorch, with bad input
named clearly (their gradients are checked through the op case table)."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf

torch = pytest.importorskip("torch")

X = np.arange(24.0).reshape(2, 3, 4)


@pytest.mark.parametrize("k", range(-5, 6))
@pytest.mark.parametrize("dims", [(0, 1), (1, 2), (2, 0), (-1, -2)])
def test_rot90_matches_torch(k, dims):
    np.testing.assert_array_equal(numdiff.rot90(numdiff.tensor(X), k, dims).numpy(), torch.rot90(torch.tensor(X), k, dims).numpy())


@pytest.mark.parametrize("split", [2, 3, 5, 7, [1, 3], [-2], [0, 10], [3, 1], (2,)])
@pytest.mark.parametrize("dim", [0, 2, -1])
def test_tensor_split_matches_torch(split, dim):
    ours = numdiff.tensor_split(numdiff.tensor(X), split, dim)
    theirs = torch.tensor_split(torch.tensor(X), split, dim)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


@pytest.mark.parametrize("kwargs", [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}, {"dim": 1, "correction": 0}, {"dim": -1, "unbiased": False}])
@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
def test_std_mean_and_var_mean_match_torch(name, kwargs):
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    for ours, theirs in zip(getattr(numdiff, name)(numdiff.tensor(x), **kwargs), getattr(torch, name)(torch.tensor(x), **kwargs)):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("p", [0, 1, 2, 3.5, float("inf")])
def test_dist_matches_torch(p):
    y = np.random.default_rng(1).standard_normal((3, 4))
    expected = torch.dist(torch.tensor(X[0]), torch.tensor(y), p).numpy()
    np.testing.assert_allclose(numdiff.dist(numdiff.tensor(X[0]), numdiff.tensor(y), p).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(numdiff.tensor(X[0]).dist(numdiff.tensor(y), p).numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("slopes", [1, 3])
def test_prelu_layer_matches_torch(slopes):
    z = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    ours, theirs = numdiff.nn.PReLU(slopes, 0.1), torch.nn.PReLU(slopes, 0.1)
    assert repr(ours) == repr(theirs) and sorted(ours.state_dict()) == sorted(theirs.state_dict())
    x, tx = numdiff.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    out, t_out = ours(x), theirs(tx)
    out.sum().backward()
    t_out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-5)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"rot90: dims must name 2 different dimensions, got \(1, 1\)"):
        numdiff.rot90(numdiff.tensor(X), 1, (1, 1))
    with pytest.raises(ValueError, match=r"rot90: expects a tensor with at least 2 dimensions, got shape \(3,\)"):
        numdiff.rot90(numdiff.ones(3))
    with pytest.raises(ValueError, match="tensor_split: number of sections must be larger than 0, got 0"):
        numdiff.tensor_split(numdiff.ones(3), 0)
    with pytest.raises(TypeError, match="tensor_split: indices_or_sections must be an int, a sequence of ints or a tensor, got float"):
        numdiff.tensor_split(numdiff.ones(3), 1.5)
    with pytest.raises(ValueError, match=r"prelu: weight has 3 slopes but input of shape \(2, 4\) has 4 channels"):
        nf.prelu(numdiff.ones(2, 4), numdiff.ones(3))
    with pytest.raises(TypeError, match="prelu: expected a floating point tensor"):
        nf.prelu(numdiff.tensor([1, 2]), numdiff.ones(1))
    with pytest.raises(TypeError, match="prelu: weight has dtype numdiff.float64 but input has dtype numdiff.float32"):
        nf.prelu(numdiff.ones(2, 3), numdiff.ones(3, dtype=numdiff.float64))
