"""repr in PyTorch's forms, checked literally and against torch's own repr where torch is installed."""

from __future__ import annotations

import re

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numdiff


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            lambda: numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True),
            "tensor([1., 2., 3.], requires_grad=True)",
        ),
        (
            lambda: numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True) * 2,
            "tensor([2., 4., 6.], grad_fn=<MulBackward>)",
        ),
        (
            lambda: numdiff.tensor([1.0, 2.0], dtype=numdiff.float64),
            "tensor([1., 2.], dtype=numdiff.float64)",
        ),
        (lambda: numdiff.tensor(3.0), "tensor(3.)"),
        (lambda: numdiff.tensor(3), "tensor(3)"),
        (lambda: numdiff.tensor([1.23456, 2.0]), "tensor([1.2346, 2.0000])"),
        (lambda: numdiff.tensor([[1.0, 2.0], [3.0, 4.0]]), "tensor([[1., 2.],\n        [3., 4.]])"),
        (lambda: numdiff.tensor([1, 2, 3], dtype=numdiff.int32), "tensor([1, 2, 3], dtype=numdiff.int32)"),
    ],
)
def test_repr_has_pytorchs_form(make, expected):
    assert repr(make()) == expected


def test_dtype_size_and_device_reprs():
    assert repr(numdiff.float64) == "numdiff.float64"
    assert repr(numdiff.zeros(2, 3).shape) == "numdiff.Size([2, 3])"
    assert repr(numdiff.device("cpu")) == "device(type='cpu')"


def test_repr_of_leaf_does_not_change_when_grad_is_populated():
    w = numdiff.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    assert repr(w) == "tensor([1., 2.], requires_grad=True)"
    assert repr(w.grad) == "tensor([2., 4.])"


def _as_numdiff(torch_repr: str) -> str:
    return torch_repr.replace("torch.", "numdiff.").replace("Backward0", "Backward")


def _unwrapped_suffixes(text: str) -> str:
    """The repr with suffixes (dtype=..., grad_fn=...) on the last line: "numdiff." is 2 characters longer
    than "torch.", so the two wrap them onto a new line at different lengths."""
    return re.sub(r",\n *(?=(dtype|size|device|grad_fn|requires_grad)=)", ", ", text)


# Expressions evaluated with m = numdiff and with m = torch: the reprs must agree once "torch." is read
# as "numdiff." and PyTorch's node suffix "Backward0" as "Backward" (suffix line wrapping aside).
TORCH_EXPRESSIONS = [
    "m.tensor([1., 2., 3.], requires_grad=True)",
    "m.tensor([1., 2., 3.], requires_grad=True) * 2",
    "m.tensor([1., 2.], requires_grad=True).exp()",
    "m.tensor([[1., 2.], [3., 4.]], requires_grad=True).sum()",
    "m.tensor([1., 2., 3.], dtype=m.float64)",
    "m.tensor(3.)",
    "m.tensor(3)",
    "m.tensor(-0.5, dtype=m.float64, requires_grad=True)",
    "m.tensor([1.23456, 2.])",
    "m.tensor([0.1, 0.25, 100.])",
    "m.tensor([1000.5, 0.5])",
    "m.tensor([-0.0001234, 5.])",
    "m.tensor([1e-5, 1.])",
    "m.tensor([1e10, 1.])",
    "m.tensor([123456789., 1.])",
    "m.tensor([0.])",
    "m.tensor([[1.5, -2.25], [3., 4.]])",
    "m.arange(12.).reshape(2, 3, 2)",
    "m.linspace(0, 1, 7)",
    "m.tensor([1, 2, 300])",
    "m.tensor([-5, 3])",
    "m.tensor([-1, 2, 300], dtype=m.int32)",
    "m.tensor([True, False])",
    "m.tensor([[True], [False]])",
    "m.tensor([float('nan'), 1.5])",
    "m.tensor([float('nan'), float('inf'), -float('inf'), 1.])",
    "m.tensor([-float('inf'), 0.5])",
    "m.zeros(0)",
    "m.zeros(2, 0)",
    "m.zeros(0, dtype=m.float64)",
    "m.tensor([], dtype=m.int64)",
    "m.zeros(2, 0, dtype=m.float64)",
    "m.zeros(0, 3, dtype=m.int32)",
    "m.zeros(3, 0, 2, dtype=m.bool)",
    "m.arange(2000).reshape(2, 1000)",
    "m.arange(1200.).reshape(2, 600) / 7",
    "m.arange(3000.).reshape(1000, 3)",
    "m.arange(3000).reshape(1000, 3)",
    "m.arange(24000).reshape(2, 3000, 4)",
    "m.arange(1001.) / 3",
    "m.ones(1001, dtype=m.bool)",
    "m.arange(30.).reshape(3, 10) * 1.5",
    "m.tensor([-0., 1.])",
    "m.tensor([0., 100.])",
    "m.tensor([[float('nan'), 1., 100.]])",
    "m.tensor([-1e-5, 1e5])",
    "m.linspace(-1, 1, 20, requires_grad=True)",
    "m.linspace(-1, 1, 20, requires_grad=True) * 3",
    "m.linspace(-1, 1, 9, dtype=m.float64, requires_grad=True) * 3",
]


@pytest.mark.parametrize("expression", TORCH_EXPRESSIONS)
def test_repr_matches_torch(expression):
    torch = pytest.importorskip("torch")
    ours = repr(eval(expression, {"m": numdiff}))
    theirs = _as_numdiff(repr(eval(expression, {"m": torch})))
    assert _unwrapped_suffixes(ours) == _unwrapped_suffixes(theirs)


_FLOATS = st.one_of(
    st.floats(-1e3, 1e3, width=32),
    st.integers(-2000, 2000).map(float),
    st.sampled_from([0.0, -0.0, 1e-6, 3e9, float("nan"), float("inf"), -float("inf")]),
)


@given(
    values=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), elements=_FLOATS),
    dtype=st.sampled_from(["float32", "float64"]),
    requires_grad=st.booleans(),
)
@settings(max_examples=80)
def test_repr_matches_torch_on_random_values(values, dtype, requires_grad):
    torch = pytest.importorskip("torch")
    ours = numdiff.tensor(values, dtype=getattr(numdiff, dtype), requires_grad=requires_grad)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    assert _unwrapped_suffixes(repr(ours)) == _unwrapped_suffixes(_as_numdiff(repr(theirs)))


@given(
    values=hnp.arrays(
        np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=5), elements=st.integers(-(10**6), 10**6)
    )
)
@settings(max_examples=30)
def test_integer_repr_matches_torch_on_random_values(values):
    torch = pytest.importorskip("torch")
    assert repr(numdiff.tensor(values)) == repr(torch.tensor(values))


def test_suffixes_wrap_onto_a_new_line_past_80_characters():
    text = repr(numdiff.linspace(-1, 1, 8, dtype=numdiff.float64, requires_grad=True) * 3)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines == [
        "tensor([-3.0000, -2.1429, -1.2857, -0.4286,  0.4286,  1.2857,  2.1429,  3.0000],",
        "       dtype=numdiff.float64, grad_fn=<MulBackward>)",
    ]


@pytest.fixture
def print_options():
    pytest.importorskip("torch")
    yield
    numdiff.set_printoptions(profile="default")
    import torch

    torch.set_printoptions(profile="default")


@pytest.mark.parametrize(
    "options",
    [dict(precision=2), dict(threshold=5, edgeitems=1), dict(profile="short"), dict(profile="full"),
     dict(sci_mode=True), dict(sci_mode=False), dict(linewidth=40)],  # fmt: skip
)
def test_set_printoptions_prints_as_torch_does(options, print_options):
    import torch

    x = np.random.default_rng(0).standard_normal((30, 40)).astype(np.float32) * 100
    numdiff.set_printoptions(**options)
    torch.set_printoptions(**options)
    for array in (x[:3, :7], x[:12, :9], np.array([1.23456789, 0.000123, 12345.678], np.float32), x[:2, :2].astype(np.float64)):
        assert _unwrapped_suffixes(repr(numdiff.tensor(array))) == _as_numdiff(_unwrapped_suffixes(repr(torch.tensor(array))))


def test_set_printoptions_refuses_unknown_profiles_and_negative_sizes(print_options):
    with pytest.raises(ValueError, match="set_printoptions: profile must be one of \\['default', 'full', 'short'\\], got 'long'"):
        numdiff.set_printoptions(profile="long")
    with pytest.raises(ValueError, match="set_printoptions: precision must be a number at least 0, got -1"):
        numdiff.set_printoptions(precision=-1)
