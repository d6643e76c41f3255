"""Edge cases of the conv, pooling and matmul ops found by adversarial testing (issue 9): empty
batches and inner dimensions give PyTorch's empty results and zero gradients, read-only inputs
pool, and hostile arguments are a TypeError/ValueError naming the op, the argument and the value.
(Cases that crashed the process live in tests/kernels/test_conv_pool_properties.py, which runs
them in a subprocess.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff

F = numdiff.nn.functional
TF = torch.nn.functional


def _pair(shape_x, shape_w, rng):
    x = rng.standard_normal(shape_x)
    w = rng.standard_normal(shape_w)
    return (
        (numdiff.tensor(x, requires_grad=True), numdiff.tensor(w, requires_grad=True)),
        (torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)),
    )


def _same_forward_and_grads(ours, theirs, inputs, tinputs):
    out, tout = ours(*inputs), theirs(*tinputs)
    assert tuple(out.shape) == tuple(tout.shape)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), atol=1e-12)
    if out.numel():
        g = np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape))
        out.backward(numdiff.tensor(g))
        tout.backward(torch.tensor(g))
    else:
        out.sum().backward()
        tout.sum().backward()
    for ours_in, theirs_in in zip(inputs, tinputs):
        assert tuple(ours_in.grad.shape) == tuple(theirs_in.grad.shape)
        np.testing.assert_allclose(ours_in.grad.numpy(), theirs_in.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize(
    "ours, theirs, shape_x, shape_w",
    [
        (F.conv2d, TF.conv2d, (0, 2, 5, 5), (3, 2, 3, 3)),
        (F.conv1d, TF.conv1d, (0, 2, 7), (3, 2, 3)),
        (F.conv_transpose2d, TF.conv_transpose2d, (0, 2, 4, 4), (2, 3, 3, 3)),
    ],
    ids=["conv2d", "conv1d", "conv_transpose2d"],
)
def test_empty_batch_gives_empty_output_and_zero_weight_gradient(ours, theirs, shape_x, shape_w):
    inputs, tinputs = _pair(shape_x, shape_w, np.random.default_rng(0))
    _same_forward_and_grads(ours, theirs, inputs, tinputs)
    assert np.all(inputs[1].grad.numpy() == 0)


def test_empty_batch_conv_with_bias_gives_zero_bias_gradient():
    x = numdiff.zeros(0, 2, 5, 5, dtype=numdiff.float64)
    w = numdiff.ones(3, 2, 3, 3, dtype=numdiff.float64, requires_grad=True)
    b = numdiff.ones(3, dtype=numdiff.float64, requires_grad=True)
    F.conv2d(x, w, b).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), 0.0)


@pytest.mark.parametrize(
    "ours, theirs, shape_a, shape_b",
    [
        (numdiff.matmul, torch.matmul, (2, 0), (0, 3)),
        (numdiff.matmul, torch.matmul, (4, 2, 0), (0, 3)),
        (numdiff.matmul, torch.matmul, (2, 0), (3, 0, 5)),
        (numdiff.bmm, torch.bmm, (2, 2, 0), (2, 0, 3)),
        (F.linear, TF.linear, (2, 0), (3, 0)),
        (F.linear, TF.linear, (5, 2, 0), (3, 0)),
    ],
)
def test_empty_inner_dimension_gives_zeros_and_empty_gradients(ours, theirs, shape_a, shape_b):
    inputs, tinputs = _pair(shape_a, shape_b, np.random.default_rng(1))
    _same_forward_and_grads(ours, theirs, inputs, tinputs)


def test_pools_compute_on_a_read_only_input():
    data = np.arange(32.0).reshape(1, 2, 4, 4)
    data.flags.writeable = False
    x = numdiff.from_numpy(data)
    expected = TF.avg_pool2d(torch.tensor(data.copy()), 2).numpy()
    np.testing.assert_allclose(F.avg_pool2d(x, 2).numpy(), expected)
    expected = TF.adaptive_avg_pool2d(torch.tensor(data.copy()), (3, 1)).numpy()
    np.testing.assert_allclose(F.adaptive_avg_pool2d(x, (3, 1)).numpy(), expected)


def test_max_pool_window_wholly_in_padding_reports_pytorchs_index():
    x = numdiff.tensor([[[[3.0]]]])
    options = dict(stride=1, padding=(0, 1), dilation=(1, 2), return_indices=True)
    out, idx = F.max_pool2d(x, (1, 2), **options)
    t_out, t_idx = TF.max_pool2d(torch.tensor([[[[3.0]]]]), (1, 2), **options)
    assert idx.tolist() == t_idx.tolist() == [[[[1]]]]
    assert out.tolist() == t_out.tolist()


BAD = [
    (lambda: F.conv2d(numdiff.ones(1, 1, 4, 4), numdiff.ones(2, 1, 0, 3)), ValueError,
     r"conv2d: weight must have no zero-size dimension, got shape \(2, 1, 0, 3\)"),
    (lambda: F.conv2d(numdiff.ones(1, 0, 4, 4), numdiff.ones(2, 0, 3, 3)), ValueError,
     r"conv2d: weight must have no zero-size dimension"),
    (lambda: F.conv1d(numdiff.ones(1, 1, 5), numdiff.ones(1, 1, 3), stride=1.5), TypeError,
     r"conv1d: stride must be an int or 1 ints, got 1.5 \(float\)"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3), padding=None), TypeError,
     "conv2d: padding must be an int or 2 ints, got None"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3), dilation=2**63), ValueError,
     "conv2d: dilation must be at most 2147483647, got 9223372036854775808"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3), groups=1.0), TypeError,
     r"conv2d: groups must be a positive int, got 1.0 \(float\)"),
    (lambda: F.conv_transpose2d(numdiff.ones(1, 1, 3, 3), numdiff.ones(1, 1, 3, 3), stride=2**40), ValueError,
     "conv_transpose2d: stride must be at most 2147483647, got 1099511627776"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 1, 1), padding=2**31 - 1), ValueError,
     r"conv2d: the output would have shape \(1, 1, 4294967299, 4294967299\)"),
    (lambda: F.max_pool2d(numdiff.ones(1, 1, 4, 4), None), TypeError,
     r"max_pool2d: kernel_size must be an int or 2 ints, got None \(NoneType\)"),
    (lambda: F.max_pool2d(numdiff.ones(1, 1, 4, 4), 2, stride=1.5), TypeError,
     r"max_pool2d: stride must be an int or 2 ints, got 1.5 \(float\)"),
    (lambda: F.max_pool2d(numdiff.ones(1, 1, 4, 4), 2, stride=2**40), ValueError,
     "max_pool2d: stride must be at most 2147483647, got 1099511627776"),
    (lambda: F.max_pool1d(numdiff.ones(1, 1, 4), 2**63), ValueError,
     "max_pool1d: kernel_size must be at most 2147483647, got 9223372036854775808"),
    (lambda: F.avg_pool2d(numdiff.ones(1, 1, 4, 4), (2, None)), TypeError,
     r"avg_pool2d: kernel_size must be an int or 2 ints, got \(2, None\) \(holding NoneType\)"),
    (lambda: F.avg_pool2d(numdiff.ones(1, 1, 4, 4), 2, divisor_override=1.5), TypeError,
     r"avg_pool2d: divisor_override must be None or a non-zero int, got 1.5 \(float\)"),
    (lambda: F.adaptive_avg_pool2d(numdiff.ones(1, 1, 4, 4), 2**63), ValueError,
     "adaptive_avg_pool2d: output_size must be at most 2147483647"),
    (lambda: F.adaptive_max_pool2d(numdiff.ones(1, 1, 4, 4), 2.5), TypeError,
     r"adaptive_max_pool2d: output_size must be an int or 2 values, got 2.5 \(float\)"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,message", BAD, ids=[b[2][:48] for b in BAD])
def test_hostile_arguments_name_the_op_argument_and_value(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "ours, theirs, options",
    [
        (F.max_pool2d, TF.max_pool2d, dict(return_indices=True)),
        (F.avg_pool2d, TF.avg_pool2d, {}),
        (F.avg_pool2d, TF.avg_pool2d, dict(count_include_pad=False)),
    ],
)
def test_pooling_window_far_wider_than_the_image_visits_only_the_taps_inside(ours, theirs, options):
    # Kernel 2**31 - 1 with padding 2**30 - 1 over 6 columns is valid; the CPU kernels used to
    # allocate and loop over every tap (16 GiB), PyTorch and now numdiff only over those inside.
    x = np.random.default_rng(3).standard_normal((1, 2, 5, 6))
    args = ((3, 2**31 - 1),)
    kw = dict(stride=(1, 2**31 - 1), padding=(1, 2**30 - 1), **options)
    out, t_out = ours(numdiff.tensor(x), *args, **kw), theirs(torch.tensor(x), *args, **kw)
    if isinstance(out, tuple):
        np.testing.assert_array_equal(out[1].numpy(), t_out[1].numpy())
        out, t_out = out[0], t_out[0]
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-12, atol=1e-15)
