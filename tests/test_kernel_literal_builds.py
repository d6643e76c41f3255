"""A numdiff kernel called from another kernel with constant arguments compiles one build for the
plain types (numdiff.kernels._self_healing_cache.CachedDispatcher.get_call_template), not one per
constant, and a kernel whose typing needs the constant itself still compiles for it."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import types

from numdiff.kernels._self_healing_cache import njit


@njit(cache=True)
def _scaled_or_negated(x, scale, factor):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * factor if scale else -x[i]
    return out


@njit(cache=True)
def _entry(pair, index):
    return pair[index]  # a heterogeneous tuple: typing needs the index's value


@numba.njit  # not cached: compiled in each process, so its calls type (or load) the builds counted
def _calls_with_constants(x):
    return _scaled_or_negated(x, True, 3) + _scaled_or_negated(x, False, 2)


@numba.njit
def _calls_with_a_tuple_index():
    return _entry((1, 2.5), 1) + _entry((1, 2.5), 0)


def test_constant_flags_and_integers_share_one_plain_build():
    x = np.arange(4.0)
    np.testing.assert_array_equal(_calls_with_constants(x), 3 * x - x)
    assert _scaled_or_negated.signatures == [(types.float64[::1], types.boolean, types.int64)]


def test_a_kernel_that_needs_the_constant_is_compiled_for_it():
    assert _calls_with_a_tuple_index() == pytest.approx(3.5)
    assert all(isinstance(sig[1], types.IntegerLiteral) for sig in _entry.signatures)
    assert sorted(sig[1].literal_value for sig in _entry.signatures) == [0, 1]
