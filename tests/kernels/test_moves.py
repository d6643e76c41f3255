"""numdiff.kernels._moves: 8-element vector moves, against NumPy slicing, and their bounds checks."""

from __future__ import annotations

import numpy as np
import pytest
from numba import errors
from numba.core import config

from numdiff.kernels._moves import copy8, move8
from numdiff.kernels._self_healing_cache import njit


@njit
def _move(dst, d, src, s, shift):
    move8(dst, d, src, s, shift)


@njit
def _copy(dst, d, src, s):
    copy8(dst, d, src, s)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("d", "s"), [(0, 0), (3, 11), (12, 1)])
def test_move8_adds_the_shift_to_eight_elements_and_leaves_the_rest(dtype, d, s):
    rng = np.random.default_rng(0)
    src = rng.standard_normal(20).astype(dtype)
    dst = rng.standard_normal(20).astype(dtype)
    expected = dst.copy()
    expected[d : d + 8] = src[s : s + 8] + dtype(0.25)
    _move(dst, np.uint64(d), src, np.uint64(s), dtype(0.25))
    np.testing.assert_array_equal(dst, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_copy8_copies_bits_exactly_including_negative_zero_and_nan(dtype):
    src = np.array([-0.0, np.nan, np.inf, -np.inf, 1e-40, -1.5, 2.0, 3.0, 9.0], dtype)
    dst = np.full(10, 7.0, dtype)
    _copy(dst, 2, src, 0)
    np.testing.assert_array_equal(dst[2:].view(np.uint8), src[:8].view(np.uint8))
    assert (dst[:2] == 7.0).all()


@pytest.mark.skipif(not config.BOUNDSCHECK, reason="checked only under NUMBA_BOUNDSCHECK=1 (CI's checked run)")
@pytest.mark.parametrize(("d", "s"), [(13, 0), (0, 13), (-1, 0), (0, -1)])
def test_moves_reaching_outside_raise_index_error_when_bounds_are_checked(d, s):
    src = np.arange(20, dtype=np.float64)
    dst = np.zeros(20)
    with pytest.raises(IndexError, match="8-element move"):
        _move(dst, d, src, s, 0.0)
    with pytest.raises(IndexError, match="8-element move"):
        _copy(dst, d, src, s)
    assert (dst == 0).all()


def test_moves_refuse_strided_or_mixed_dtype_arrays_when_compiling():
    with pytest.raises(errors.TypingError):
        _copy(np.zeros(32)[::2], 0, np.zeros(16), 0)
    with pytest.raises(errors.TypingError):
        _copy(np.zeros(16, np.float32), 0, np.zeros(16), 0)
    with pytest.raises(errors.TypingError):
        _move(np.zeros(16), 0, np.zeros(16), 0, np.float32(1.0))
