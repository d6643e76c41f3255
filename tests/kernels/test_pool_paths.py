"""Max pooling's two CPU paths (row sweep for wide planes, per-element for narrow) agree exactly."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels import pool
from numdiff.kernels._pool_geometry import pool_output_size
from numdiff.kernels._pool_planes import planes


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation",
    [
        ((2, 2), (2, 2), (0, 0), (1, 1)),
        ((3, 3), (2, 1), (1, 1), (1, 1)),
        ((2, 3), (1, 2), (1, 1), (2, 2)),
        # A window 2**31 - 1 taps wide: both cores must visit only the few taps inside the image.
        ((3, 2**31 - 1), (1, 2**31 - 1), (1, 2**30 - 1), (1, 1)),
    ],
)
def test_direct_and_sweep_cores_give_the_same_values_and_indices(kernel, stride, padding, dilation):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 9))
    x[0, 0, 1, 2] = np.nan
    x[1, 2, :3, :3] = -np.inf  # a window of -inf keeps its first in-image tap
    oh, ow = (pool_output_size(x.shape[2 + d], kernel[d], stride[d], padding[d], dilation[d], False) for d in (0, 1))
    results = []
    for core in (pool._max_pool_core.serial, pool._max_pool_direct_core.serial):
        out, at = np.empty((2, 3, oh, ow)), np.empty((2, 3, oh, ow), np.int64)
        core(planes(x), planes(out), planes(at), *kernel, *stride, *padding, *dilation)
        results.append((out, at))
    (sweep_out, sweep_at), (direct_out, direct_at) = results
    np.testing.assert_array_equal(direct_out, sweep_out)
    np.testing.assert_array_equal(direct_at, sweep_at)


@pytest.mark.parametrize(
    "kernel, stride, dilation",
    [((2, 2), (2, 2), (1, 1)), ((3, 2), (1, 2), (1, 1)), ((2, 3), (2, 1), (2, 2)), ((1, 1), (3, 3), (1, 1))],
)
def test_inside_core_matches_the_sweep_when_every_window_lies_in_the_image(kernel, stride, dilation):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 7, 9))
    x[0, 1, 2, 3] = np.nan
    x[1, 0, :4, :4] = -np.inf
    x[1, 2] = 0.5  # ties keep the first maximum in window order
    oh, ow = (pool_output_size(x.shape[2 + d], kernel[d], stride[d], 0, dilation[d], False) for d in (0, 1))
    assert pool._windows_inside(x.shape, (2, 3, oh, ow), *kernel, *stride, 0, 0, *dilation)
    out, at = np.empty((2, 3, oh, ow)), np.empty((2, 3, oh, ow), np.int64)
    pool._max_pool_inside_core.serial(planes(x), planes(out), planes(at), *kernel, *stride, *dilation)
    ref_out, ref_at = np.empty_like(out), np.empty_like(at)
    pool._max_pool_core.serial(planes(x), planes(ref_out), planes(ref_at), *kernel, *stride, 0, 0, *dilation)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(at, ref_at)


def test_windows_past_the_image_or_in_padding_are_not_inside():
    # ceil_mode: 5 columns pooled by 2 with stride 2 gives a third window reaching column 5.
    assert not pool._windows_inside((1, 1, 5, 5), (1, 1, 3, 3), 2, 2, 2, 2, 0, 0, 1, 1)
    assert not pool._windows_inside((1, 1, 5, 5), (1, 1, 3, 3), 2, 2, 2, 2, 1, 0, 1, 1)
    assert pool._windows_inside((1, 1, 5, 5), (1, 1, 2, 2), 2, 2, 2, 2, 0, 0, 1, 1)
    # The public function on a ceil_mode overhang still matches the sweep core (direct path).
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5))
    out, at = np.empty((1, 2, 3, 3)), np.empty((1, 2, 3, 3), np.int64)
    pool.max_pool2d_forward(x, out, at, (2, 2), (2, 2), ceil_mode=True)
    ref_out, ref_at = np.empty_like(out), np.empty_like(at)
    pool._max_pool_core.serial(planes(x), planes(ref_out), planes(ref_at), 2, 2, 2, 2, 0, 0, 1, 1)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(at, ref_at)
