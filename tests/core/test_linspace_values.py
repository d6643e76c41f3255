"""linspace makes PyTorch's values to the last bit (up from start for the first half, down from
end for the rest, one rounding per value), not NumPy's."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

_BOUNDS = [(-1.0, 1.0), (0.0, 1.0), (0.3, 7.1), (5.0, -2.0), (-13.7, 2.9)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("start, end", _BOUNDS)
def test_linspace_equals_pytorch_bit_for_bit(start, end, dtype):
    for steps in [1, 2, 3, 7, 8, 10, 33, 100, 257]:
        ours = numdiff.linspace(start, end, steps, dtype=getattr(numdiff, dtype)).numpy()
        expected = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
        assert ours.dtype == expected.dtype
        np.testing.assert_array_equal(ours, expected, err_msg=f"linspace({start}, {end}, {steps})")


def test_linspace_of_other_dtypes_still_matches_pytorch():
    np.testing.assert_array_equal(numdiff.linspace(0, 10, 4, dtype=numdiff.int64).numpy(),
                                  torch.linspace(0, 10, 4, dtype=torch.int64).numpy())
    assert numdiff.linspace(0.0, 1.0, 0).shape == (0,)


def test_linspace_refuses_negative_steps_naming_the_op():
    with pytest.raises(ValueError, match="linspace: steps must be a non-negative int, got -2"):
        numdiff.linspace(0.0, 1.0, -2)
