"""Hypothesis strategies and torch helpers shared by the tests that compare numdiff with PyTorch."""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import strategies as st

import numdiff

# float64 gradients must agree with torch to rounding; float32 to float32 rounding over a few ops.
TOLERANCES = {np.float64: dict(rtol=1e-9, atol=1e-12), np.float32: dict(rtol=1e-5, atol=1e-6)}
DTYPES = st.sampled_from([np.float64, np.float32])
LAYOUTS = st.sampled_from(["contiguous", "transposed", "sliced"])


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def values(dtype, shape, low: float = -3.0, high: float = 3.0, unique: bool = False):
    """Arrays of `dtype` with elements in [low, high], rounded to float32 so both widths hold them exactly."""
    low, high = float(np.float32(low)), float(np.float32(high))  # bounds a float32 can hold
    elements = st.floats(low, high, allow_nan=False, allow_infinity=False, width=32)
    return hnp.arrays(dtype, shape, elements=elements, unique=unique)


def with_layout(array: np.ndarray, layout: str) -> np.ndarray:
    """The same values in a different memory layout: C order, Fortran order (a transpose), or strided."""
    if layout == "transposed" and array.ndim >= 2:
        return np.ascontiguousarray(array.T).T
    if layout == "sliced" and array.ndim:
        base = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), dtype=array.dtype)
        base[..., ::2] = array
        return base[..., ::2]
    return array


def leaf(array: np.ndarray, layout: str = "contiguous") -> numdiff.Tensor:
    """A numdiff leaf that requires grad, holding `array` in `layout` (the leaf itself may be strided)."""
    laid_out = with_layout(array.copy(), layout)
    assert np.array_equal(laid_out, array)
    if layout != "contiguous" and array.ndim >= 2 and array.size > 1 and min(array.shape) > 1:
        assert not laid_out.flags.c_contiguous
    return numdiff.from_numpy(laid_out).requires_grad_()


def torch_leaf(torch, array: np.ndarray):
    return torch.tensor(array, requires_grad=True)


def assert_close(ours, theirs, dtype) -> None:
    """Compare a numdiff tensor (or None) with a torch tensor (or None)."""
    assert (ours is None) == (theirs is None), f"numdiff gave {ours!r}, torch gave {theirs!r}"
    if ours is None:
        return
    expected = theirs.detach().numpy()
    actual = ours.detach().numpy()
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, equal_nan=True, **TOLERANCES[np.dtype(dtype).type])


def upstream(draw, shape, dtype):
    """A random upstream gradient for backward(gradient=...)."""
    return draw(values(dtype, shape, -2.0, 2.0))
