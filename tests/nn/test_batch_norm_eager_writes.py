"""BatchNorm's eager training step writes its running statistics and batch count straight into the
buffers (numdiff.nn._normalization._write_running_stats, numdiff._inplace.write_at): the bits of
the grouped_moments and running_stat ops, versions bumped as by any in-place write, the op path
kept where the write would record something, and bad arrays refused by the fused launcher."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import nn
from numdiff.kernels.norm_running import running_stats_update
from numdiff.nn import functional
from numdiff.ops.norm import grouped_moments, running_stat_update


def _op_path_update(batch, running, momentum):
    """The running estimates as the grouped_moments and running_stat ops give them."""
    n, c = batch.shape[:2]
    count = batch.size // c
    moments = grouped_moments(numdiff.tensor(batch), (1, n, c, 1, count // n))
    mean = running_stat_update(numdiff.tensor(running[0]), moments, 0, momentum)
    var = running_stat_update(numdiff.tensor(running[1]), moments, 1, momentum, count / (count - 1))
    return mean.numpy(), var.numpy()


@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5), (2, 4, 3, 5), (2, 4, 2, 3, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_write_is_the_ops_update_bit_for_bit_and_bumps_versions(shape, dtype):
    rng = np.random.default_rng(11)
    batch = (rng.standard_normal(shape) * 3 - 1).astype(dtype)
    running = (rng.standard_normal(shape[1]).astype(dtype), rng.uniform(0.5, 2.0, shape[1]).astype(dtype))
    mean_buffer, var_buffer = numdiff.tensor(running[0].copy()), numdiff.tensor(running[1].copy())
    versions = (mean_buffer._version, var_buffer._version)
    x = numdiff.tensor(batch, requires_grad=True)
    out = functional.batch_norm(x, mean_buffer, var_buffer, training=True, momentum=0.3)
    expected = _op_path_update(batch, running, 0.3)
    assert np.array_equal(mean_buffer.numpy(), expected[0]) and np.array_equal(var_buffer.numpy(), expected[1])
    assert (mean_buffer._version, var_buffer._version) == (versions[0] + 1, versions[1] + 1)
    assert not mean_buffer.requires_grad and mean_buffer.grad_fn is None
    out.sum().backward()
    assert x.grad.shape == x.shape


def test_non_contiguous_input_updates_as_its_contiguous_copy():
    rng = np.random.default_rng(12)
    batch = rng.standard_normal((4, 6, 5, 3)).astype(np.float32)
    permuted = numdiff.tensor(batch).permute(0, 3, 1, 2)  # channels 3, not contiguous
    buffers = [(numdiff.zeros(3), numdiff.ones(3)) for _ in range(2)]
    functional.batch_norm(permuted, *buffers[0], training=True, momentum=0.1)
    functional.batch_norm(permuted.contiguous(), *buffers[1], training=True, momentum=0.1)
    for ours, reference in zip(buffers[0], buffers[1]):
        assert np.array_equal(ours.numpy(), reference.numpy())


def test_num_batches_tracked_counts_in_place_and_drives_the_cumulative_average():
    layer = nn.BatchNorm1d(2, momentum=None)
    counter = layer.num_batches_tracked
    batches = [np.array([[1.0, 2.0], [3.0, 6.0]], np.float32), np.array([[5.0, 0.0], [7.0, 2.0]], np.float32)]
    for step, batch in enumerate(batches, 1):
        version = counter._version
        layer(numdiff.tensor(batch))
        assert layer.num_batches_tracked is counter and counter.item() == step and counter._version == version + 1
    # The cumulative average of the two batch means: (2, 4) then (6, 1).
    assert layer.running_mean.tolist() == [4.0, 2.5]


def test_buffers_that_require_grad_take_the_op_path_under_no_grad():
    batch = np.arange(12.0).reshape(4, 3)
    buffer = numdiff.zeros(3, dtype=numdiff.float64, requires_grad=True)
    functional.batch_norm(numdiff.tensor(batch), buffer, None, training=True, momentum=0.5)
    assert buffer.tolist() == [2.25, 2.75, 3.25] and buffer.requires_grad and buffer.grad_fn is None


def test_running_stats_update_refuses_bad_arrays_naming_the_op():
    moments = np.zeros((2, 1, 3))
    with pytest.raises(ValueError, match=r"running_stats_update: moments must have shape \(2, 1, C\), got \(2, 2, 3\)"):
        running_stats_update(np.zeros((2, 2, 3)), np.zeros(3), None, 0.1, 1.0)
    with pytest.raises(ValueError, match=r"running_stats_update: running_var must have shape \(3\), got \(4,\)"):
        running_stats_update(moments, None, np.zeros(4), 0.1, 1.0)
    with pytest.raises(TypeError, match="running_stats_update"):
        running_stats_update(moments, np.zeros(3, np.float32), None, 0.1, 1.0)
    with pytest.raises(TypeError, match="running_stats_update"):
        running_stats_update(moments, np.zeros(3, np.int64), None, 0.1, 1.0)


def test_running_stats_update_is_running_stat_update_per_row():
    rng = np.random.default_rng(13)
    moments = rng.standard_normal((2, 1, 7)).astype(np.float32)
    running = rng.standard_normal((2, 7)).astype(np.float32)
    mean, var = running_stats_update(moments, running[0], running[1], 0.25, 9 / 8)
    for row, got in ((0, mean), (1, var)):
        expected = running[row] * np.float32(0.75) + (moments[row, 0] * np.float32(9 / 8 if row else 1.0)) * np.float32(0.25)
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("shape, affine", [((6, 4), True), ((3, 4, 5), False), ((2, 4, 3, 5), True), ((2, 4, 2, 3, 2), True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_first_order_backward_on_arrays_is_the_op_path_bit_for_bit(shape, affine, dtype):
    """Without create_graph GroupedNorm's backward runs its kernel on arrays; with it, the
    grouped_norm_backward op and slices of its flat result: the same kernel, the same bits."""
    rng = np.random.default_rng(14)
    batch, grad = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    params = [numdiff.tensor(rng.standard_normal(shape[1]).astype(dtype), requires_grad=True) for _ in range(2)]
    found = []
    for create_graph in (False, True):
        x = numdiff.tensor(batch, requires_grad=True)
        leaves = [x] + (params if affine else [])
        out = functional.batch_norm(x, None, None, *(params if affine else []), training=True)
        found.append(numdiff.autograd.grad(out, leaves, numdiff.tensor(grad), create_graph=create_graph))
    for first, through_op in zip(*found):
        assert np.array_equal(first.numpy(), through_op.detach().numpy())
    assert found[0][0].shape == shape and all(not g.requires_grad for g in found[0])


def test_first_order_backward_matches_torch_on_a_channels_last_input():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(15)
    batch, grad = rng.standard_normal((4, 5, 3, 6)), rng.standard_normal((4, 6, 5, 3))
    ours_x = numdiff.tensor(batch, requires_grad=True)
    layer = nn.BatchNorm2d(6).double()
    layer(ours_x.permute(0, 3, 1, 2)).backward(numdiff.tensor(grad))
    theirs_x = torch.tensor(batch, requires_grad=True)
    theirs = torch.nn.BatchNorm2d(6).double()
    theirs(theirs_x.permute(0, 3, 1, 2)).backward(torch.tensor(grad))
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(layer.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(layer.bias.grad.numpy(), theirs.bias.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(layer.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-12)
