"""conv1d/conv2d/conv_transpose1d/conv_transpose2d against torch 2.13 on randomized arguments
(forward, first and second derivatives, both float dtypes), non-contiguous input, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import numdiff

torch = pytest.importorskip("torch")
F = numdiff.nn.functional
TF = torch.nn.functional
TOL = {np.float64: dict(rtol=1e-9, atol=1e-11), np.float32: dict(rtol=2e-4, atol=2e-4)}


def _parity(ours_fn, torch_fn, arrays, dtype):
    """Forward, then every input gradient for a random upstream gradient, against torch."""
    ours = [numdiff.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    out, expected = ours_fn(*ours), torch_fn(*theirs)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), **TOL[dtype])
    upstream = np.random.default_rng(0).standard_normal(tuple(expected.shape)).astype(dtype)
    out.backward(numdiff.tensor(upstream))
    expected.backward(torch.tensor(upstream))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL[dtype])


@settings(max_examples=30, deadline=None)
@given(
    dims=st.sampled_from([1, 2]),
    n=st.integers(1, 2),
    cg=st.integers(1, 2),
    cog=st.integers(1, 2),
    groups=st.integers(1, 2),
    size=st.integers(3, 7),
    kernel=st.integers(1, 3),
    stride=st.integers(1, 2),
    dilation=st.integers(1, 2),
    padding=st.sampled_from([0, 1, 2, "same", "valid"]),
    bias=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_conv_matches_torch_on_random_arguments(
    dims, n, cg, cog, groups, size, kernel, stride, dilation, padding, bias, dtype
):
    if padding == "same":
        stride = 1
    spatial = (size,) * dims if dims == 1 else (size, size + 1)
    kernel_shape = (kernel,) * dims if dims == 1 else (kernel, max(1, kernel - 1))
    padded = min(spatial) + 2 * (padding if isinstance(padding, int) else 0)
    assume(padding == "same" or padded >= dilation * (max(kernel_shape) - 1) + 1)
    rng = np.random.default_rng(size * 7 + kernel)
    arrays = [
        rng.standard_normal((n, cg * groups) + spatial),
        rng.standard_normal((cog * groups, cg) + kernel_shape),
    ]
    if bias:
        arrays.append(rng.standard_normal(cog * groups))
    ours = F.conv1d if dims == 1 else F.conv2d
    theirs = TF.conv1d if dims == 1 else TF.conv2d
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)

    def call(fn):
        return lambda x, w, b=None: fn(x, w, b, **options)

    _parity(call(ours), call(theirs), arrays, dtype)


@settings(max_examples=25, deadline=None)
@given(
    dims=st.sampled_from([1, 2]),
    cin=st.integers(1, 2),
    cout_g=st.integers(1, 2),
    groups=st.integers(1, 2),
    size=st.integers(1, 4),
    kernel=st.integers(1, 3),
    stride=st.integers(1, 3),
    dilation=st.integers(1, 2),
    padding=st.integers(0, 2),
    extra=st.integers(0, 2),
    bias=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_conv_transpose_matches_torch_on_random_arguments(
    dims, cin, cout_g, groups, size, kernel, stride, dilation, padding, extra, bias, dtype
):
    extra = min(extra, max(stride, dilation) - 1)
    assume((size - 1) * stride - 2 * padding + dilation * (kernel - 1) + extra + 1 >= 1)
    rng = np.random.default_rng(size * 11 + kernel)
    arrays = [
        rng.standard_normal((2, cin * groups) + (size,) * dims),
        rng.standard_normal((cin * groups, cout_g) + (kernel,) * dims),
    ]
    if bias:
        arrays.append(rng.standard_normal(cout_g * groups))
    ours = F.conv_transpose1d if dims == 1 else F.conv_transpose2d
    theirs = TF.conv_transpose1d if dims == 1 else TF.conv_transpose2d
    options = dict(stride=stride, padding=padding, output_padding=extra, groups=groups, dilation=dilation)

    def call(fn):
        return lambda x, w, b=None: fn(x, w, b, **options)

    _parity(call(ours), call(theirs), arrays, dtype)


def test_double_backward_matches_torch():
    rng = np.random.default_rng(5)
    x0, w0 = rng.standard_normal((2, 4, 6, 5)), rng.standard_normal((4, 2, 3, 3))
    x, w = numdiff.tensor(x0, requires_grad=True), numdiff.tensor(w0, requires_grad=True)
    tx, tw = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    options = dict(stride=2, padding=1, dilation=(1, 2), groups=2)
    gx, gw = numdiff.autograd.grad((F.conv2d(x, w, **options) ** 2).sum(), (x, w), create_graph=True)
    tgx, tgw = torch.autograd.grad((TF.conv2d(tx, tw, **options) ** 2).sum(), (tx, tw), create_graph=True)
    ((gx**2).sum() + (gw**3).sum()).backward()
    ((tgx**2).sum() + (tgw**3).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "view",
    [lambda t: t.permute(0, 1, 3, 2), lambda t: t[:, :, ::2, 1:], lambda t: t.flip(1)],
    ids=["permuted", "strided", "flipped"],
)
def test_non_contiguous_input_and_weight(view):
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal((2, 3, 8, 7)), rng.standard_normal((4, 3, 3, 3))]
    _parity(
        lambda x, w: F.conv2d(view(x), view(w), padding=1),
        lambda x, w: TF.conv2d(view(x), view(w), padding=1),
        arrays,
        np.float64,
    )


def test_unbatched_input_matches_torch():
    rng = np.random.default_rng(7)
    _parity(
        F.conv2d, TF.conv2d, [rng.standard_normal((3, 5, 5)), rng.standard_normal((2, 3, 2, 2))], np.float64
    )
    _parity(
        F.conv_transpose1d,
        TF.conv_transpose1d,
        [rng.standard_normal((2, 5)), rng.standard_normal((2, 3, 2))],
        np.float64,
    )


BAD = [
    (lambda: F.conv2d(numdiff.ones(1, 3, 5, 5), numdiff.ones(4, 2, 3, 3), groups=2), ValueError,
     "conv2d: groups=2 must divide in_channels=3 and out_channels=4"),
    (lambda: F.conv2d(numdiff.ones(1, 3, 5, 5), numdiff.ones(4, 2, 3, 3)), ValueError,
     r"conv2d: weight \(4, 2, 3, 3\) with groups=1 expects input with 2 channels, got input \(1, 3, 5, 5\) with 3"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 2, 2), numdiff.ones(1, 1, 3, 3)), ValueError,
     r"conv2d: kernel size \(3, 3\) \(dilation \(1, 1\)\) is larger than the padded input \(2, 2\)"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3), stride=0), ValueError,
     "conv2d: stride must be positive, got 0"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3), padding=-1), ValueError,
     "conv2d: padding must be non-negative, got -1"),
    (lambda: F.conv2d(numdiff.ones(5, 5), numdiff.ones(1, 1, 3, 3)), ValueError,
     r"conv2d: expected a 4-D \(batched\) or 3-D \(unbatched\) input, got shape \(5, 5\)"),
    (lambda: F.conv1d(numdiff.ones(1, 1, 5), numdiff.ones(1, 1, 3, 3)), ValueError,
     r"conv1d: expected a 3-D weight, got shape \(1, 1, 3, 3\)"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3, dtype=numdiff.float64)), TypeError,
     "conv2d: input, weight and bias must share one dtype"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3), stride=2, padding="same"), ValueError,
     'conv2d: padding="same" is not supported for strided convolutions'),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3), padding="full"), ValueError,
     'conv2d: padding must be "same", "valid", an int or a tuple'),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5), numdiff.ones(2, 1, 3, 3), numdiff.ones(3)), ValueError,
     r"conv2d: bias must have shape \(2,\), got \(3,\)"),
    (lambda: F.conv2d(numdiff.ones(1, 1, 5, 5, dtype=numdiff.int64), numdiff.ones(1, 1, 3, 3)), TypeError,
     "conv2d: input must be a floating-point tensor"),
    (lambda: F.conv_transpose2d(numdiff.ones(1, 2, 3, 3), numdiff.ones(2, 1, 3, 3), stride=2, output_padding=2),
     ValueError, r"conv_transpose2d: output_padding \(2, 2\) must be smaller than either stride \(2, 2\)"),
    (lambda: F.conv_transpose2d(numdiff.ones(1, 3, 3, 3), numdiff.ones(2, 1, 3, 3)), ValueError,
     r"conv_transpose2d: weight \(2, 1, 3, 3\) expects input with 2 channels"),
    (lambda: F.conv_transpose2d(numdiff.ones(1, 2, 3, 3), numdiff.ones(2, 1, 3, 3), padding="same"), TypeError,
     "conv_transpose2d: padding must be an int or a tuple"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,message", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_arguments_raise_before_any_kernel_runs(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "valid,bad,message",
    [
        (dict(stride=1), dict(stride=True), "conv2d: stride must be an int or 2 ints, got True"),
        (dict(stride=(1, 1)), dict(stride=(1.0, 1)), r"conv2d: stride must be an int or 2 ints, got \(1.0, 1\) \(holding float\)"),
        (dict(padding=(1, 1)), dict(padding=(True, 1)), r"conv2d: padding must be an int or 2 ints, got \(True, 1\)"),
        (dict(groups=1), dict(groups=1.0), r"conv2d: groups must be a positive int, got 1.0"),
    ],
)  # fmt: skip
def test_remembered_checks_still_refuse_values_equal_to_a_valid_one(valid, bad, message):
    # conv2d remembers the checks of a configuration it has seen (numdiff._ground.args.
    # remember_checks); True and 1.0 compare equal to 1, so the bad call must not reuse the
    # remembered result of the valid call before it, which differs only in those values.
    x, w = numdiff.ones(1, 1, 5, 5), numdiff.ones(1, 1, 3, 3)
    base = {"stride": 1, "padding": 1, "groups": 1}
    F.conv2d(x, w, **{**base, **valid})
    for _ in range(2):
        with pytest.raises(TypeError, match=message):
            F.conv2d(x, w, **{**base, **bad})


def test_remembered_checks_raise_every_time_for_a_bad_configuration():
    x, w = numdiff.ones(1, 1, 2, 2), numdiff.ones(1, 1, 3, 3)
    for _ in range(2):
        with pytest.raises(ValueError, match="is larger than the padded input"):
            F.conv2d(x, w)
    for _ in range(2):
        with pytest.raises(ValueError, match=r"bias must have shape \(1,\), got \(2,\)"):
            F.conv_transpose2d(w, w, numdiff.ones(2))
