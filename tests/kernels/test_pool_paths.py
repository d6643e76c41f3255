"""Max pooling's CPU paths (row sweep for wide planes, per-element for narrow, the 2x2 tiling) agree exactly."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff._ground.pool_geometry import pool_output_size
from numdiff.kernels import _max_pool_cores as cores
from numdiff.kernels import pool
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
    oh, ow = (
        pool_output_size(x.shape[2 + d], kernel[d], stride[d], padding[d], dilation[d], False) for d in (0, 1)
    )
    results = []
    for core in (cores.max_pool_core.serial, cores.max_pool_direct_core.serial):
        out, at = np.empty((2, 3, oh, ow)), np.empty((2, 3, oh, ow), np.int64)
        core(planes(x), planes(out), planes(at), *kernel, *stride, *padding, *dilation)
        results.append((out, at))
    (sweep_out, sweep_at), (direct_out, direct_at) = results
    np.testing.assert_array_equal(direct_out, sweep_out)
    np.testing.assert_array_equal(direct_at, sweep_at)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 8, 10), (1, 2, 7, 9), (3, 1, 2, 2)])
def test_2x2_core_matches_the_direct_core_on_ties_nans_and_infinities(shape, dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(-2, 3, shape).astype(dtype)  # small integers: many ties
    x.flat[rng.choice(x.size, x.size // 5, replace=False)] = np.nan
    x.flat[rng.choice(x.size, x.size // 5, replace=False)] = -np.inf
    x[0, 0, :2, :2] = -np.inf  # an all -inf window reports its first tap
    x[-1, -1, :2, :2] = np.nan  # several NaNs: the last one scanned
    oh, ow = shape[2] // 2, shape[3] // 2  # odd sizes: the last row/column is never read
    results = []
    for core, extra in (
        (cores.max_pool_2x2_core.serial, ()),
        (cores.max_pool_direct_core.serial, (2, 2, 2, 2, 0, 0, 1, 1)),
    ):
        out, at = np.empty(shape[:2] + (oh, ow), dtype), np.empty(shape[:2] + (oh, ow), np.int64)
        core(planes(x), planes(out), planes(at), *extra)
        results.append((out, at))
    (fast_out, fast_at), (direct_out, direct_at) = results
    np.testing.assert_array_equal(fast_out, direct_out)
    np.testing.assert_array_equal(fast_at, direct_at)
    assert fast_at[-1, -1, 0, 0] == x.shape[3] + 1


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool2d_forward_takes_the_2x2_core_only_when_every_window_is_inside(ceil_mode):
    x = np.random.default_rng(2).standard_normal((2, 2, 5, 7))
    oh, ow = (pool_output_size(n, 2, 2, 0, 1, ceil_mode) for n in (5, 7))
    out, at = np.empty((2, 2, oh, ow)), np.empty((2, 2, oh, ow), np.int64)
    pool.max_pool2d_forward(x, out, at, (2, 2), (2, 2), ceil_mode=ceil_mode)
    ref_out, ref_at = np.empty_like(out), np.empty_like(at)
    cores.max_pool_direct_core.serial(planes(x), planes(ref_out), planes(ref_at), 2, 2, 2, 2, 0, 0, 1, 1)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(at, ref_at)


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
    cores.max_pool_inside_core.serial(planes(x), planes(out), planes(at), *kernel, *stride, *dilation)
    ref_out, ref_at = np.empty_like(out), np.empty_like(at)
    cores.max_pool_core.serial(planes(x), planes(ref_out), planes(ref_at), *kernel, *stride, 0, 0, *dilation)
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
    cores.max_pool_core.serial(planes(x), planes(ref_out), planes(ref_at), 2, 2, 2, 2, 0, 0, 1, 1)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(at, ref_at)
