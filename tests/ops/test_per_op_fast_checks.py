"""The per-op path's identity-first checks (issue 26) answer as the checks they stand in front of:
normalize_dims' plain-tuple path, a view op's shared-memory test, the walk's sum back to a
broadcast input's shape."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import numdiff
from numdiff.autograd.engine import sum_to_shape
from numdiff.ops._util import normalize_dims
from numdiff.ops.shape import _shares_memory


def _checked(dim: tuple, ndim: int) -> tuple:
    """normalize_dims' checking path (a list takes it: the fast path reads tuples only)."""
    return normalize_dims("sum", list(dim), ndim)


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_normalize_dims_of_a_plain_tuple_is_the_checked_answer(ndim):
    for count in range(ndim + 1):
        for dim in itertools.permutations(range(-ndim, ndim), count):
            if len({d % ndim for d in dim}) != len(dim):
                continue
            assert normalize_dims("sum", dim, ndim) == _checked(dim, ndim)


@pytest.mark.parametrize(
    "dim,error,message",
    [
        ((0, 2), IndexError, r"sum: dimension 2 is out of range"),
        ((1, -1), ValueError, r"sum: dim \(1, -1\) names a dimension more than once"),
        ((0, 1.0), TypeError, r"sum: dim must be ints"),
        ((0, None), TypeError, r"sum: dim must be ints"),
    ],
)
def test_normalize_dims_of_a_bad_tuple_raises_the_checked_error(dim, error, message):
    with pytest.raises(error, match=message):
        normalize_dims("sum", dim, 2)


def test_normalize_dims_takes_numpy_ints_in_a_tuple():
    assert normalize_dims("sum", (np.int64(-1), 0), 3) == (0, 2)


def test_shares_memory_agrees_with_numpy():
    base = np.arange(24.0).reshape(4, 6)
    view_of_view = base[1:][:, ::2]
    cases = [
        (base.T, base),
        (base[1:3], base),
        (base[:0], base),  # an empty view shares nothing, as np.may_share_memory says
        (base.copy(), base),
        (view_of_view, base[1:]),  # its NumPy base is `base`, not the view it came from
        (base[2:], base[:2]),
        (base, base),
    ]
    for data, base_data in cases:
        assert _shares_memory(data, base_data) == np.may_share_memory(data, base_data)


def test_a_view_of_a_view_shares_the_version_counter():
    x = numdiff.arange(24.0).reshape(4, 6)
    y = x[1:].t()
    y.mul_(2)
    assert x._version_counter is y._version_counter and x[1, 0].item() == 12.0
    assert numdiff.ones(3, 4).reshape(12)._base is not None
    assert numdiff.ones(3, 4)[:0].reshape(0, 4)._base is None  # empty: nothing shared


@pytest.mark.parametrize(
    "grad_shape,shape",
    [
        ((4, 8), (8,)),
        ((4, 8), (1, 8)),
        ((4, 8), (4, 1)),
        ((2, 3, 4), (3, 1)),
        ((2, 3, 4), (2, 3, 4)),
        ((5,), ()),
    ],
)
def test_sum_to_shape_sums_the_broadcast_axes(grad_shape, shape):
    data = np.random.default_rng(0).standard_normal(grad_shape)
    got = sum_to_shape(numdiff.tensor(data), shape)
    lead = len(grad_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and grad_shape[i + lead] != 1
    )
    expected = data.sum(axis=axes, keepdims=True).reshape(shape)
    assert tuple(got.shape) == shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
