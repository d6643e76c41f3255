"""vmap's batching rules against torch.func.vmap in float64: in_dims/out_dims, broadcasting with
unbatched operands, every rule family, batched weights, nesting, and no fallback loops."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn.functional as nf
from numdiff import func

RNG = np.random.default_rng(3)


def _pair(*shape: int):
    data = RNG.standard_normal(shape)
    return numdiff.tensor(data), torch.tensor(data)


def _check(fn, *shapes, in_dims=0, out_dims=0, int_args=()):
    """vmap(fn) on numdiff and torch with the same data; fn(lib, fnn, *args). No loop fallback."""
    pairs = [_pair(*s) for s in shapes]
    ours_args = [p[0] for p in pairs] + [numdiff.tensor(a) for a in int_args]
    their_args = [p[1] for p in pairs] + [torch.tensor(a) for a in int_args]
    with warnings.catch_warnings():
        warnings.simplefilter("error", func.VmapPerformanceWarning)
        ours = func.vmap(lambda *a: fn(numdiff, nf, *a), in_dims=in_dims, out_dims=out_dims)(*ours_args)
    theirs = torch.func.vmap(lambda *a: fn(torch, torch.nn.functional, *a), in_dims=in_dims, out_dims=out_dims)(*their_args)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


CASES = {
    "broadcast_unbatched_higher_rank": (lambda lib, fn, a, b: a * b + b.exp(), [(4, 3), (2, 3)], (0, None)),
    "where_and_comparison": (lambda lib, fn, a, b: lib.where(a > b, a, b * 2), [(4, 3), (4, 1, 3)], (0, 0)),
    "reductions": (lambda lib, fn, a: a.sum(0) + a.amax(1).sum() + a.mean((0, 1), keepdim=True).squeeze(0), [(4, 2, 3)], 0),
    "shape_ops": (lambda lib, fn, a: a.reshape(3, 2).t().flip(0).unsqueeze(0).expand(2, 2, 3)[:, 1, ::2], [(4, 2, 3)], 0),
    "cat_and_stack": (lambda lib, fn, a, b: lib.cat([a, b], 0) + lib.stack([a, b], 0).sum(0).repeat(2, 1), [(4, 2, 3), (2, 3)], (0, None)),
    "matmul_vector_matrix": (lambda lib, fn, a, b: a @ b, [(4, 3), (3, 5)], (0, None)),
    "matmul_matrix_vector": (lambda lib, fn, a, b: b @ a, [(4, 3), (5, 3)], (0, None)),
    "matmul_both_batched": (lambda lib, fn, a, b: a @ b, [(4, 2, 3), (4, 3, 2)], (0, 0)),
    "batched_matmul_unbatched_3d": (lambda lib, fn, a, b: a @ b, [(4, 3), (2, 3, 5)], (0, None)),
    "linear_softmax": (lambda lib, fn, a, w: fn.softmax(fn.linear(a, w), -1), [(4, 3), (5, 3)], (0, None)),
    "conv2d_and_pools": (
        lambda lib, fn, x, w: fn.avg_pool2d(fn.max_pool2d(fn.conv2d(x, w, padding=1), 2), 1),
        [(3, 1, 2, 4, 4), (4, 2, 3, 3)],
        (0, None),
    ),
    "conv2d_batched_weight": (lambda lib, fn, x, w: fn.conv2d(x, w, stride=2), [(3, 1, 2, 5, 5), (3, 4, 2, 3, 3)], (0, 0)),
    "conv_transpose2d": (lambda lib, fn, x, w: fn.conv_transpose2d(x, w, stride=2), [(3, 1, 2, 4, 4), (2, 3, 3, 3)], (0, None)),
    "scatter_add": (lambda lib, fn, a, b: a.scatter_add(1, lib.tensor([[0, 2, 2]]), b), [(4, 2, 3), (4, 1, 3)], (0, 0)),
    "in_dim_1_out_dim_1": (lambda lib, fn, a: a.tanh() * 2, [(3, 4)], 1),
    "pad_and_setitem": (lambda lib, fn, a, b: fn.pad(a, (1, 2)) * 2 + fn.pad(b, (0, 3)).sum(), [(4, 2, 3), (4, 3)], (0, 0)),
    "mse_and_gather": (lambda lib, fn, a, b: fn.mse_loss(a, b) + a.gather(0, lib.tensor([1, 0])).sum(), [(4, 3), (4, 3)], 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_rule_matches_torch(name):
    fn, shapes, in_dims = CASES[name]
    out_dims = 1 if name == "in_dim_1_out_dim_1" else 0
    _check(fn, *shapes, in_dims=in_dims, out_dims=out_dims)


def test_cross_entropy_with_batched_targets():
    _check(lambda lib, fn, a, t: fn.cross_entropy(a, t), (4, 2, 3), in_dims=(0, 0), int_args=(RNG.integers(0, 3, (4, 2)),))


def test_nested_vmap_matches_torch():
    (a, ta), (b, tb) = _pair(2, 3, 4), _pair(3, 4)
    ours = func.vmap(func.vmap(lambda x, y: (x * y).sum(), in_dims=(0, None)), in_dims=(0, None))(a, b)
    theirs = torch.func.vmap(torch.func.vmap(lambda x, y: (x * y).sum(), in_dims=(0, None)), in_dims=(0, None))(ta, tb)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_per_sample_conv_weight_gradients_match_torch():
    (x, tx), (w, tw) = _pair(3, 1, 1, 5, 5), _pair(2, 1, 3, 3)

    def loss(lib, fn, weight, sample):
        return fn.max_pool2d(fn.conv2d(sample, weight).tanh(), 2).sum()

    ours = func.vmap(func.grad(lambda wt, s: loss(numdiff, nf, wt, s)), in_dims=(None, 0))(w, x)
    theirs = torch.func.vmap(torch.func.grad(lambda wt, s: loss(torch, torch.nn.functional, wt, s)), in_dims=(None, 0))(tw, tx)
    # Float64 sums of nine products in another order: entries near 1e-7 differ from torch's by ~1e-16.
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-14)


def test_gradient_flows_through_vmap_to_outer_tensors():
    data = RNG.standard_normal((4, 3))
    x = numdiff.tensor(data, requires_grad=True)
    func.vmap(lambda r: (r.sin() * r).sum())(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.sin(data) + data * np.cos(data), rtol=1e-12)


def test_module_level_comparisons_logical_ops_and_argmax_batch():
    data = RNG.standard_normal((4, 3))
    x = numdiff.tensor(data)

    def per_row(r):
        mask = numdiff.logical_not(numdiff.gt(r, 0.0)) | numdiff.isnan(r)
        return numdiff.where(mask, numdiff.argmax(r).to(numdiff.float64), numdiff.div(r, 0.5, rounding_mode="floor"))

    out = func.vmap(per_row)(x)
    expected = np.where(~(data > 0), np.argmax(data, 1)[:, None].astype(float), np.floor_divide(data, 0.5))
    np.testing.assert_allclose(out.numpy(), expected)
    flags = func.vmap(lambda r: numdiff.stack([numdiff.all(r > -5.0), numdiff.any(r > 0.0)]))(x)
    np.testing.assert_array_equal(flags.numpy(), np.stack([np.all(data > -5, 1), np.any(data > 0, 1)], 1))


def test_chunk_size_gives_the_same_result_in_slices():
    (x, tx), (w, tw) = _pair(3, 7), _pair(3, 2)
    ours = func.vmap(lambda r, m: (r @ m).tanh(), in_dims=(1, None), out_dims=1, chunk_size=2)(x, w)
    theirs = torch.func.vmap(lambda r, m: (r @ m).tanh(), in_dims=(1, None), out_dims=1, chunk_size=2)(tx, tw)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        func.vmap(lambda r: r, chunk_size=0)


def test_sort_topk_median_and_mode_order_every_example_not_the_first():
    # argsort and topk read the values on the host: under vmap they must order each example's
    # values (they once ordered every example by the first's), nested vmaps and grad included.
    data = RNG.standard_normal((4, 2, 5))
    data[:, :, 3] = data[:, :, 1]  # ties, for mode and the stable order
    x, tx = numdiff.tensor(data), torch.tensor(data)

    def per_example(lib, r):
        values, indices = r.sort(-1, descending=True)
        top_values = r.topk(2, dim=1, largest=False).values  # (torch orders tied indices its own way)
        return lib.cat([
            values, indices.to(r.dtype), top_values, r.topk(2, 0).indices.to(r.dtype), r.argsort(0).to(r.dtype),
            r.median(1).values.unsqueeze(1), r.mode(1).values.unsqueeze(1),
        ], 1)

    ours = func.vmap(lambda r: per_example(numdiff, r))(x)
    theirs = torch.func.vmap(lambda r: per_example(torch, r))(tx)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    nested = func.vmap(func.vmap(lambda r: r.sort().values), in_dims=1)(x)
    np.testing.assert_allclose(nested.numpy(), np.sort(data, -1).transpose(1, 0, 2), rtol=1e-12)
    distinct = RNG.standard_normal((4, 2, 5))  # no ties: torch sends a tie's gradient its own way
    grads = func.vmap(func.grad(lambda r: (r.topk(2, dim=1).values ** 2).sum()))(numdiff.tensor(distinct))
    their_grads = torch.func.vmap(torch.func.grad(lambda r: (r.topk(2, dim=1).values ** 2).sum()))(torch.tensor(distinct))
    np.testing.assert_allclose(grads.numpy(), their_grads.numpy(), rtol=1e-12)


def test_index_tensors_batched_by_vmap_index_each_example_with_its_own_indices():
    # An index tensor's values were read from its array, which for a batched tensor is the first
    # example only: every example was indexed with the first example's indices.
    data = RNG.standard_normal((4, 5))
    indices = np.array([[0, 1, 2], [4, 3, 2], [1, 1, 1], [0, 4, 0]])
    x, tx = numdiff.tensor(data), torch.tensor(data)
    i, ti = numdiff.tensor(indices), torch.tensor(indices)

    def per_example(lib, fn, r, k):
        written = r.clone()
        written[k] = -1.0
        return lib.cat([
            r[k], r.index_select(0, k), written, r.index_add(0, k, r[:3] * 2),
            fn.embedding(k, r.reshape(5, 1)).reshape(3), fn.one_hot(k, 5).to(r.dtype).reshape(15),
        ])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", func.VmapPerformanceWarning)
        ours = func.vmap(lambda r, k: per_example(numdiff, nf, r, k))(x, i)
        grads = func.vmap(func.grad(lambda r, k: (r[k] ** 2).sum()))(x, i)
        nested = func.vmap(func.vmap(lambda r, k: r[k]), in_dims=(0, None))(numdiff.tensor(data[None].repeat(2, 0)), i)
    theirs = torch.func.vmap(lambda r, k: per_example(torch, torch.nn.functional, r, k))(tx, ti)
    their_grads = torch.func.vmap(torch.func.grad(lambda r, k: (r[k] ** 2).sum()))(tx, ti)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads.numpy(), their_grads.numpy(), rtol=1e-12)
    np.testing.assert_allclose(nested.numpy(), np.take_along_axis(data, indices, 1)[None].repeat(2, 0), rtol=1e-12)


def test_data_dependent_shapes_from_batched_values_raise():
    x = numdiff.tensor(RNG.standard_normal((3, 4)))
    counts = numdiff.tensor(np.array([[1, 0, 2, 1], [0, 1, 1, 0], [4, 0, 0, 0]]))
    mask = numdiff.tensor(np.array([[True, False, True, True], [False, True, True, False], [True, False, False, False]]))
    with pytest.raises(func.VmapDataDependentError, match="repeat_interleave"):
        func.vmap(lambda r, c: r.repeat_interleave(c))(x, counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", func.VmapPerformanceWarning)
        with pytest.raises(func.VmapDataDependentError, match="different shapes"):
            func.vmap(lambda r, m: r[m])(x, mask)
        with pytest.raises(func.VmapDataDependentError, match="num_classes"):
            func.vmap(lambda c: nf.one_hot(c))(counts)


def test_an_empty_batch_maps_to_an_empty_result():
    # A batched tensor's stand-in array was its first example, which an empty batch lacks: every
    # vmap over a size-0 dim raised an IndexError from NumPy.
    empty = numdiff.zeros(0, 3, dtype=numdiff.float64)
    assert func.vmap(lambda r: (r * 2).softmax(0))(empty).shape == (0, 3)
    assert func.vmap(lambda r: r @ r)(empty).shape == (0,)
    assert func.vmap(func.grad(lambda r: (r ** 2).sum()))(empty).shape == (0, 3)
    assert func.jacrev(lambda r: r.sin())(numdiff.zeros(0, dtype=numdiff.float64)).shape == (0, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", func.VmapPerformanceWarning)
        picked = func.vmap(lambda r, i: r[i])(empty, numdiff.zeros(0, 2, dtype=numdiff.int64))
    assert picked.shape == (0, 2)


def test_out_dims_match_the_output_structure_as_a_prefix():
    # out_dims were flattened and paired with the outputs by position: (1, 0) for an output
    # (a, (b, c)) was refused, and ((1, 0), 0) for it was silently applied as 1, 0, 0.
    (x, tx) = _pair(4, 3)

    def fn(r):
        return r, (r * 3, r.sum(0, keepdim=True))

    for out_dims in ((1, 0), (0, (1, 0)), (0, 1)):
        for chunk_size in (None, 3):
            ours = func.vmap(fn, out_dims=out_dims, chunk_size=chunk_size)(x)
            theirs = torch.func.vmap(fn, out_dims=out_dims, chunk_size=chunk_size)(tx)
            for a, b in zip((ours[0], *ours[1]), (theirs[0], *theirs[1])):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match=r"out_dims .* does not match the structure of the function's output"):
        func.vmap(fn, out_dims=((1, 0), 0))(x)
    assert func.vmap(lambda r: r * 2, out_dims=(1,))(x).shape == (3, 4)


def test_in_dims_match_each_argument_as_a_prefix():
    # A nested in_dims entry was flattened and paired with the argument's tensors by position:
    # (0, None) for an argument (a, (b, c)) was refused, and ((0, 0), 0) silently read as 0, 0, 0.
    (x, tx), (v, tv) = _pair(4, 3), _pair(3)

    def fn(p):
        return p[0] * p[1][0] + p[1][1]

    for in_dims in (((0, None),), ((0, (0, None)),)):
        ours = func.vmap(fn, in_dims=in_dims)((x, (x, v)))
        theirs = torch.func.vmap(fn, in_dims=in_dims)((tx, (tx, tv)))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match=r"in_dims \(0, 0\) does not match the structure of its argument"):
        func.vmap(fn, in_dims=(((0, 0), 0),))((x, (x, x)))


def test_gather_and_scatter_check_the_indices_of_every_example():
    # The range check read a batched index's array, the first example only: a bad index in another
    # example reached the op unchecked (NumPy's IndexError on the CPU; a kernel elsewhere would
    # read or write out of bounds).
    x = numdiff.tensor(RNG.standard_normal((3, 4)))
    bad = numdiff.tensor(np.array([[0, 1], [2, 9], [1, 1]]))
    for name, fn in (
        ("gather", lambda a, k: a.gather(0, k)),
        ("scatter_add", lambda a, k: a.scatter_add(0, k, a[:2] * 1.0)),
        ("scatter", lambda a, k: a.scatter(0, k, 1.0)),
    ):
        with pytest.raises(IndexError, match=rf"{name}: index values must be in \[0, 4\).*got values in \[0, 9\]"):
            func.vmap(fn)(x, bad)
