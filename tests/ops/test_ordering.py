"""tril/triu, sort/argsort/topk, einsum, multinomial and list/range indexing against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff


def _pair(array: np.ndarray):
    return numdiff.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def _grads_match(ours, theirs, our_input, their_input, seed: int = 3) -> None:
    weight = np.random.default_rng(seed).standard_normal(tuple(ours.shape))
    (ours * numdiff.tensor(weight)).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(our_input.grad.numpy(), their_input.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [-2, 0, 1, 5])
def test_triangles_match_torch(op, diagonal):
    ours_in, theirs_in = _pair(np.random.default_rng(0).standard_normal((2, 3, 4)))
    ours, theirs = getattr(numdiff, op)(ours_in, diagonal), getattr(torch, op)(theirs_in, diagonal)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    _grads_match(ours, theirs, ours_in, theirs_in)


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangles_zero_nan_and_inf_in_the_dropped_part_and_keep_dtype(op):
    x = np.random.default_rng(1).standard_normal((3, 5, 4)).astype(np.float32)
    x[:, ::2] = np.nan
    x[:, 1, :] = -np.inf
    for diagonal in (-6, -1, 0, 2, 4):
        ours, theirs = getattr(numdiff, op)(numdiff.tensor(x), diagonal), getattr(torch, op)(torch.tensor(x), diagonal)
        assert ours.dtype == numdiff.float32
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        transposed = getattr(numdiff, op)(numdiff.tensor(x).mT, diagonal)
        np.testing.assert_array_equal(transposed.numpy(), getattr(torch, op)(torch.tensor(x).mT, diagonal).numpy())


def test_triangle_bad_inputs_name_the_op():
    with pytest.raises(RuntimeError, match=r"tril: input tensor must have at least 2 dimensions, got shape \(3,\)"):
        numdiff.tril(numdiff.ones(3))
    with pytest.raises(TypeError, match="triu: diagonal must be an int"):
        numdiff.triu(numdiff.ones(2, 2), 1.5)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_values_indices_and_gradients_match_torch(descending, dim):
    data = np.array([[3.0, 1.0, np.nan, 2.0, 1.0], [0.0, 5.0, 5.0, -1.0, 2.0], [1.0, 1.0, 1.0, 0.5, 9.0]])
    ours_in, theirs_in = _pair(data)
    ours = numdiff.sort(ours_in, dim=dim, descending=descending, stable=True)
    theirs = torch.sort(theirs_in, dim=dim, descending=descending, stable=True)
    np.testing.assert_array_equal(ours.values.detach().numpy(), theirs.values.detach().numpy())
    assert ours.indices.tolist() == theirs.indices.tolist() and ours.indices.dtype is numdiff.int64
    assert numdiff.argsort(ours_in, dim, descending).tolist() == theirs.indices.tolist()
    _grads_match(ours.values, theirs.values, ours_in, theirs_in)


def test_sort_keeps_integer_dtypes_and_handles_unsigned():
    data = np.array([3, 200, 0, 7], dtype=np.uint8)
    ours = numdiff.tensor(data).sort(descending=True)
    theirs = torch.tensor(data).sort(descending=True)
    assert ours.values.tolist() == theirs.values.tolist() and ours.values.dtype is numdiff.uint8


@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_torch(largest):
    data = np.random.default_rng(1).permutation(20).reshape(4, 5).astype(np.float64)
    ours_in, theirs_in = _pair(data)
    ours, theirs = numdiff.topk(ours_in, 3, dim=1, largest=largest), torch.topk(theirs_in, 3, dim=1, largest=largest)
    np.testing.assert_array_equal(ours.values.detach().numpy(), theirs.values.detach().numpy())
    assert ours.indices.tolist() == theirs.indices.tolist()
    _grads_match(ours.values, theirs.values, ours_in, theirs_in)
    values, indices = ours_in.topk(2, dim=0)
    assert values.shape == (2, 5) and indices.shape == (2, 5)


def test_topk_bad_k_says_the_range():
    with pytest.raises(RuntimeError, match=r"topk: k \(6\) must be an int in \[0, 5\]"):
        numdiff.topk(numdiff.ones(5), 6)
    with pytest.raises(RuntimeError):
        torch.topk(torch.ones(5), 6)
    with pytest.raises(IndexError, match="topk: dimension 2 is out of range"):
        numdiff.topk(numdiff.ones(2, 2), 1, dim=2)


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("i,i", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk", [(2, 1, 2, 3), (5, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij->ji", [(2, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ijk,jl,lk->i", [(2, 3, 4), (3, 5), (5, 4)]),
    ("bi,bi->b", [(1, 3), (4, 3)]),
    ("jii->ij", [(2, 3, 3)]),
    ("i ,->i", [(3,), ()]),
    # a summed or kept letter of size 0 (the size-1 default of the broadcast rule kept it at 1)
    ("ij,ij->i", [(3, 0), (3, 0)]),
    ("ij,jk->ik", [(3, 0), (0, 2)]),
    ("i,i->", [(0,), (0,)]),
    ("bi,bi->b", [(1, 0), (4, 0)]),
    ("bi,bj->bij", [(0, 2), (1, 3)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_torch_forward_and_gradients(equation, shapes):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in shapes]
    ours_in = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours, theirs = numdiff.einsum(equation, *ours_in), torch.einsum(equation, *theirs_in)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    weight = rng.standard_normal(tuple(ours.shape))
    (ours * numdiff.tensor(weight)).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    for a, b in zip(ours_in, theirs_in):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_einsum_takes_a_list_of_operands_and_second_derivatives():
    a = numdiff.tensor(np.random.default_rng(4).standard_normal((2, 3)), requires_grad=True)
    b = numdiff.tensor(np.random.default_rng(5).standard_normal((3, 2)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda x, y: numdiff.einsum("ij,jk->ik", [x, y]), (a, b))
    assert numdiff.autograd.gradgradcheck(lambda x, y: numdiff.einsum("ij,jk", x, y), (a, b))


@pytest.mark.parametrize(
    "equation,shapes,message",
    [
        ("ij,jk->ik", [(2, 3), (4, 5)], "subscript j has size 4 for operand 1"),
        ("ij,jk->ik", [(2, 3)], "names 2 operands but 1 were given"),
        ("ijk->i", [(2, 3)], r"subscripts 'ijk' do not fit an operand of shape \(2, 3\)"),
        ("ij->iij", [(2, 3)], "repeat a letter"),
        ("ij->z", [(2, 3)], r"output letters \['z'\] appear in no operand"),
        ("i1->i", [(2, 3)], "invalid subscripts"),
        ("ii->i", [(2, 3)], "subscript i has size 3 for operand 0"),
        ("ii->i", [(1, 3)], "subscript i is repeated for dimensions of sizes 1 and 3"),
    ],
)
def test_einsum_bad_equations_name_the_problem(equation, shapes, message):
    with pytest.raises(ValueError, match=message):
        numdiff.einsum(equation, *[numdiff.ones(*s) for s in shapes])


@pytest.mark.parametrize(
    "sublists,shapes",
    [
        (([0, 1, 2], [2, 3], [0, 3]), [(2, 3, 4), (4, 5)]),
        (([0, 1, 2], [2, 3]), [(2, 3, 4), (4, 5)]),
        (([7, 7],), [(4, 4)]),
        (([51, 0], [0]), [(3, 4)]),
        (([Ellipsis, 2], [2, 30], [Ellipsis, 30]), [(2, 3, 4), (4, 5)]),
        (([0], [1], [0, 1], [0]), [(3,), (4,), (3, 4)]),
    ],
)
def test_einsum_sublist_form_matches_torch_forward_and_gradients(sublists, shapes):
    rng = np.random.default_rng(6)
    pairs = [_pair(rng.standard_normal(shape)) for shape in shapes]

    def interleave(tensors):
        args = [item for tensor, sublist in zip(tensors, sublists) for item in (tensor, list(sublist))]
        return args + [list(sublists[-1])] if len(sublists) > len(shapes) else args

    ours = numdiff.einsum(*interleave([p[0] for p in pairs]))
    theirs = torch.einsum(*interleave([p[1] for p in pairs]))
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-12)
    _grads_match(ours, theirs, pairs[0][0], pairs[0][1])
    assert numdiff.autograd.gradcheck(lambda *xs: numdiff.einsum(*interleave(xs)), [p[0] for p in pairs])


def test_einsum_sublist_form_refuses_bad_subscripts_by_name():
    with pytest.raises(ValueError, match=r"einsum: a sublist subscript must be an int in \[0, 52\) or \.\.\., got 52"):
        numdiff.einsum(numdiff.ones(2, 2), [0, 52])
    with pytest.raises(TypeError, match="einsum: in the sublist form each operand is followed by a list of ints, got str"):
        numdiff.einsum(numdiff.ones(2, 2), "ij")


def test_einsum_refuses_non_tensors():
    with pytest.raises(TypeError, match="einsum: operands must be Tensors"):
        numdiff.einsum("i->i", np.ones(2))


def test_multinomial_draws_follow_the_weights():
    numdiff.manual_seed(0)
    weights = numdiff.tensor([1.0, 0.0, 3.0])
    draws = numdiff.multinomial(weights, 4000, replacement=True)
    counts = np.bincount(draws.numpy(), minlength=3) / 4000
    assert counts[1] == 0 and abs(counts[0] - 0.25) < 0.03 and abs(counts[2] - 0.75) < 0.03
    rows = numdiff.multinomial(numdiff.tensor([[0.0, 5.0, 1.0, 0.0], [2.0, 2.0, 2.0, 2.0]]), 4)
    assert rows.shape == (2, 4) and rows.dtype is numdiff.int64
    assert rows[0, :2].tolist() in ([1, 2], [2, 1]) and sorted(rows[1].tolist()) == [0, 1, 2, 3]


def test_multinomial_without_replacement_prefers_heavy_categories():
    numdiff.manual_seed(1)
    firsts = [numdiff.multinomial(numdiff.tensor([1.0, 9.0]), 1).item() for _ in range(400)]
    assert 0.85 < sum(firsts) / 400 < 0.95


@pytest.mark.parametrize(
    "weights,samples,kwargs,message",
    [
        ([0.0, 0.0], 1, {}, r"sum of probabilities <= 0"),
        ([-1.0, 2.0], 1, {}, "element < 0"),
        ([1.0, float("inf")], 1, {}, "inf"),
        ([1.0, 1.0], 0, {}, "cannot sample n_sample <= 0"),
        ([1.0, 1.0], 3, {}, "cannot sample n_sample > prob_dist.size"),
    ],
)
def test_multinomial_bad_inputs_match_torchs_errors(weights, samples, kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        numdiff.multinomial(numdiff.tensor(weights), samples, **kwargs)
    with pytest.raises(RuntimeError, match=message.replace("prob_dist.size", "prob_dist.size")):
        torch.multinomial(torch.tensor(weights), samples, **kwargs)


def test_multinomial_shape_and_dtype_errors():
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        numdiff.multinomial(numdiff.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="only supports floating-point"):
        numdiff.multinomial(numdiff.tensor([1, 2]), 1)


@pytest.mark.parametrize(
    "key",
    [range(3), range(0, 5, 2), range(0), [0, 2], [[0, 1], [1, 0]], (range(2), 1), [range(2), 0], [True, False, True, False, True]],
    ids=repr,
)
def test_indexing_with_ranges_and_lists_matches_torch(key):
    data = np.arange(10.0).reshape(5, 2)
    ours_in, theirs_in = _pair(data)
    ours, theirs = ours_in[key], theirs_in[key]
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    _grads_match(ours, theirs, ours_in, theirs_in)


def test_a_list_of_scalar_tensors_indexes_like_a_tuple():
    x, t = numdiff.arange(10.0).reshape(5, 2), torch.arange(10.0).reshape(5, 2)
    assert x[[numdiff.tensor(3), numdiff.tensor(1)]].item() == t[[torch.tensor(3), torch.tensor(1)]].item()


def test_assigning_through_a_range_index():
    x, t = numdiff.zeros(4, 2), torch.zeros(4, 2)
    x[range(1, 3)] = 5.0
    t[range(1, 3)] = 5.0
    assert x.tolist() == t.tolist()


def test_topk_values_match_torch_with_ties_and_nan():
    rng = np.random.default_rng(6)
    for trial in range(60):
        data = rng.integers(0, 4, (3, 7)).astype(np.float64)
        if trial % 3 == 0:
            data[0, 2] = np.nan
        k, largest = int(rng.integers(1, 8)), bool(trial % 2)
        ours = numdiff.topk(numdiff.tensor(data), k, largest=largest).values.numpy()
        theirs = torch.topk(torch.tensor(data), k, largest=largest).values.numpy()
        np.testing.assert_array_equal(ours, theirs)
