"""numdiff.kernels.reduce_sum: one pass over a contiguous array for sums over interleaved or short
innermost axes (a broadcast's gradient), equal to np.sum on every axis pattern; bad arguments refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numdiff
from numdiff.kernels._parallel import always_parallel, always_serial
from numdiff.kernels.reduce_sum import SHORT_INNER_SUM, collapse_axes, sum_dims

PATTERNS = [
    ((4, 3, 5, 2, 6, 2), (3, 5)),  # nearest Upsample(2)'s gradient
    ((2, 3, 4, 3, 5, 3, 2, 3), (3, 5, 7)),  # 3-d nearest upsample
    ((3, 4, 2, 5, 3), (0, 2, 4)),  # leading summed axis too
    ((7, 1, 3, 1, 4), (1, 3, 4)),  # size-1 axes among them
    ((9, 2), (1,)),
    ((5, 70), (1,)),  # one long innermost run a row
    ((6, 5, 4), (0, 1)),  # a kept innermost axis: np.sum's own route
    ((2, 3, 4), ()),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dims", PATTERNS)
@pytest.mark.parametrize("build", [always_serial, always_parallel])
def test_sum_dims_matches_numpy(shape, dims, dtype, build):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    out = np.full(tuple(1 if a in dims else n for a, n in enumerate(shape)), np.nan, dtype)
    with build():
        sum_dims(x, dims, out)
    expected = x.astype(np.float64).sum(axis=dims, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=6), st.data())
def test_sum_dims_matches_numpy_on_drawn_patterns(shape, data):
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    out = np.empty(tuple(1 if a in dims else n for a, n in enumerate(shape)))
    sum_dims(x, dims, out)
    np.testing.assert_allclose(out, x.sum(axis=dims, keepdims=True), rtol=1e-12, atol=1e-12)


def test_columns_split_over_threads_when_rows_are_few():
    # One output row of 600 columns: the parallel build splits its columns into blocks.
    x = np.random.default_rng(2).standard_normal((1, 600, 3))
    out = np.empty((1, 600, 1))
    with always_parallel():
        sum_dims(x, (2,), out)
    np.testing.assert_allclose(out, x.sum(axis=2, keepdims=True), rtol=1e-12)


def test_collapse_axes_merges_neighbours_and_drops_ones():
    assert collapse_axes((4, 8, 2, 16, 2), (2, 4)) == ([32, 16], [2, 2])
    assert collapse_axes((5, 1, 3, 7), (0, 3)) == ([1, 3], [5, 7])
    assert collapse_axes((1, 1), (0,)) == ([1], [1])
    assert SHORT_INNER_SUM >= 2


def test_sum_dims_names_the_kernel_and_shapes_for_a_wrong_out():
    with pytest.raises(ValueError, match=r"sum_dims: out has shape \(2, 3\), expected \(2, 1\)"):
        sum_dims(np.ones((2, 3)), (1,), np.empty((2, 3)))


def test_non_contiguous_and_integer_inputs_take_numpys_route():
    x = np.random.default_rng(3).standard_normal((4, 6, 2))[:, ::2]
    out = np.empty((4, 1, 1))
    sum_dims(x, (1, 2), out)
    np.testing.assert_allclose(out, x.sum(axis=(1, 2), keepdims=True))
    counts = np.arange(24).reshape(2, 3, 4)
    out_int = np.empty((2, 1, 1), np.int64)
    sum_dims(counts, (1, 2), out_int)
    np.testing.assert_array_equal(out_int, counts.sum(axis=(1, 2), keepdims=True))


@pytest.mark.parametrize("dtype", [numdiff.float32, numdiff.float64])
def test_expand_backward_sums_every_broadcast_pattern(dtype):
    # Expand's backward is Sum over the broadcast axes: a nearest-upsample pattern and a leading one.
    base = numdiff.randn(2, 3, 4, 1, 5, 1, dtype=dtype, requires_grad=True)
    out = base.expand(2, 3, 4, 2, 5, 3)
    weights = numdiff.randn(6, 2, 3, 4, 2, 5, 3, dtype=dtype)
    (out * weights).sum().backward()
    expected = weights.numpy().sum(axis=(0, 4, 6), keepdims=True)[0]
    np.testing.assert_allclose(base.grad.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_sum_over_interleaved_axes_has_a_gradient():
    x = numdiff.randn(2, 3, 2, 4, 2, dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: t.sum(dim=(2, 4)), (x,))
    assert numdiff.autograd.gradgradcheck(lambda t: t.sum(dim=(0, 4)) ** 2, (x,))
    np.testing.assert_allclose(x.sum(dim=(2, 4)).detach().numpy(), x.detach().numpy().sum(axis=(2, 4)))


@pytest.mark.parametrize("shape,dims", [((16, 96, 8, 8), (0, 2, 3)), ((256, 512), (0,)), ((2, 64, 16, 16), (0, 2, 3))])
def test_bias_gradient_sums_run_serially_and_match_the_parallel_build(two_threads, shape, dims):
    # Below SUM_GRAIN_ELEMENTS (a bias gradient of a small map, a Linear's over a batch) the sum
    # stays on the calling thread at two threads; the parallel build gives the same bits.
    from numdiff.kernels import reduce_sum
    from numdiff.kernels._parallel import SUM_GRAIN_ELEMENTS

    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    assert x.size < SUM_GRAIN_ELEMENTS
    assert reduce_sum._SUM_PAIRS.pick(x.size, SUM_GRAIN_ELEMENTS)[0] is reduce_sum._SUM_PAIRS.serial
    kept = tuple(1 if a in dims else n for a, n in enumerate(shape))
    serial, parallel = np.empty(kept, np.float32), np.empty(kept, np.float32)
    sum_dims(x, dims, serial)
    with always_parallel():
        sum_dims(x, dims, parallel)
    np.testing.assert_array_equal(serial, parallel)
    np.testing.assert_allclose(serial, x.astype(np.float64).sum(axis=dims, keepdims=True), rtol=1e-5, atol=1e-5)
