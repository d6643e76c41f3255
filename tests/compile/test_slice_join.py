"""numdiff.compile.slice_join: the gradient of a split written into one array in the compiled
backward (no zero array per piece and no sum of them), results as eager's."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.compile.slice_join import _disjoint, _ranges

TOLERANCE = {numdiff.float64: 1e-12, numdiff.float32: 1e-5}


def _grads(fn, *inputs):
    for t in inputs:
        t.grad = None
    loss = fn(*inputs)
    loss.backward()
    return [loss.detach().numpy()] + [t.grad.numpy().copy() for t in inputs]


def _compare(fn, shapes, dtype):
    """fn compiled (traced on one draw, replayed on the next) against fn run eagerly; the backward's source."""
    compiled = numdiff.compile(fn)
    rng = np.random.default_rng(1)

    def draw():
        return [numdiff.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=True) for s in shapes]

    _grads(compiled, *draw())
    inputs = draw()
    got, want = _grads(compiled, *inputs), _grads(fn, *inputs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    (source,) = compiled.compiled.sources
    return source.split("def backward(")[1]


@pytest.mark.parametrize("dtype", [numdiff.float64, numdiff.float32])
def test_attention_qkv_split_gradient_is_one_array_and_matches_eager(dtype):
    fn = numdiff.nn.functional

    def attend(x, w):
        b, t, d = x.shape
        q, k, v = (x @ w).split(d, dim=2)
        q, k, v = (z.reshape(b, t, 2, d // 2).transpose(1, 2) for z in (q, k, v))
        y = fn.scaled_dot_product_attention(q, k, v, is_causal=True)
        return (y.transpose(1, 2).reshape(b, t, d) ** 2).sum()

    backward = _compare(attend, [(2, 5, 4), (4, 12)], dtype)
    # (the attention's own output gradient, padded by one column, keeps its one piece)
    assert "shape=(2, 5, 12, )" not in backward
    assert backward.count("np.empty((2, 5, 12), ") == 1 and "np.zeros((2, 5, 12)" not in backward
    # Each head-major piece gradient is written through a view of its columns, not copied into rows first.
    assert backward.count(".reshape((2, 5, 2, 2))[...] = v") == 3


def test_a_piece_whose_reshape_is_no_view_of_its_place_is_copied_first():
    def halves(x):
        left, right = x[:, :2].reshape(8), x[:, 2:4].reshape(8)  # short rows: no flat view of either
        return (left.exp() * right).sum()

    backward = _compare(halves, [(4, 4)], numdiff.float64)
    assert "IndexAddIntoZeros" not in backward and "[...] = v" not in backward


@pytest.mark.parametrize("dtype", [numdiff.float64, numdiff.float32])
def test_pieces_that_leave_elements_out_join_into_zeros(dtype):
    def gaps(x):
        a, b = x[:, :2], x[:, 3:]  # column 2 gets no gradient
        return (a.exp().sum() + (b * b).sum()) * 1.5

    backward = _compare(gaps, [(3, 6)], dtype)
    assert "IndexAddIntoZeros" not in backward and "np.zeros((3, 6)" in backward


def test_chunks_along_a_leading_dimension_and_integer_keys_join():
    def rows(x):
        first, rest = x[0], x[1:]
        u, v = rest.chunk(2, dim=0)
        return (first.sin() * 2).sum() + (u * v).sum() + u.sum()

    backward = _compare(rows, [(5, 3)], numdiff.float64)
    assert "IndexAddIntoZeros" not in backward


def test_overlapping_pieces_are_still_summed():
    def overlap(x):
        return (x[:, :3] ** 2).sum() + x[:, 2:].tanh().sum()

    backward = _compare(overlap, [(4, 5)], numdiff.float64)
    assert backward.count("IndexAddIntoZeros") == 2


def test_key_ranges_expand_ellipsis_negative_steps_and_integers():
    shape = (4, 6, 8)
    assert _ranges((Ellipsis, slice(0, 4)), shape) == [range(4), range(6), range(0, 4)]
    assert _ranges((-1,), shape) == [range(3, 4), range(6), range(8)]
    assert _ranges((slice(None, None, -2),), shape) == [range(3, -1, -2), range(6), range(8)]
    assert _ranges((None, 0), shape) is None  # a new axis is no basic piece of this shape
    assert _ranges((np.array([0, 1]),), shape) is None
    assert _disjoint(_ranges((slice(0, None, 2),), shape), _ranges((slice(1, None, 2),), shape))
    assert not _disjoint(_ranges((slice(0, 2), 1), shape), _ranges((1,), shape))
    assert _disjoint(_ranges((slice(0, 2),), shape), _ranges((slice(2, 4),), shape))
    assert not _disjoint(_ranges((slice(None, None, -1),), shape), _ranges((slice(3, 4),), shape))
    assert _disjoint(_ranges((slice(5, 5),), shape), _ranges((Ellipsis,), shape))  # an empty piece


def test_strided_pieces_are_written_through_flat_views():
    def interleaved(x):
        even, odd = x[:, 0::2].reshape(12), x[:, 1::2].reshape(12)  # every other column: one stride
        return (even.exp() * odd).sum()

    backward = _compare(interleaved, [(4, 6)], numdiff.float64)
    assert "IndexAddIntoZeros" not in backward and backward.count(".reshape((12,))[...] = v") == 2
