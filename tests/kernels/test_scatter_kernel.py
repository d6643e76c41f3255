"""numdiff.kernels.scatter: the host scatter-add agrees with np.add.at on every key form, and
refuses bad arguments before the kernel runs."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels.scatter import add_at, index_add_rows

KEYS = [
    ((6, 3), (np.array([0, 5, -1, 2, 2, 2]),)),  # embedding backward: repeats and a negative id
    ((6, 3), (np.array([[0, 1], [1, -6]]),)),  # an index of two dims
    ((4, 5, 2), (np.array([[0, 1], [3, -4]]), np.array([1, -1]))),  # two broadcast index arrays
    ((7,), (np.array([1, 1, 6, 0]),)),  # one element per row
    ((3, 4), (np.array([0, 2, 0]), slice(None))),  # a trailing whole axis
    ((3, 4, 2), (np.array([2, 2]), Ellipsis)),
    ((3, 4), (slice(None), np.array([0, 2, 0]))),  # index after a slice: np.add.at itself
    ((3, 4), (np.array([True, False, True]),)),  # a mask: np.add.at itself
    ((0, 3), (np.array([], dtype=np.int64),)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
@pytest.mark.parametrize("shape,key", KEYS)
def test_add_at_matches_numpy(shape, key, dtype):
    rng = np.random.default_rng(0)
    base = rng.standard_normal(shape).astype(dtype) if np.dtype(dtype).kind == "f" else np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    values = (rng.standard_normal(base[key].shape) * 4).astype(dtype)
    ours, theirs = base.copy(), base.copy()
    add_at(ours, key, values)
    np.add.at(theirs, key, values)
    np.testing.assert_array_equal(ours, theirs)


def test_add_at_broadcasts_values_as_numpy_does():
    ours, theirs = np.zeros((5, 3)), np.zeros((5, 3))
    key = (np.array([4, 4, 0]),)
    add_at(ours, key, np.array([1.0, 2.0, 3.0]))
    np.add.at(theirs, key, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(ours, theirs)
    add_at(ours, key, 0.5)
    np.add.at(theirs, key, 0.5)
    np.testing.assert_array_equal(ours, theirs)


def test_add_at_raises_numpys_error_for_an_index_out_of_range():
    with pytest.raises(IndexError):
        add_at(np.zeros((3, 2)), (np.array([0, 3]),), 1.0)


def test_index_add_rows_refuses_rows_outside_out():
    with pytest.raises(IndexError, match=r"index_add_rows: rows must lie in \[0, 2\], got values in \[-1, 1\]"):
        index_add_rows(np.zeros((3, 2)), np.array([-1, 1]), np.ones((2, 2)))


def test_index_add_rows_refuses_mismatched_shapes_and_dtypes():
    with pytest.raises(ValueError, match="src .len.rows., width."):
        index_add_rows(np.zeros((3, 2)), np.array([0, 1]), np.ones((2, 3)))
    with pytest.raises(TypeError, match="all arrays must share one dtype"):
        index_add_rows(np.zeros((3, 2)), np.array([0, 1]), np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match="rows must be an int64 ndarray"):
        index_add_rows(np.zeros((3, 2)), np.array([0, 1], np.int32), np.ones((2, 2)))
