"""conv3d, conv_transpose3d and the 3-d pooling functions against torch 2.13 on randomized
arguments (forward and input gradients, float32 and float64), double backward, argmax indices,
vmap and compile, the layers, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import numdiff
from tests.ops.test_conv import TOL, _parity

torch = pytest.importorskip("torch")
F = numdiff.nn.functional
TF = torch.nn.functional
nn = numdiff.nn


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 2),
    cg=st.integers(1, 2),
    cog=st.integers(1, 2),
    groups=st.integers(1, 2),
    size=st.tuples(st.integers(2, 5), st.integers(2, 5), st.integers(2, 5)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from([0, 1, (1, 0, 2), "same", "valid"]),
    bias=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_conv3d_matches_torch_on_random_arguments(n, cg, cog, groups, size, kernel, stride, dilation, padding, bias, dtype):
    if padding == "same":
        stride = 1
    pads = (padding,) * 3 if isinstance(padding, int) else padding if isinstance(padding, tuple) else (0, 0, 0)
    assume(padding == "same" or all(s + 2 * p >= d * (k - 1) + 1 for s, p, d, k in zip(size, pads, dilation, kernel)))
    rng = np.random.default_rng(sum(size) * 7 + sum(kernel))
    arrays = [rng.standard_normal((n, cg * groups) + size), rng.standard_normal((cog * groups, cg) + kernel)]
    if bias:
        arrays.append(rng.standard_normal(cog * groups))
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    _parity(lambda x, w, b=None: F.conv3d(x, w, b, **options), lambda x, w, b=None: TF.conv3d(x, w, b, **options),
            arrays, dtype)


@settings(max_examples=20, deadline=None)
@given(
    cin=st.integers(1, 2),
    cout_g=st.integers(1, 2),
    groups=st.integers(1, 2),
    size=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 2), st.integers(1, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 1)),
    extra=st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 1)),
    bias=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_conv_transpose3d_matches_torch_on_random_arguments(
    cin, cout_g, groups, size, kernel, stride, dilation, padding, extra, bias, dtype
):
    extra = tuple(min(e, max(s, d) - 1) for e, s, d in zip(extra, stride, dilation))
    assume(all((n - 1) * s - 2 * p + d * (k - 1) + e + 1 >= 1
               for n, s, p, d, k, e in zip(size, stride, padding, dilation, kernel, extra)))
    rng = np.random.default_rng(sum(size) * 11 + sum(kernel))
    arrays = [rng.standard_normal((2, cin * groups) + size), rng.standard_normal((cin * groups, cout_g) + kernel)]
    if bias:
        arrays.append(rng.standard_normal(cout_g * groups))
    options = dict(stride=stride, padding=padding, output_padding=extra, groups=groups, dilation=dilation)
    _parity(lambda x, w, b=None: F.conv_transpose3d(x, w, b, **options),
            lambda x, w, b=None: TF.conv_transpose3d(x, w, b, **options), arrays, dtype)


POOLS = [
    ("max_pool3d", dict(kernel_size=2)),
    ("max_pool3d", dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), ceil_mode=True)),
    ("avg_pool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool3d", dict(kernel_size=(2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0), count_include_pad=False)),
    ("avg_pool3d", dict(kernel_size=(3, 2, 3), stride=2, padding=1, ceil_mode=True, divisor_override=4)),
    ("adaptive_avg_pool3d", dict(output_size=(3, 2, 4))),
    ("adaptive_max_pool3d", dict(output_size=(2, None, 3))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,options", POOLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(POOLS)])
def test_pool3d_matches_torch(name, options, dtype):
    rng = np.random.default_rng(3)
    x = rng.permutation(2 * 3 * 7 * 6 * 9).reshape(2, 3, 7, 6, 9) * 0.01  # no ties: one argmax
    _parity(lambda t: getattr(F, name)(t, **options), lambda t: getattr(TF, name)(t, **options), [x], dtype)


@pytest.mark.parametrize(
    "options",
    [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
     dict(kernel_size=(2, 2, 2), stride=2, padding=1, dilation=(5, 1, 2))],
)
def test_max_pool3d_indices_match_torch_with_ties_and_nan(options):
    x = np.round(np.random.default_rng(4).standard_normal((2, 2, 7, 6, 5)), 1)  # many ties
    x[0, 1, 2, 3, 1] = x[1, 0, 5, 0, 4] = x[1, 0, 5, 2, 4] = np.nan
    out, indices = F.max_pool3d(numdiff.tensor(x), return_indices=True, **options)
    expected, expected_indices = TF.max_pool3d(torch.tensor(x), return_indices=True, **options)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    assert indices.dtype is numdiff.int64


def test_adaptive_max_pool3d_indices_unbatched_match_torch():
    x = np.round(np.random.default_rng(5).standard_normal((3, 5, 4, 7)), 1)
    out, indices = F.adaptive_max_pool3d(numdiff.tensor(x), (2, 3, 3), return_indices=True)
    expected, expected_indices = TF.adaptive_max_pool3d(torch.tensor(x), (2, 3, 3), return_indices=True)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())


def test_conv3d_double_backward_matches_torch():
    rng = np.random.default_rng(6)
    x0, w0 = rng.standard_normal((2, 4, 5, 4, 5)), rng.standard_normal((4, 2, 3, 2, 3))
    x, w = numdiff.tensor(x0, requires_grad=True), numdiff.tensor(w0, requires_grad=True)
    tx, tw = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    options = dict(stride=(2, 1, 1), padding=1, dilation=(1, 1, 2), groups=2)
    gx, gw = numdiff.autograd.grad((F.conv3d(x, w, **options) ** 2).sum(), (x, w), create_graph=True)
    tgx, tgw = torch.autograd.grad((TF.conv3d(tx, tw, **options) ** 2).sum(), (tx, tw), create_graph=True)
    ((gx**2).sum() + (gw**3).sum()).backward()
    ((tgx**2).sum() + (tgw**3).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_vmap_of_conv3d_and_pooling_matches_a_loop():
    rng = np.random.default_rng(7)
    xs = numdiff.tensor(rng.standard_normal((3, 2, 2, 4, 5, 4)))
    w = numdiff.tensor(rng.standard_normal((3, 2, 2, 3, 2)))

    def f(x):
        pooled = F.max_pool3d(F.conv3d(x, w, padding=1), 2, ceil_mode=True)
        round_trip = F.avg_pool3d(
            F.conv_transpose3d(F.conv3d(x, w, stride=2), w, stride=2, output_padding=(1, 0, 1)), 2, ceil_mode=True
        )
        return numdiff.cat([pooled.reshape(-1), round_trip.reshape(-1), F.adaptive_max_pool3d(x, 2).reshape(-1)])

    batched = numdiff.func.vmap(f)(xs)
    np.testing.assert_allclose(batched.numpy(), np.stack([f(x).numpy() for x in xs]), rtol=1e-12, atol=1e-12)


INDEX_POOLS = {
    "max_pool1d": lambda x: F.max_pool1d(x[:, :, 0, 0], 2, return_indices=True)[1],
    "adaptive_max_pool1d": lambda x: F.adaptive_max_pool1d(x[:, :, 0, 0], 3, True)[1],
    "max_pool2d": lambda x: F.max_pool2d(x[:, :, 0], 3, 2, 1, return_indices=True)[1],
    "adaptive_max_pool2d": lambda x: F.adaptive_max_pool2d(x[:, :, 0], 3, True)[1],
    "max_pool3d": lambda x: F.max_pool3d(x, 2, return_indices=True)[1],
    "max_pool3d-unbatched": lambda x: F.max_pool3d(x[0], 2, ceil_mode=True, return_indices=True)[1],
    "adaptive_max_pool3d": lambda x: F.adaptive_max_pool3d(x, (2, 3, 2), True)[1],
}


@pytest.mark.parametrize("name", INDEX_POOLS)
def test_vmap_of_return_indices_gives_each_example_its_own(name):
    xs = numdiff.tensor(np.random.default_rng(18).standard_normal((3, 1, 2, 5, 4, 5)))
    batched = numdiff.func.vmap(INDEX_POOLS[name])(xs)
    np.testing.assert_array_equal(batched.numpy(), np.stack([INDEX_POOLS[name](x).numpy() for x in xs]))


def test_compiled_conv3d_step_matches_eager():
    model = nn.Sequential(nn.Conv3d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2), nn.Conv3d(3, 2, 2),
                          nn.Flatten(), nn.Linear(16, 1)).double()
    x = numdiff.tensor(np.random.default_rng(8).standard_normal((2, 2, 6, 6, 6)))
    eager = model(x).sum()
    eager.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled = numdiff.compile(model)
    out = compiled(x).sum()
    out.backward()
    np.testing.assert_allclose(out.item(), eager.item(), rtol=1e-12)
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_allclose(p.grad.numpy(), g.numpy(), rtol=1e-10, atol=1e-12)


def test_compiled_max_pool3d_indices_follow_each_call_input():
    def pooled(x):
        return F.max_pool3d(x, 2, padding=1, return_indices=True)[1], F.adaptive_max_pool3d(x, 2, True)[1]

    compiled = numdiff.compile(pooled)
    for seed in range(3):
        x = numdiff.tensor(np.random.default_rng(seed).standard_normal((1, 2, 3, 4, 3)))
        for got, want in zip(compiled(x), pooled(x)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_compiled_max_unpool_follows_each_call_indices():
    unpool = numdiff.compile(lambda v, i: F.max_unpool3d(v, i, 2))
    values = numdiff.ones(1, 1, 1, 1, 1)
    for position in range(3):
        indices = numdiff.tensor([[[[[position]]]]])
        np.testing.assert_array_equal(unpool(values, indices).numpy(), F.max_unpool3d(values, indices, 2).numpy())
        assert unpool(values, indices).numpy().reshape(-1)[position] == 1


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_layers_match_torch(padding_mode):
    ours = nn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=(1, 1, 1), groups=2, padding_mode=padding_mode).double()
    theirs = torch.nn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=(1, 1, 1), groups=2,
                             padding_mode=padding_mode).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(9).standard_normal((2, 4, 4, 5, 6))
    np.testing.assert_allclose(ours(numdiff.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               **TOL[np.float64])
    np.testing.assert_allclose(ours(numdiff.tensor(x[0])).detach().numpy(),
                               theirs(torch.tensor(x[0])).detach().numpy(), **TOL[np.float64])


def test_conv_transpose3d_layer_with_output_size_matches_torch():
    ours = nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    theirs = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(10).standard_normal((1, 2, 3, 4, 3))
    out = ours(numdiff.tensor(x), output_size=(6, 8, 5))
    np.testing.assert_allclose(out.detach().numpy(), theirs(torch.tensor(x), output_size=(6, 8, 5)).detach().numpy(),
                               **TOL[np.float64])


def test_pool3d_and_norm3d_layers_match_torch():
    x = np.random.default_rng(11).permutation(2 * 3 * 6 * 5 * 7).reshape(2, 3, 6, 5, 7) * 0.01
    pairs = [
        (nn.MaxPool3d(2, ceil_mode=True), torch.nn.MaxPool3d(2, ceil_mode=True)),
        (nn.AvgPool3d(3, 2, 1, count_include_pad=False), torch.nn.AvgPool3d(3, 2, 1, count_include_pad=False)),
        (nn.AvgPool3d(2, divisor_override=3), torch.nn.AvgPool3d(2, divisor_override=3)),
        (nn.AdaptiveAvgPool3d((2, 3, 1)), torch.nn.AdaptiveAvgPool3d((2, 3, 1))),
        (nn.AdaptiveMaxPool3d(2), torch.nn.AdaptiveMaxPool3d(2)),
        (nn.InstanceNorm3d(3, affine=True), torch.nn.InstanceNorm3d(3, affine=True)),
        (nn.BatchNorm3d(3), torch.nn.BatchNorm3d(3)),
    ]
    for ours, theirs in pairs:
        ours, theirs = ours.double(), theirs.double()
        for data in (x, x[0]):
            if isinstance(ours, nn.BatchNorm3d) and data.ndim == 4:
                continue
            np.testing.assert_allclose(ours(numdiff.tensor(data)).detach().numpy(),
                                       theirs(torch.tensor(data)).detach().numpy(), rtol=1e-6, atol=1e-6,
                                       err_msg=repr(ours))
    _, indices = nn.MaxPool3d(2, return_indices=True)(numdiff.tensor(x))
    np.testing.assert_array_equal(indices.numpy(), torch.nn.MaxPool3d(2, return_indices=True)(torch.tensor(x))[1].numpy())


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_inverts_max_pool_as_torch_does(dims):
    shape = (2, 3, 7, 5, 6)[: dims + 2]
    x = np.random.default_rng(12).permutation(int(np.prod(shape))).reshape(shape) * 0.1
    pool, unpool = getattr(F, f"max_pool{dims}d"), getattr(F, f"max_unpool{dims}d")
    tpool, tunpool = getattr(TF, f"max_pool{dims}d"), getattr(TF, f"max_unpool{dims}d")
    leaf, tleaf = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    values, indices = pool(leaf, 2, padding=1, return_indices=True)
    tvalues, tindices = tpool(tleaf, 2, padding=1, return_indices=True)
    out = unpool(values, indices, 2, padding=1, output_size=shape[2:])
    expected = tunpool(tvalues, tindices, 2, padding=1, output_size=shape[2:])
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    upstream = np.random.default_rng(13).standard_normal(shape)
    out.backward(numdiff.tensor(upstream))
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-12, atol=0)
    module = getattr(nn, f"MaxUnpool{dims}d")(2, padding=1)
    np.testing.assert_array_equal(module(values.detach()[0], indices[0], shape[2:]).numpy(), expected.detach().numpy()[0])


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("norm_type,kernel,stride,ceil_mode", [
    (2, 2, None, False), (3, 3, 2, True), (1.5, 2, 1, True), (float("inf"), 2, 1, False), (-float("inf"), 3, 2, True),
])  # fmt: skip
def test_lp_pool_and_its_layers_match_torch(dims, norm_type, kernel, stride, ceil_mode):
    shape = (2, 3, 6, 5, 7)[: dims + 2]
    x = np.random.default_rng(14).uniform(0.2, 2.0, shape) * np.random.default_rng(15).choice([-1, 1], shape)
    if norm_type == 1.5:
        x = np.abs(x)  # a fractional power of a negative sum is NaN in both libraries
    ours, theirs = getattr(F, f"lp_pool{dims}d"), getattr(TF, f"lp_pool{dims}d")
    _parity(lambda t: ours(t, norm_type, kernel, stride, ceil_mode),
            lambda t: theirs(t, norm_type, kernel, stride, ceil_mode), [x], np.float64)
    layer, torch_layer = getattr(nn, f"LPPool{dims}d"), getattr(torch.nn, f"LPPool{dims}d")
    np.testing.assert_allclose(layer(norm_type, kernel, stride, ceil_mode)(numdiff.tensor(x[0])).numpy(),
                               torch_layer(norm_type, kernel, stride, ceil_mode)(torch.tensor(x[0])).numpy(),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", [1, 3, 4, 9])
def test_adaptive_max_pool1d_and_its_layer_match_torch(size):
    x = np.round(np.random.default_rng(16).standard_normal((2, 3, 7)), 1)  # ties
    out, indices = F.adaptive_max_pool1d(numdiff.tensor(x), size, return_indices=True)
    expected, expected_indices = TF.adaptive_max_pool1d(torch.tensor(x), size, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    _parity(lambda t: F.adaptive_max_pool1d(t, size), lambda t: TF.adaptive_max_pool1d(t, size),
            [np.random.default_rng(17).permutation(42).reshape(2, 3, 7) * 0.1], np.float32)
    layer_out, layer_indices = nn.AdaptiveMaxPool1d(size, return_indices=True)(numdiff.tensor(x[0]))
    np.testing.assert_array_equal(layer_indices.numpy(), expected_indices.numpy()[0])


ONES = numdiff.ones
BAD = [
    (lambda: F.conv3d(ONES(1, 3, 4, 4, 4), ONES(4, 2, 3, 3, 3), groups=2), ValueError,
     "conv3d: groups=2 must divide in_channels=3 and out_channels=4"),
    (lambda: F.conv3d(ONES(1, 1, 2, 5, 5), ONES(1, 1, 3, 3, 3)), ValueError,
     r"conv3d: kernel size \(3, 3, 3\) \(dilation \(1, 1, 1\)\) is larger than the padded input \(2, 5, 5\)"),
    (lambda: F.conv3d(ONES(1, 3, 5, 5, 5), ONES(4, 2, 3, 3, 3)), ValueError,
     r"conv3d: weight \(4, 2, 3, 3, 3\) with groups=1 expects input with 2 channels, got input \(1, 3, 5, 5, 5\) with 3"),
    (lambda: F.conv3d(ONES(1, 1, 5, 5, 5), ONES(1, 1, 3, 3)), ValueError,
     r"conv3d: expected a 5-D weight, got shape \(1, 1, 3, 3\)"),
    (lambda: F.conv3d(ONES(5, 5), ONES(1, 1, 3, 3, 3)), ValueError,
     r"conv3d: expected a 5-D \(batched\) or 4-D \(unbatched\) input, got shape \(5, 5\)"),
    (lambda: F.conv3d(ONES(1, 1, 5, 5, 5), ONES(1, 1, 3, 3, 3), stride=(1, 0, 1)), ValueError,
     "conv3d: stride must be positive"),
    (lambda: F.conv3d(ONES(1, 1, 5, 5, 5), ONES(1, 1, 3, 3, 3), padding=(1, 1)), ValueError,
     r"conv3d: padding must be an int or 3 ints, got \(1, 1\)"),
    (lambda: F.conv3d(ONES(1, 1, 5, 5, 5), ONES(1, 1, 3, 3, 3, dtype=numdiff.float64)), TypeError,
     "conv3d: input, weight and bias must share one dtype"),
    (lambda: F.conv3d(ONES(1, 1, 5, 5, 5), ONES(1, 1, 3, 3, 3), stride=2, padding="same"), ValueError,
     'conv3d: padding="same" is not supported for strided convolutions'),
    (lambda: F.conv3d(ONES(1, 1, 5, 5, 5), ONES(2, 1, 3, 3, 3), ONES(3)), ValueError,
     r"conv3d: bias must have shape \(2,\), got \(3,\)"),
    (lambda: F.conv_transpose3d(ONES(1, 2, 3, 3, 3), ONES(2, 1, 3, 3, 3), stride=2, output_padding=(0, 2, 0)),
     ValueError, r"conv_transpose3d: output_padding \(0, 2, 0\) must be smaller than either stride \(2, 2, 2\)"),
    (lambda: F.conv_transpose3d(ONES(1, 3, 3, 3, 3), ONES(2, 1, 3, 3, 3)), ValueError,
     r"conv_transpose3d: weight \(2, 1, 3, 3, 3\) expects input with 2 channels"),
    (lambda: F.max_pool3d(ONES(4, 4, 4), 2), ValueError,
     r"max_pool3d: expected a 5-D \(batched\) or 4-D \(unbatched\) input, got shape \(4, 4, 4\)"),
    (lambda: F.max_pool3d(ONES(1, 1, 4, 4, 4), 2, padding=(0, 2, 0)), ValueError,
     r"max_pool3d: padding \(0, 2, 0\) must be at most half the kernel size \(2, 2, 2\)"),
    (lambda: F.max_pool3d(ONES(1, 1, 1, 4, 4), (3, 2, 2)), ValueError,
     r"max_pool3d: kernel_size \(3, 2, 2\) with dilation \(1, 1, 1\) does not fit input \(1, 1, 1, 4, 4\)"),
    (lambda: F.avg_pool3d(ONES(1, 1, 4, 4, 4), 2, divisor_override=0), ValueError,
     "avg_pool3d: divisor_override must be a non-zero int, got 0"),
    (lambda: F.avg_pool3d(ONES(1, 1, 4, 4, 4, dtype=numdiff.int64), 2), TypeError,
     "avg_pool3d: input must be a floating-point tensor, got numdiff.int64"),
    (lambda: F.adaptive_avg_pool3d(ONES(1, 1, 4, 4, 4), (2, 2)), ValueError,
     r"adaptive_avg_pool3d: output_size must be an int or 3 values, got \(2, 2\)"),
    (lambda: F.adaptive_max_pool3d(ONES(1, 1, 4, 4, 4), (2, 0, 1)), ValueError,
     "adaptive_max_pool3d: output_size must be positive"),
    (lambda: nn.Conv3d(3, 4, 3)(ONES(1, 2, 4, 4, 4)), ValueError, r"Conv3d\(3, 4, kernel_size=\(3, 3, 3\)\)"),
    (lambda: nn.MaxPool3d(2)(ONES(1, 4, 4)), ValueError, "MaxPool3d"),
    (lambda: F.max_unpool3d(ONES(1, 1, 2, 2, 2), numdiff.zeros(1, 1, 2, 2, dtype=numdiff.int64), 2), ValueError,
     r"max_unpool3d: indices of shape \(1, 1, 2, 2\) must match input of shape \(1, 1, 2, 2, 2\)"),
    (lambda: F.max_unpool3d(ONES(1, 1, 1, 1, 1), numdiff.full((1, 1, 1, 1, 1), 8), 2), IndexError,
     r"max_unpool3d: an index is out of range for an output plane of 8 elements \(2, 2, 2\)"),
    (lambda: F.max_unpool3d(ONES(1, 1, 2, 2, 2), numdiff.zeros(1, 1, 2, 2, 2, dtype=numdiff.int64), 2,
                            output_size=(6, 4, 4)), ValueError,
     r"max_unpool3d: output_size \(6, 4, 4\) is not within a stride of the default \(4, 4, 4\)"),
    (lambda: F.lp_pool3d(ONES(1, 1, 4, 4, 4), 0, 2), ValueError, "lp_pool3d: norm_type must be a non-zero number, got 0"),
    (lambda: F.lp_pool2d(ONES(1, 1, 4, 4), "2", 2), ValueError, r"lp_pool2d: norm_type must be a non-zero number, got '2'"),
    (lambda: F.adaptive_max_pool1d(ONES(1, 1, 4), (2, 2)), ValueError,
     r"adaptive_max_pool1d: output_size must be a positive int, got \(2, 2\)"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,message", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_arguments_raise_before_any_kernel_runs(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_conv3d_results_are_contiguous_so_view_works_as_in_torch():
    x, w = numdiff.randn(2, 2, 3, 4, 5), numdiff.randn(3, 2, 2, 2, 2)
    out = F.conv3d(x, w)
    assert out.is_contiguous()
    assert tuple(out.view(2, -1).shape) == (2, 3 * 2 * 3 * 4)
    back = F.conv_transpose3d(out, w)
    assert back.is_contiguous() and tuple(back.shape) == (2, 2, 3, 4, 5)


@settings(max_examples=40, deadline=None)
@given(
    size=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    padding=st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 1)),
    dilation=st.tuples(st.integers(1, 3), st.integers(1, 2), st.integers(1, 2)),
    ceil_mode=st.booleans(),
    count_include_pad=st.booleans(),
    override=st.sampled_from([None, 3]),
)
def test_pool3d_matches_torch_on_random_windows(
    size, kernel, stride, padding, dilation, ceil_mode, count_include_pad, override
):
    padding = tuple(min(p, k // 2) for p, k in zip(padding, kernel))
    assume(all(n + 2 * p >= d * (k - 1) + 1 for n, p, d, k in zip(size, padding, dilation, kernel)))
    x = np.round(np.random.default_rng(sum(size)).standard_normal((2, 2) + size), 1)  # ties included
    window = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode)
    out, indices = F.max_pool3d(numdiff.tensor(x), dilation=dilation, return_indices=True, **window)
    expected, expected_indices = TF.max_pool3d(torch.tensor(x), dilation=dilation, return_indices=True, **window)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    assume(all(n >= k for n, k in zip(size, kernel)))  # torch's avg_pool3d refuses smaller inputs
    options = dict(window, count_include_pad=count_include_pad, divisor_override=override)
    np.testing.assert_allclose(F.avg_pool3d(numdiff.tensor(x), **options).numpy(),
                               TF.avg_pool3d(torch.tensor(x), **options).numpy(), rtol=1e-12, atol=1e-12)
