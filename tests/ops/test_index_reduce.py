"""index_reduce / Tensor.index_reduce_ against PyTorch: every reduction with and without the input's own
value, on every dim of a 3-d input with repeated and missing indices, ties and zeros, the gradients (amax,
amin: split among ties; prod: zeros included) and prod's second derivative, a float64 gradcheck, integer
means, and bad input refused by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.autograd import gradcheck

RNG = np.random.default_rng(7)


def _inputs(dim: int, n: int, self_ties: bool = True):
    # Small integers, so ties (and zeros, for prod) occur in every group; without self_ties, input's values
    # are half-integers, which tie with no source value.
    x = RNG.integers(-3, 4, (4, 3, 5)).astype(np.float64) + (0.0 if self_ties else 0.5)
    shape = list(x.shape)
    shape[dim] = n
    source = RNG.integers(-3, 4, shape).astype(np.float64)
    index = RNG.integers(0, x.shape[dim], n)
    index[: min(n, 2)] = 0  # a repeated index; with n < size some slices get none
    return x, index, source


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_reduce_matches_torch_with_gradients(reduce, include_self, dim):
    # Without include_self, PyTorch still counts an input value equal to the result among the ties it
    # splits the gradient between (halving the source's share, for a value that took no part); numdiff
    # splits among the values reduced. Such coincidences are left out of this comparison.
    x, index, source = _inputs(dim, 6, self_ties=include_self or reduce in ("prod", "mean"))
    differentiable = True
    theirs_in = [torch.tensor(a, requires_grad=differentiable) for a in (x, source)]
    ours_in = [numdiff.tensor(a, requires_grad=differentiable) for a in (x, source)]
    theirs = theirs_in[0].index_reduce(dim, torch.tensor(index), theirs_in[1], reduce, include_self=include_self)
    ours = ours_in[0].index_reduce(dim, numdiff.tensor(index), ours_in[1], reduce, include_self=include_self)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-14, atol=0.0)
    if differentiable:  # prod's gradient included: zeros (one or several per slot) occur in the groups
        weights = RNG.standard_normal(x.shape)
        (theirs * torch.tensor(weights)).sum().backward()
        (ours * numdiff.tensor(weights)).sum().backward()
        for mine, their in zip(ours_in, theirs_in):
            np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_in_place_and_function_forms_agree_with_torch(reduce):
    x, index, source = _inputs(2, 3)
    ours = numdiff.tensor(x)
    returned = ours.index_reduce_(2, numdiff.tensor(index), numdiff.tensor(source), reduce, include_self=False)
    assert returned is ours
    theirs = torch.tensor(x).index_reduce_(2, torch.tensor(index), torch.tensor(source), reduce, include_self=False)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    function = numdiff.index_reduce(numdiff.tensor(x), 2, numdiff.tensor(index), numdiff.tensor(source), reduce)
    np.testing.assert_array_equal(function.numpy(), torch.index_reduce(
        torch.tensor(x), 2, torch.tensor(index), torch.tensor(source), reduce).numpy())


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_float64_gradcheck(reduce):
    # Distinct values: gradcheck's central differences see no ties.
    x = numdiff.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    source = numdiff.tensor(RNG.standard_normal((3, 5)), requires_grad=True)
    index = numdiff.tensor([0, 3, 0, 1, 3])
    for include_self in (True, False):
        assert gradcheck(lambda a, s, keep=include_self: a.index_reduce(1, index, s, reduce, include_self=keep), (x, source))


def test_index_reduce_without_self_gives_a_lone_maximum_its_whole_gradient():
    x = numdiff.tensor([1.0, 5.0], dtype=numdiff.float64, requires_grad=True)
    source = numdiff.tensor([5.0], dtype=numdiff.float64, requires_grad=True)
    x.index_reduce(0, numdiff.tensor([1]), source, "amax", include_self=False).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0] and source.grad.tolist() == [1.0]


def test_index_reduce_prod_second_derivative_matches_torch():
    x = np.array([[2.0, 0.0, 3.0], [1.5, -1.0, 0.5]])
    source = np.array([[0.5, 4.0], [0.0, 2.0], [-1.0, 3.0]]).T.copy()
    index = [2, 2, 0]
    grads = []
    for lib in (numdiff, torch):
        a, s = lib.tensor(x, requires_grad=True), lib.tensor(source, requires_grad=True)
        out = a.index_reduce(1, lib.tensor(index), s, "prod")
        (ga,) = lib.autograd.grad(out.sum(), a, create_graph=True)
        (gs,) = lib.autograd.grad((ga * ga).sum(), s)
        grads.append(gs.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-13, atol=0.0)


@pytest.mark.filterwarnings("ignore")  # index_reduce's vmap loop warning (numdiff gives it once per process)
@pytest.mark.parametrize("reduce", ["prod", "amax"])
def test_index_reduce_under_vmap_matches_torch_func(reduce):
    x = RNG.standard_normal((3, 4, 2))
    ours = numdiff.vmap(lambda a: a.index_reduce(0, numdiff.tensor([0, 0, 3, 1]), a * 2, reduce))(numdiff.tensor(x))
    theirs = torch.vmap(lambda a: a.index_reduce(0, torch.tensor([0, 0, 3, 1]), a * 2, reduce))(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)


def test_index_reduce_integer_mean_floors_as_torch():
    x = [[1, 2, 3], [4, 5, 6]]
    source = [[5, 6], [7, -8]]
    ours = numdiff.tensor(x).index_reduce(1, numdiff.tensor([0, 0]), numdiff.tensor(source), "mean")
    theirs = torch.tensor(x).index_reduce(1, torch.tensor([0, 0]), torch.tensor(source), "mean")
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: numdiff.ones(3).index_reduce(0, numdiff.tensor([0]), numdiff.ones(1), "sum"), ValueError,
         r"index_reduce: reduce must be one of \('prod', 'mean', 'amax', 'amin'\), got 'sum'"),
        (lambda: numdiff.ones(3).index_reduce(0, numdiff.tensor([3]), numdiff.ones(1), "amax"), IndexError,
         r"index_reduce: index 3 is out of range for dim 0 of size 3"),
        (lambda: numdiff.ones(3).index_reduce(0, numdiff.tensor([-1]), numdiff.ones(1), "amax"), IndexError,
         r"index_reduce: index -1 is out of range"),
        (lambda: numdiff.ones(2, 3).index_reduce(1, numdiff.tensor([0, 1]), numdiff.ones(2, 3), "mean"), ValueError,
         r"index_reduce: source shape \(2, 3\) must be input's shape \(2, 3\) with dim 1 of size 2"),
        (lambda: numdiff.ones(3).index_reduce(0, numdiff.tensor([0.0]), numdiff.ones(1), "mean"), TypeError,
         r"index_reduce: index must be an int64 or int32 tensor, got .*float32"),
        (lambda: numdiff.ones(3).index_reduce(0, numdiff.tensor([[0]]), numdiff.ones(1), "mean"), ValueError,
         r"index_reduce: index must be a vector .* shape \(1, 1\)"),
        (lambda: numdiff.ones(3).index_reduce(0, numdiff.tensor([0]), numdiff.ones(1, dtype=numdiff.float64), "amax"),
         TypeError, r"index_reduce: source is .*float64 but input is .*float32"),
        (lambda: numdiff.tensor(1.0).index_reduce(0, numdiff.tensor([0]), numdiff.ones(1), "amax"), ValueError,
         r"index_reduce: input must have at least one dimension"),
    ],
)
def test_index_reduce_refuses_bad_input_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()
