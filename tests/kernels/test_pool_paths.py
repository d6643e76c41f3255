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
