"""Hostile arguments at the public kernel entry points (issue 9): every one is refused in Python
with an error naming the kernel, the argument and the value, before compiled code runs."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff._ground.args import GEOMETRY_LIMIT, int_tuple
from numdiff.kernels import conv, matmul, pool
from numdiff.kernels._checks import check_disjoint


def _conv_forward(padding=(0, 0, 0, 0), stride=(1, 1), dilation=(1, 1), out_shape=(1, 1, 3, 3)):
    out = np.full(out_shape, 7.0)
    conv.conv2d_forward(np.ones((1, 1, 5, 5)), np.ones((1, 1, 3, 3)), None, out, stride, padding, dilation)
    return out


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(padding=(0, 0, 0, 3 * 2**61), stride=(1, 2**62)), "stride must be at most 2147483647"),
        (dict(padding=(0, 0, 0, 2**63 - 1)), r"padding must be at most 2147483647, got \(0, 0, 0, 9223372036854775807\)"),
        (dict(padding=(0, 0, -(2**62), 0)), r"padding must be at least -2147483647, got \(0, 0, -4611686018427387904, 0\)"),
        (dict(stride=(1, 2**63 - 1)), "stride must be at most 2147483647"),
        (dict(dilation=(2**64, 1)), "dilation must be at most 2147483647"),
        (dict(stride=(1.5, 1)), r"stride must be 2 ints, got \(1.5, 1\) \(holding float\)"),
        (dict(stride=None), "stride must be 2 ints, got None"),
        (dict(padding=(True, 0, 0, 0)), "padding must be 4 ints"),
    ],
)
def test_conv_kernels_refuse_hostile_geometry_by_name(kwargs, message):
    error = TypeError if "ints" in message else ValueError
    with pytest.raises(error, match="conv2d_forward: " + message):
        _conv_forward(**kwargs)


def test_conv_kernels_refuse_every_entry_point_alike():
    x, w, g = np.ones((1, 1, 5, 5)), np.ones((1, 1, 3, 3)), np.ones((1, 1, 3, 3))
    huge = (0, 0, 0, 2**62)
    with pytest.raises(ValueError, match="conv2d_backward_input: padding must be at most"):
        conv.conv2d_backward_input(g, w, np.empty_like(x), (1, 1), huge)
    with pytest.raises(ValueError, match="conv2d_backward_weight: padding must be at most"):
        conv.conv2d_backward_weight(x, g, np.empty_like(w), (1, 1), huge)


def test_negative_padding_within_the_limit_still_crops():
    # A transposed conv's output_padding lowers bottom/right padding below 0: a crop, allowed.
    out = _conv_forward(padding=(-1, 0, 0, -1), out_shape=(1, 1, 2, 2))
    np.testing.assert_array_equal(out, 9.0)


def test_zero_size_kernel_is_refused():
    with pytest.raises(ValueError, match=r"conv2d_forward: weight must have no zero-size dimension, got \(2, 1, 0, 3\)"):
        conv.conv2d_forward(np.ones((1, 1, 4, 4)), np.ones((2, 1, 0, 3)), None, np.empty((1, 2, 5, 2)))


def test_empty_batch_computes_nothing_and_a_zero_weight_gradient():
    x, w = np.ones((0, 2, 5, 5)), np.ones((3, 2, 3, 3))
    out = conv.conv2d_forward(x, w, np.ones(3), np.empty((0, 3, 3, 3)))
    assert out.shape == (0, 3, 3, 3)
    gi = conv.conv2d_backward_input(np.empty((0, 3, 3, 3)), w, np.empty_like(x))
    assert gi.shape == x.shape
    gw = conv.conv2d_backward_weight(x, np.empty((0, 3, 3, 3)), np.full_like(w, np.nan))
    np.testing.assert_array_equal(gw, 0.0)


def test_max_pool_with_a_stride_past_the_limit_is_a_value_error_not_a_system_error():
    x, out, idx = np.ones((1, 1, 4, 4)), np.empty((1, 1, 2, 1)), np.empty((1, 1, 2, 1), np.int64)
    with pytest.raises(ValueError, match=r"max_pool2d_forward: stride must be at most 2147483647, got \(2, 1099511627776\)"):
        pool.max_pool2d_forward(x, out, idx, (2, 2), (2, 2**40))


def test_max_pool_with_the_largest_stride_allocates_no_stride_sized_buffer():
    # Its row is split into stride phases; only the phases inside the row are kept.
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    out, idx = np.empty((1, 1, 1, 1)), np.empty((1, 1, 1, 1), np.int64)
    pool.max_pool2d_forward(x, out, idx, (2, 2), (GEOMETRY_LIMIT, GEOMETRY_LIMIT))
    assert out[0, 0, 0, 0] == 5.0 and idx[0, 0, 0, 0] == 5


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x, o: pool.avg_pool2d_forward(x, o, (2, 2), (2, -1)), r"avg_pool2d_forward: stride must be positive"),
        (lambda x, o: pool.avg_pool2d_forward(x, o, None, (2, 2)), "avg_pool2d_forward: kernel_size must be 2 ints, got None"),
        (lambda x, o: pool.avg_pool2d_forward(x, o, (2, 2), (2, 2), (0, 2**63)), "padding must be at most"),
        (lambda x, o: pool.avg_pool2d_forward(x, o, (2, 2), (2, 2), divisor_override=2.5), "divisor_override must be None or a non-zero int"),
    ],
)
def test_pool_kernels_refuse_hostile_arguments_by_name(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call(np.ones((1, 1, 4, 4)), np.empty((1, 1, 2, 2)))


def test_kernels_refuse_an_output_that_overlaps_an_input():
    x = np.ones((1, 1, 4, 4))
    with pytest.raises(ValueError, match=r"avg_pool2d_forward: out \(1, 1, 4, 4\) overlaps x"):
        pool.avg_pool2d_forward(x, x, (1, 1), (1, 1))
    with pytest.raises(ValueError, match="adaptive_avg_pool2d_backward: grad_in .* overlaps grad_out"):
        pool.adaptive_avg_pool2d_backward(x, x)
    with pytest.raises(ValueError, match="max_pool2d_forward: out .* overlaps x"):
        pool.max_pool2d_forward(x, x, np.empty((1, 1, 4, 4), np.int64), (1, 1), (1, 1))
    w = np.ones((1, 1, 1, 1))
    with pytest.raises(ValueError, match="conv2d_forward: out .* overlaps weight"):
        conv.conv2d_forward(np.ones((1, 1, 1, 1)), w, None, w)
    with pytest.raises(ValueError, match="conv2d_backward_weight: grad_weight .* overlaps x"):
        conv.conv2d_backward_weight(w, np.ones((1, 1, 1, 1)), w)
    np.testing.assert_array_equal(x, 1.0)
    with pytest.raises(ValueError, match="gemm_nn: out .* overlaps a"):
        matmul.gemm_nn(x[0, 0], np.ones((4, 4)), x[0, 0])


def test_pooling_reads_a_read_only_input():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x.flags.writeable = False
    out = pool.avg_pool2d_forward(x, np.empty((1, 1, 2, 2)), (2, 2), (2, 2))
    np.testing.assert_array_equal(out[0, 0], [[2.5, 4.5], [10.5, 12.5]])
    out = pool.adaptive_avg_pool2d_forward(x, np.empty((1, 1, 1, 1)))
    assert out[0, 0, 0, 0] == 7.5
    grad = np.ones((1, 1, 2, 2))
    grad.flags.writeable = False
    gi = pool.avg_pool2d_backward(grad, np.empty((1, 1, 4, 4)), (2, 2), (2, 2))
    np.testing.assert_array_equal(gi, 0.25)


@pytest.mark.parametrize(
    "value, error, message",
    [
        (None, TypeError, r"k: s must be an int or 2 ints, got None \(NoneType\)"),
        (1.5, TypeError, r"k: s must be an int or 2 ints, got 1.5 \(float\)"),
        ("2", TypeError, "k: s must be an int or 2 ints, got '2' \\(str\\)"),
        ((2, 2.0), TypeError, r"got \(2, 2.0\) \(holding float\)"),
        (True, TypeError, r"got True \(bool\)"),
        ((1, 2, 3), ValueError, r"k: s must be an int or 2 ints, got \(1, 2, 3\)"),
        (2**63, ValueError, "k: s must be at most 2147483647, got 9223372036854775808"),
        (0, ValueError, "k: s must be positive, got 0"),
        # Tuples of two plain ints take a shortcut, which must refuse the same values.
        ((True, 1), TypeError, r"got \(True, 1\) \(holding bool\)"),
        ((1, 0), ValueError, r"k: s must be positive, got \(1, 0\)"),
        ((2**31, 1), ValueError, r"k: s must be at most 2147483647, got \(2147483648, 1\)"),
    ],
)
def test_int_tuple_names_op_argument_and_value(value, error, message):
    with pytest.raises(error, match=message):
        int_tuple("k", "s", value, 2, 1, expand=True)


def test_int_tuple_accepts_numpy_integers_and_a_single_value():
    assert int_tuple("k", "s", (np.int64(3),), 2, 1, expand=True) == (3, 3)
    assert int_tuple("k", "s", [np.int32(1), 2], 2, 1) == (1, 2)
    assert all(type(v) is int for v in int_tuple("k", "s", np.int64(4), 2, 1, expand=True))
    assert int_tuple("k", "s", (1, 2), 2, 1) == (1, 2)
    assert int_tuple("k", "p", (-3, 0), 2, -5) == (-3, 0)


def test_overlap_check_sees_views_and_buffers_of_one_allocation():
    owner = np.zeros((4, 4))
    # Two views of one array, a view against its owner, and two arrays over one buffer (memory the
    # check cannot attribute to an owning array) all overlap; outputs are checked against each other.
    with pytest.raises(ValueError, match=r"k: out \(2, 2\) overlaps a \(2, 2\) in memory"):
        check_disjoint("k", {"out": owner[1:3, 1:3]}, {"a": owner[:2, :2], "b": np.ones(2)})
    with pytest.raises(ValueError, match="k: out .* overlaps b"):
        check_disjoint("k", {"out": owner.reshape(16)[4:8]}, {"a": None, "b": owner})
    with pytest.raises(ValueError, match="k: first .* overlaps second"):
        check_disjoint("k", {"first": owner[0], "second": owner[:, 0]}, {})
    raw = bytearray(8 * 4)
    with pytest.raises(ValueError, match="k: out .* overlaps a"):
        check_disjoint("k", {"out": np.frombuffer(raw, np.float64)}, {"a": np.frombuffer(raw, np.float64)[1:]})
    with pytest.raises(ValueError, match="gemm_nn: out .* overlaps a"):
        matmul.gemm_nn(owner[:2], np.ones((4, 4)), owner[1:3])


def test_overlap_check_lets_views_of_separate_allocations_through():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    out = np.zeros((4, 4))
    check_disjoint("k", {"out": out[1:3], "other": out[3]}, {"a": a.reshape(6), "b": b.T, "c": None})
    matmul.gemm_nn(a.reshape(6).reshape(2, 3), b.T.T, out[1:3])
    np.testing.assert_array_equal(out[1:3], a @ b)
    np.testing.assert_array_equal(out[[0, 3]], 0.0)
