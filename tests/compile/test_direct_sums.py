"""numdiff.compile's direct sum runs the kernel eager's Sum runs: sum_dims (one pass over interleaved or
short innermost summed axes, numdiff.kernels.reduce_sum) where eager takes it, np.sum elsewhere. The
compiled program called np.add.reduce for every sum, so nearest Upsample's gradient (a sum over axes 3
and 5) took 5.6 ms against eager's 1.0 on 4x32x32x32, and its float32 numbers differed from eager's in
the last bits (sum_dims adds the innermost run in float64)."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import nn

SUMS = [
    # shape, dims, keepdim: the kernel's cases (short innermost run, interleaved axes), then np.sum's
    ((4, 6, 5, 2, 7, 2), (3, 5), True),
    ((8, 5, 3, 9), (0, 2, 3), False),
    ((3, 50, 33), (0, 2), False),
    ((6, 4, 7), (1,), True),
    ((5, 200), (1,), False),  # a run longer than reduce_sum.SHORT_INNER_SUM: np.sum in both modes
    ((4, 3, 2), (0, 1, 2), False),  # every axis: np.sum in both modes
    ((7, 3, 5), (0,), False),  # a kept innermost axis: np.sum inside sum_dims in both modes
]


@pytest.mark.parametrize(("shape", "dims", "keepdim"), SUMS)
@pytest.mark.parametrize("dtype", [numdiff.float32, numdiff.float64])
def test_a_compiled_sum_equals_eagers_bit_for_bit(shape, dims, keepdim, dtype):
    rng = np.random.default_rng(len(shape) + sum(dims))
    x = numdiff.tensor(rng.standard_normal(shape) * 3, dtype=dtype)

    def summed(x):  # a sum of an input: no elementwise group to fuse it into, so the direct plan runs it
        return x.sum(dims, keepdim=keepdim)

    f = numdiff.compile(summed)
    for _ in range(2):  # the trace's eager run, then the generated program
        got = f(x).numpy()
    want = summed(x).numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("channels", "size", "scale"), [(5, 6, 2), (3, 9, 3)])
def test_a_compiled_upsample_gradient_runs_sum_dims_and_equals_eager(channels, size, scale):
    numdiff.manual_seed(3)
    model = nn.Sequential(nn.Upsample(scale_factor=scale, mode="nearest"), nn.Conv2d(channels, 4, 3, padding=1))
    rng = np.random.default_rng(channels)
    x = numdiff.tensor(rng.standard_normal((2, channels, size, size)), dtype=numdiff.float32, requires_grad=True)

    def loss_of(x):
        return (model(x) ** 2).sum()

    f = numdiff.compile(loss_of)
    grads = []
    for run in (f, f, loss_of):
        x.grad = None
        run(x).backward()
        grads.append(x.grad.numpy().copy())
    np.testing.assert_array_equal(grads[1], grads[2])
    backward = "".join(source.split("def backward(")[1] for source in f.compiled.sources if source)
    assert "sum_dims" in backward
