"""``t[key] = value`` when nothing records it writes straight into t's storage (numdiff._inplace.
write_at): the same results, checks and version counting as the recorded path."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff as nd


def test_a_write_lands_in_the_storage_a_view_shares():
    buffer = nd.zeros(4, 3)
    row = buffer[1]
    before = buffer._version
    buffer[1] = nd.tensor([1.0, 2.0, 3.0])
    buffer[2:, 0] = -1
    np.testing.assert_array_equal(row.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(buffer[:, 0].numpy(), [0.0, 1.0, -1.0, -1.0])
    assert buffer._version == before + 2


def test_filling_a_buffer_row_by_row_gives_the_stacked_rows():
    rows = [nd.full((5,), float(i)) for i in range(6)]
    buffer = nd.empty(6, 5)
    for i, r in enumerate(rows):
        buffer[i] = r
    np.testing.assert_array_equal(buffer.numpy(), nd.stack(rows).numpy())


def test_values_are_converted_and_checked_as_on_the_recorded_path():
    t = nd.zeros(3, dtype=nd.uint8)
    t[0] = -1  # wraps as in PyTorch
    t[1:] = nd.tensor([2.7, 3.2])  # a float tensor into an integer one truncates
    np.testing.assert_array_equal(t.numpy(), [255, 2, 3])
    with pytest.raises(RuntimeError, match="300"):
        t[0] = 300
    with pytest.raises(ValueError, match=r"index_put: value of shape \(2,\) cannot be broadcast"):
        t[:] = nd.tensor([1, 2], dtype=nd.uint8)
    with pytest.raises(IndexError, match="index_put"):
        t[5] = 1


def test_bfloat16_values_are_written_by_value():
    t = nd.zeros(2, dtype=nd.bfloat16)
    t[0] = nd.tensor(1.5)
    t[1] = 2.0
    np.testing.assert_array_equal(t.float().numpy(), [1.5, 2.0])


def test_a_read_only_array_is_refused_by_name():
    host = np.zeros(3)
    host.flags.writeable = False
    t = nd.from_numpy(host)
    with pytest.raises(RuntimeError, match="__setitem__: cannot write in place"):
        t[0] = 1.0


def test_a_leaf_that_requires_grad_is_written_under_no_grad_and_keeps_its_grad_flag():
    w = nd.zeros(3, requires_grad=True)
    with nd.no_grad():
        w[1] = 5.0
    assert w.requires_grad and w.grad_fn is None
    (w * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])


def test_a_value_that_requires_grad_is_still_recorded():
    v = nd.tensor([1.0, 2.0], requires_grad=True)
    buffer = nd.zeros(3)
    buffer[1:] = v * 3
    assert buffer.grad_fn is not None
    buffer.sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])


def test_a_write_into_a_tensor_saved_for_backward_is_detected_by_its_version():
    w = nd.tensor([1.0, 2.0], requires_grad=True)
    x = nd.tensor([3.0, 4.0])
    y = (w * x).sum()
    x[0] = 10.0
    with pytest.raises(RuntimeError, match="saved by MulBackward for backward was modified in place"):
        y.backward()
