"""Pooling against torch 2.13 on randomized arguments (values, indices, first and second
derivatives, both float dtypes), including ceil_mode windows that start in padding, NaN inputs,
non-contiguous input, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import numdiff

torch = pytest.importorskip("torch")
F = numdiff.nn.functional
TF = torch.nn.functional
TOL = {np.float64: dict(rtol=1e-9, atol=1e-12), np.float32: dict(rtol=2e-4, atol=1e-6)}


def _no_ties(rng, shape):
    """A shuffled grid: max pooling picks the same element in both libraries."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - 20.0) * 0.25


def _parity(ours_fn, torch_fn, array, dtype):
    x = numdiff.tensor(array.astype(dtype), requires_grad=True)
    tx = torch.tensor(array.astype(dtype), requires_grad=True)
    out, expected = ours_fn(x), torch_fn(tx)
    if isinstance(expected, tuple):
        np.testing.assert_array_equal(out[1].numpy(), expected[1].numpy())
        assert out[1].dtype == numdiff.int64
        out, expected = out[0], expected[0]
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), **TOL[dtype])
    upstream = np.random.default_rng(0).standard_normal(tuple(expected.shape)).astype(dtype)
    out.backward(numdiff.tensor(upstream))
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **TOL[dtype])


window = dict(
    dims=st.sampled_from([1, 2]),
    size=st.integers(1, 8),
    kernel=st.integers(1, 4),
    stride=st.integers(1, 3),
    padding=st.integers(0, 2),
    ceil_mode=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
)


def _fits(size, kernel, padding, dilation):
    """PyTorch's rules: padding at most half the kernel, and the window fits the padded input."""
    return padding <= kernel // 2 and size + 2 * padding >= dilation * (kernel - 1) + 1


def _every_window_touches_input(size, kernel, stride, padding, dilation, ceil_mode):
    """False when some window's taps all fall in padding (size 1, kernel 2, dilation 2, padding
    1): the output there is -inf in both libraries, but PyTorch's backward then adds the gradient
    at an index past the plane, into the neighbouring plane, which numdiff does not copy."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return all(
        any(0 <= o * stride - padding + i * dilation < size for i in range(kernel)) for o in range(out)
    )


@settings(max_examples=40, deadline=None)
@given(dilation=st.integers(1, 2), return_indices=st.booleans(), **window)
def test_max_pool_matches_torch(
    dims, size, kernel, stride, padding, ceil_mode, dtype, dilation, return_indices
):
    assume(_fits(size, kernel, padding, dilation))
    assume(
        all(
            _every_window_touches_input(n, kernel, stride, padding, dilation, ceil_mode)
            for n in (size, size + 1)
        )
    )
    shape = (2, 2) + ((size,) if dims == 1 else (size, size + 1))
    array = _no_ties(np.random.default_rng(size), shape)
    options = dict(
        kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
        return_indices=return_indices,
    )  # fmt: skip
    ours, theirs = (F.max_pool1d, TF.max_pool1d) if dims == 1 else (F.max_pool2d, TF.max_pool2d)
    _parity(lambda x: ours(x, **options), lambda x: theirs(x, **options), array, dtype)


@settings(max_examples=40, deadline=None)
@given(count_include_pad=st.booleans(), divisor=st.sampled_from([None, 2, 5]), **window)
def test_avg_pool_matches_torch(
    dims, size, kernel, stride, padding, ceil_mode, dtype, count_include_pad, divisor
):
    assume(_fits(size, kernel, padding, 1))
    shape = (2, 2) + ((size,) if dims == 1 else (size + 1, size))
    array = np.random.default_rng(size).standard_normal(shape)
    options = dict(
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )
    if dims == 2:
        options["divisor_override"] = divisor
    ours, theirs = (F.avg_pool1d, TF.avg_pool1d) if dims == 1 else (F.avg_pool2d, TF.avg_pool2d)
    _parity(lambda x: ours(x, **options), lambda x: theirs(x, **options), array, dtype)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool_ceil_mode_window_starting_in_padding(ceil_mode, count_include_pad):
    # H = 6, kernel 3, stride 2, padding 1: with ceil_mode the last window starts at row 5 and its
    # padded extent is clipped to size + padding = 7 (divisor 2*3 with count_include_pad).
    array = np.random.default_rng(9).standard_normal((1, 2, 6, 6))
    options = dict(
        kernel_size=3, stride=2, padding=1, ceil_mode=ceil_mode, count_include_pad=count_include_pad
    )
    _parity(lambda x: F.avg_pool2d(x, **options), lambda x: TF.avg_pool2d(x, **options), array, np.float64)


@pytest.mark.parametrize("out_size", [(3, 2), (5, 7), (1, 1), (None, 3), 4])
def test_adaptive_pools_match_torch(out_size):
    rng = np.random.default_rng(10)
    array = _no_ties(rng, (2, 3, 5, 7))
    _parity(
        lambda x: F.adaptive_avg_pool2d(x, out_size),
        lambda x: TF.adaptive_avg_pool2d(x, out_size),
        array,
        np.float64,
    )
    _parity(
        lambda x: F.adaptive_max_pool2d(x, out_size, return_indices=True),
        lambda x: TF.adaptive_max_pool2d(x, out_size, return_indices=True),
        array,
        np.float32,
    )


@pytest.mark.parametrize("length", [1, 3, 8])
def test_adaptive_avg_pool1d_matches_torch(length):
    array = np.random.default_rng(11).standard_normal((2, 3, 7))
    _parity(
        lambda x: F.adaptive_avg_pool1d(x, length),
        lambda x: TF.adaptive_avg_pool1d(x, length),
        array,
        np.float32,
    )


def test_window_wholly_in_padding_gives_minus_inf_and_no_gradient():
    # Taps at rows -1 and 1 of a 1-row input: PyTorch also gives -inf and index 1 (past the plane).
    x = numdiff.tensor(np.arange(4.0).reshape(2, 2, 1), requires_grad=True)
    values, indices = F.max_pool1d(x, 2, 1, 1, dilation=2, return_indices=True)
    expected, expected_indices = TF.max_pool1d(
        torch.arange(4.0).reshape(2, 2, 1), 2, 1, 1, 2, return_indices=True
    )
    np.testing.assert_array_equal(values.detach().numpy(), expected.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    values.backward(numdiff.ones(*values.shape))
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 2, 1)))


def test_max_pool_nan_propagates_with_torch_index():
    array = _no_ties(np.random.default_rng(12), (1, 2, 6, 6))
    array[0, 0, 1, 1] = array[0, 1, 2, 3] = array[0, 1, 3, 3] = np.nan
    values, indices = F.max_pool2d(numdiff.tensor(array), 3, 2, 1, return_indices=True)
    expected, expected_indices = TF.max_pool2d(torch.tensor(array), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(values.numpy(), expected.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())


@pytest.mark.parametrize(
    "fn",
    [
        lambda f, x: f.max_pool2d(x, 3, 2, 1, ceil_mode=True),
        lambda f, x: f.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        lambda f, x: f.adaptive_avg_pool2d(x, (2, 3)),
        lambda f, x: f.adaptive_max_pool2d(x, (2, 3)),
    ],
    ids=["max", "avg", "adaptive_avg", "adaptive_max"],
)
def test_double_backward_matches_torch(fn):
    array = _no_ties(np.random.default_rng(13), (2, 2, 5, 6))
    weights = np.random.default_rng(14).standard_normal((2, 2, 5, 6))
    x, tx = numdiff.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    w, tw = numdiff.tensor(weights, requires_grad=True), torch.tensor(weights, requires_grad=True)
    (gx,) = numdiff.autograd.grad((fn(F, x * w) ** 2).sum(), x, create_graph=True)
    (tgx,) = torch.autograd.grad((fn(TF, tx * tw) ** 2).sum(), tx, create_graph=True)
    (gx**2).sum().backward()
    (tgx**2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "view", [lambda t: t.permute(0, 1, 3, 2), lambda t: t[:, 1:, ::2]], ids=["permuted", "strided"]
)
def test_non_contiguous_input(view):
    array = _no_ties(np.random.default_rng(15), (2, 3, 8, 7))
    _parity(lambda x: F.max_pool2d(view(x), 2), lambda x: TF.max_pool2d(view(x), 2), array, np.float64)
    _parity(
        lambda x: F.avg_pool2d(view(x), 3, 1, 1), lambda x: TF.avg_pool2d(view(x), 3, 1, 1), array, np.float64
    )


def test_unbatched_input_matches_torch():
    array = _no_ties(np.random.default_rng(16), (3, 6, 6))
    _parity(
        lambda x: F.max_pool2d(x, 2, return_indices=True),
        lambda x: TF.max_pool2d(x, 2, return_indices=True),
        array,
        np.float64,
    )
    _parity(lambda x: F.avg_pool1d(x, 3), lambda x: TF.avg_pool1d(x, 3), array[0], np.float64)


BAD = [
    (lambda: F.max_pool2d(numdiff.ones(1, 1, 5, 5), 3, padding=2), ValueError,
     r"max_pool2d: padding \(2, 2\) must be at most half the kernel size \(3, 3\)"),
    (lambda: F.max_pool2d(numdiff.ones(1, 1, 5, 5), 2, stride=0), ValueError, "max_pool2d: stride must be positive, got 0"),
    (lambda: F.max_pool2d(numdiff.ones(1, 1, 2, 2), 3, padding=1, dilation=2), ValueError,
     r"max_pool2d: kernel_size \(3, 3\) with dilation \(2, 2\) does not fit input \(1, 1, 2, 2\)"),
    (lambda: F.max_pool2d(numdiff.ones(5), 2), ValueError,
     r"max_pool2d: expected a 4-D \(batched\) or 3-D \(unbatched\) input, got shape \(5,\)"),
    (lambda: F.avg_pool1d(numdiff.ones(1, 1, 5, 5), 2), ValueError, "avg_pool1d: expected a 3-D"),
    (lambda: F.avg_pool2d(numdiff.ones(1, 1, 4, 4), 2, divisor_override=0), ValueError,
     "avg_pool2d: divisor_override must be a non-zero int, got 0"),
    (lambda: F.max_pool2d(numdiff.ones(1, 1, 4, 4, dtype=numdiff.int64), 2), TypeError,
     "max_pool2d: input must be a floating-point tensor"),
    (lambda: F.adaptive_avg_pool2d(numdiff.ones(1, 1, 4, 4), (0, 2)), ValueError,
     r"adaptive_avg_pool2d: output_size must be positive, got \(0, 2\)"),
    (lambda: F.adaptive_max_pool2d(numdiff.ones(1, 1, 4, 4), (1, 2, 3)), ValueError,
     r"adaptive_max_pool2d: output_size must be an int or 2 values, got \(1, 2, 3\)"),
    (lambda: F.max_pool2d(numdiff.ones(1, 1, 4, 4), (2, 2, 2)), ValueError,
     r"max_pool2d: kernel_size must be an int or 2 ints, got \(2, 2, 2\)"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,message", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_arguments_raise_before_any_kernel_runs(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "pool,valid,bad,message",
    [
        (F.max_pool2d, dict(kernel_size=1), dict(kernel_size=True), "max_pool2d: kernel_size must be an int or 2 ints, got True"),
        (F.avg_pool2d, dict(stride=(2, 2)), dict(stride=(2.0, 2)), r"avg_pool2d: stride must be an int or 2 ints, got \(2.0, 2\)"),
        (F.max_pool2d, dict(padding=(0, 0)), dict(padding=(False, 0)), r"max_pool2d: padding must be an int or 2 ints, got \(False, 0\)"),
    ],
)  # fmt: skip
def test_remembered_window_checks_still_refuse_values_equal_to_a_valid_one(pool, valid, bad, message):
    # The pooling ops remember the checks of a window they have seen (numdiff._ground.args.
    # remember_checks): True, False and 2.0 compare equal to 1, 0 and 2, so the bad call must not
    # reuse the remembered result of the valid call before it, which differs only in those values.
    x = numdiff.ones(1, 1, 4, 4)
    base = {"kernel_size": 2, "stride": 2, "padding": 0}
    pool(x, **{**base, **valid})
    for _ in range(2):
        with pytest.raises(TypeError, match=message):
            pool(x, **{**base, **bad})
