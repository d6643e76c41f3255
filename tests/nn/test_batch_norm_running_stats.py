"""BatchNorm's running statistics, updated by one running_stat kernel per buffer: the same bits as
the composed in-place update (float32 and float64), PyTorch's numbers, the composed form for mixed
dtypes, and bad arguments refused before a kernel runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff import nn
from numdiff.kernels.norm_running import running_stat_update as running_stat_kernel
from numdiff.nn import functional
from numdiff.ops.norm import running_stat_update


@pytest.mark.parametrize("cls_name, shape", [
    ("BatchNorm1d", (6, 4)), ("BatchNorm1d", (3, 4, 5)), ("BatchNorm2d", (2, 4, 3, 5)), ("BatchNorm3d", (2, 4, 2, 3, 2)),
])  # fmt: skip
@pytest.mark.parametrize("momentum", [0.1, 0.7, None])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_running_statistics_are_the_composed_updates_bit_for_bit(cls_name, shape, momentum, dtype):
    rng = np.random.default_rng(3)
    layer = getattr(nn, cls_name)(shape[1], momentum=momentum, affine=False).to(numdiff.from_numpy(np.zeros(0, dtype)).dtype)
    running = (np.zeros(shape[1], dtype), np.ones(shape[1], dtype))
    count = int(np.prod(shape)) // shape[1]
    for step in range(1, 4):
        batch = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
        layer(numdiff.tensor(batch))
        # The batch moments come from the norm kernels; the update is rebuilt from them in NumPy,
        # one rounding per op in the buffers' dtype, as `running.mul_(1 - m).add_(stat * m)` does.
        moments = numdiff.ops.norm.grouped_moments(numdiff.tensor(batch), (1, shape[0], shape[1], 1, count // shape[0]))
        mean, var = moments.numpy()[:, 0]
        m = dtype(1.0 / step if momentum is None else momentum)
        keep = dtype(1.0 - (1.0 / step if momentum is None else momentum))
        running = (running[0] * keep + mean * m, running[1] * keep + var * dtype(count / (count - 1)) * m)
        assert layer.running_mean.numpy().dtype == dtype
        assert np.array_equal(layer.running_mean.numpy(), running[0])
        assert np.array_equal(layer.running_var.numpy(), running[1])
    assert layer.num_batches_tracked.item() == 3


@pytest.mark.parametrize("shape", [(8, 5), (4, 5, 3, 3), (2, 5, 2, 2, 3)])
def test_float32_running_statistics_match_torch(shape):
    rng = np.random.default_rng(4)
    cls_name = {2: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}[len(shape)]
    ours, theirs = getattr(nn, cls_name)(shape[1]), getattr(torch.nn, cls_name)(shape[1])
    for _ in range(4):
        batch = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
        ours(numdiff.tensor(batch))
        theirs(torch.from_numpy(batch))
    assert ours.running_mean.dtype == numdiff.float32
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-6, atol=1e-7)


def test_float64_buffers_with_float32_input_take_the_composed_update():
    rng = np.random.default_rng(5)
    batch = rng.standard_normal((6, 3, 4)).astype(np.float32)
    running = (np.full(3, 0.25), np.full(3, 2.0))
    mean_buffer, var_buffer = numdiff.tensor(running[0]), numdiff.tensor(running[1])
    functional.batch_norm(numdiff.tensor(batch), mean_buffer, var_buffer, training=True, momentum=0.2)
    stats = numdiff.ops.norm.grouped_moments(numdiff.tensor(batch), (1, 6, 3, 1, 4)).numpy()[:, 0].astype(np.float64)
    assert np.array_equal(mean_buffer.numpy(), running[0] * 0.8 + stats[0] * 0.2)
    assert np.array_equal(var_buffer.numpy(), running[1] * 0.8 + stats[1] * (24 / 23) * 0.2)


def test_only_the_running_buffer_given_is_updated():
    batch = numdiff.tensor(np.arange(12.0).reshape(4, 3))
    mean_buffer = numdiff.zeros(3, dtype=numdiff.float64)
    functional.batch_norm(batch, mean_buffer, None, training=True, momentum=0.5)
    assert mean_buffer.tolist() == [2.25, 2.75, 3.25]  # half of the column means 4.5, 5.5, 6.5


def test_running_stat_update_refuses_bad_arguments_naming_the_op_and_values():
    running, moments = numdiff.zeros(3), numdiff.zeros(2, 1, 3)
    with pytest.raises(ValueError, match=r"running_stat_update: expected running of shape \(C,\) and moments of shape "
                                         r"\(2, 1, C\), got \(3,\) and \(2, 1, 4\)"):  # fmt: skip
        running_stat_update(running, numdiff.zeros(2, 1, 4), 0, 0.1)
    with pytest.raises(ValueError, match=r"running_stat_update: expected running .* got \(1, 3\) and \(2, 1, 3\)"):
        running_stat_update(numdiff.zeros(1, 3), moments, 0, 0.1)
    with pytest.raises(ValueError, match="running_stat_update: row must be 0 .mean. or 1 .variance., got 2"):
        running_stat_update(running, moments, 2, 0.1)


def test_running_stat_kernel_checks_its_arrays_before_running():
    running, moments = np.zeros(3), np.zeros((2, 1, 3))
    with pytest.raises(ValueError, match=r"running_stat_update: moments must have shape \(2, 1, 3\), got \(2, 2, 3\)"):
        running_stat_kernel(running, np.zeros((2, 2, 3)), 0, 0.1, 1.0, np.empty(3))
    with pytest.raises(ValueError, match=r"running_stat_update: out must have shape \(3\), got \(4,\)"):
        running_stat_kernel(running, moments, 0, 0.1, 1.0, np.empty(4))
    with pytest.raises(ValueError, match="running_stat_update: row must be 0 .mean. or 1 .variance., got -1"):
        running_stat_kernel(running, moments, -1, 0.1, 1.0, np.empty(3))
    with pytest.raises(TypeError, match="running_stat_update: all arrays must share one dtype"):
        running_stat_kernel(running, moments.astype(np.float32), 0, 0.1, 1.0, np.empty(3))
