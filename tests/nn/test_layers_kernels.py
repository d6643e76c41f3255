"""Layers over the matmul/conv/pool kernels against torch 2.13 (weights copied), and their bad input."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from tests.nn.helpers import assert_close, check_module_parity, copy_state

torch = pytest.importorskip("torch")


def _pair(name, *args, **kwargs):
    ours = getattr(nn, name)(*args, **kwargs).double()
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    assert repr(ours) == repr(theirs)
    return ours, theirs


def _distinct(rng, shape):
    """Values with no ties, so max pooling picks one element per window in both libraries."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - 10.0) * 0.1


# ----------------------------------------------------------------------------- linear
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (2, 2, 3), (3,)], ids=["2d", "3d", "1d"])
def test_linear_matches_torch(rng, bias, shape):
    ours, theirs = _pair("Linear", 3, 2, bias=bias)
    check_module_parity(ours, theirs, rng.standard_normal(shape), rng=rng)


def test_bilinear_matches_torch(rng):
    ours, theirs = _pair("Bilinear", 3, 2, 4)
    check_module_parity(ours, theirs, rng.standard_normal((5, 3)), rng.standard_normal((5, 2)), rng=rng)


def test_frozen_linear_records_no_node_and_gets_no_grad(rng):
    layer = nn.Linear(3, 2).requires_grad_(False)
    out = layer(numdiff.randn(4, 3))
    assert out.grad_fn is None and not out.requires_grad
    x = numdiff.randn(4, 3, requires_grad=True)
    layer(x).sum().backward()
    assert x.grad is not None and layer.weight.grad is None and layer.bias.grad is None


# ----------------------------------------------------------------------------- convolution
CONV1D = [
    {},
    {"stride": 2, "padding": 1},
    {"dilation": 2, "groups": 2, "bias": False},
    {"padding": "same", "kernel_size": 4},
    {"padding": 2, "padding_mode": "reflect"},
    {"padding": 1, "padding_mode": "circular"},
]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
@pytest.mark.parametrize("kwargs", CONV1D, ids=[str(k) for k in CONV1D])
def test_conv1d_matches_torch(rng, kwargs):
    kwargs = {"kernel_size": 3, **kwargs}
    ours, theirs = _pair("Conv1d", 2, 4, **kwargs)
    check_module_parity(ours, theirs, rng.standard_normal((2, 2, 7)), rng=rng)


CONV2D = [
    {},
    {"stride": 2, "padding": 1},
    {"stride": (1, 2), "padding": (0, 1), "dilation": (2, 1)},
    {"groups": 2, "bias": False},
    {"padding": "same", "kernel_size": (2, 3)},
    {"padding": 1, "padding_mode": "replicate"},
    {"padding": (1, 2), "padding_mode": "reflect"},
]


@pytest.mark.parametrize("kwargs", CONV2D, ids=[str(k) for k in CONV2D])
def test_conv2d_matches_torch(rng, kwargs):
    kwargs = {"kernel_size": 3, **kwargs}
    ours, theirs = _pair("Conv2d", 2, 4, **kwargs)
    check_module_parity(ours, theirs, rng.standard_normal((2, 2, 6, 5)), rng=rng)


def test_conv2d_accepts_an_unbatched_input(rng):
    ours, theirs = _pair("Conv2d", 2, 3, 3, padding=1)
    check_module_parity(ours, theirs, rng.standard_normal((2, 4, 4)), rng=rng)


CONV_T = [
    {},
    {"stride": 2, "padding": 1, "output_padding": 1},
    {"groups": 2, "bias": False},
    {"dilation": 2, "stride": (2, 1)},
]


@pytest.mark.parametrize("kwargs", CONV_T, ids=[str(k) for k in CONV_T])
def test_conv_transpose2d_matches_torch(rng, kwargs):
    ours, theirs = _pair("ConvTranspose2d", 2, 4, 3, **kwargs)
    check_module_parity(ours, theirs, rng.standard_normal((2, 2, 3, 4)), rng=rng)


@pytest.mark.parametrize("kwargs", [{}, {"stride": 3, "padding": 1, "output_padding": 2, "groups": 2}], ids=str)
def test_conv_transpose1d_matches_torch(rng, kwargs):
    ours, theirs = _pair("ConvTranspose1d", 2, 4, 3, **kwargs)
    check_module_parity(ours, theirs, rng.standard_normal((2, 2, 5)), rng=rng)


def test_conv_transpose2d_output_size_picks_the_output_padding(rng):
    ours, theirs = _pair("ConvTranspose2d", 1, 1, 3, stride=2, padding=1)
    copy_state(ours, theirs)
    x = rng.standard_normal((1, 1, 3, 3))
    out = ours(numdiff.tensor(x), output_size=(6, 6))
    assert out.shape == (1, 1, 6, 6)
    assert_close(out, theirs(torch.tensor(x), output_size=(6, 6)))
    with pytest.raises(ValueError, match=r"output_size \(8, 8\) is not reachable.*\[5, 6\]"):
        ours(numdiff.tensor(x), output_size=(8, 8))


# ----------------------------------------------------------------------------- pooling
POOLS = [
    ("MaxPool1d", (2,), {}, (2, 3, 7)),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (2, 3, 8)),
    ("MaxPool2d", (2,), {}, (2, 3, 4, 6)),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1}, (1, 2, 5, 5)),
    ("MaxPool2d", ((2, 3),), {"dilation": (1, 2), "ceil_mode": True}, (1, 2, 5, 7)),
    ("AvgPool1d", (3,), {"stride": 2}, (2, 3, 7)),
    ("AvgPool1d", (2,), {"padding": 1, "count_include_pad": False}, (2, 2, 5)),
    ("AvgPool2d", (2,), {}, (2, 3, 4, 4)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, (1, 2, 5, 6)),
    ("AvgPool2d", (2,), {"ceil_mode": True, "divisor_override": 3}, (1, 1, 5, 5)),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, (2, 2, 5, 7)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 4, 4)),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 2, 7)),
    ("AdaptiveMaxPool2d", ((2, 3),), {}, (1, 2, 5, 7)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", POOLS, ids=[f"{p[0]}-{i}" for i, p in enumerate(POOLS)])
def test_pooling_matches_torch(rng, name, args, kwargs, shape):
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    check_module_parity(ours, theirs, _distinct(rng, shape), rng=rng)


def test_max_pool_return_indices_matches_torch(rng):
    x = _distinct(rng, (1, 2, 4, 4))
    values, indices = nn.MaxPool2d(2, return_indices=True)(numdiff.tensor(x))
    expected_values, expected_indices = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    assert_close(values, expected_values)
    assert indices.tolist() == expected_indices.tolist()


def test_pooling_accepts_an_unbatched_input(rng):
    x = _distinct(rng, (2, 4, 4))
    check_module_parity(nn.MaxPool2d(2), torch.nn.MaxPool2d(2), x, rng=rng)


# ----------------------------------------------------------------------------- a whole model
def test_small_cnn_forward_backward_matches_torch(rng):
    def build(lib):
        return lib.Sequential(
            lib.Conv2d(1, 3, 3, padding=1), lib.BatchNorm2d(3), lib.ReLU(), lib.MaxPool2d(2),
            lib.Flatten(), lib.Linear(12, 5), lib.GELU(), lib.Linear(5, 2),
        )

    ours, theirs = build(nn).double(), build(torch.nn).double()
    assert repr(ours) == repr(theirs)
    check_module_parity(ours, theirs, rng.standard_normal((3, 1, 4, 4)), rng=rng)


# ----------------------------------------------------------------------------- bad input
def test_conv2d_wrong_channels_names_the_layer_and_expected_shape():
    with pytest.raises(ValueError) as info:
        nn.Conv2d(1, 8, 3)(numdiff.ones(4, 3, 8, 8))
    assert str(info.value) == (
        "Conv2d(1, 8, kernel_size=(3, 3)): expected input of shape (N, 1, H, W) or (1, H, W), got (4, 3, 8, 8)"
    )


def test_conv1d_wrong_rank_is_refused():
    with pytest.raises(ValueError, match=r"Conv1d\(2, 4, kernel_size=\(3,\)\): expected input of shape \(N, 2, L\)"):
        nn.Conv1d(2, 4, 3)(numdiff.ones(1, 2, 5, 5))


def test_linear_wrong_features_names_the_layer():
    with pytest.raises(ValueError) as info:
        nn.Linear(4, 2)(numdiff.ones(2, 5))
    assert str(info.value) == "Linear(in_features=4, out_features=2, bias=True): expected input of shape (*, 4), got (2, 5)"


def test_bilinear_mismatched_batch_is_refused():
    with pytest.raises(ValueError, match=r"expected input of shape \(3, 2\) for input2"):
        nn.Bilinear(3, 2, 4)(numdiff.ones(3, 3), numdiff.ones(4, 2))


def test_pool_wrong_rank_is_refused():
    with pytest.raises(ValueError, match=r"MaxPool2d\(kernel_size=2.*expected input of shape \(N, C, H, W\) or \(C, H, W\), got \(4, 4\)"):
        nn.MaxPool2d(2)(numdiff.ones(4, 4))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: nn.Conv2d(3, 4, 3, groups=2), "must be divisible by groups"),
        (lambda: nn.Conv2d(2, 4, 3, padding="full"), "padding must be 'same', 'valid'"),
        (lambda: nn.Conv2d(2, 4, 3, stride=2, padding="same"), "not supported for strided"),
        (lambda: nn.Conv2d(2, 4, 3, padding_mode="mirror"), "padding_mode must be one of"),
        (lambda: nn.Conv2d(2, 4, (3, 3, 3)), r"kernel_size must be an int or 2 ints"),
        (lambda: nn.ConvTranspose2d(2, 4, 3, stride=2, output_padding=2), "output_padding"),
        (lambda: nn.ConvTranspose2d(2, 4, 3, padding_mode="reflect"), 'only "zeros" padding_mode'),
    ],
)
def test_conv_constructor_refuses_bad_settings(make, message):
    with pytest.raises(ValueError, match=message):
        make()
