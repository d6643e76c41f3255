"""Memory formats (the memory_format tutorial): channels_last and channels_last_3d layouts with
PyTorch's strides from contiguous, to, empty, clone and the *_like factories; is_contiguous per
format with PyTorch's size-1 rule; Module.to(memory_format) on 4-D weights; gradients through a
layout change; and errors naming the op for a wrong rank or a non-format."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.autograd import gradcheck


def _both(build):
    return build(numdiff), build(torch)


@pytest.mark.parametrize(
    "build",
    [
        lambda lib: lib.empty(10, 3, 32, 32).contiguous(memory_format=lib.channels_last),
        lambda lib: lib.empty(10, 3, 32, 32).to(memory_format=lib.channels_last),
        lambda lib: lib.empty(10, 3, 32, 32, memory_format=lib.channels_last),
        lambda lib: lib.empty(10, 3, 32, 32, memory_format=lib.channels_last).clone(),
        lambda lib: lib.empty(10, 3, 32, 32, memory_format=lib.channels_last).contiguous(),
        lambda lib: lib.empty_like(lib.empty(2, 3, 4, 5, memory_format=lib.channels_last)),
        lambda lib: lib.zeros_like(lib.empty(2, 3, 4, 5, memory_format=lib.channels_last)),
        lambda lib: lib.ones_like(lib.empty(2, 3, 4, 5), memory_format=lib.channels_last),
        lambda lib: lib.rand(2, 3, 4, 5, 6).to(memory_format=lib.channels_last_3d),
        lambda lib: lib.empty(4, 1, 4, 4).contiguous(memory_format=lib.channels_last),
    ],
)
def test_strides_match_pytorchs(build):
    ours, theirs = _both(build)
    assert ours.stride() == theirs.stride()
    for name in ("contiguous_format", "channels_last", "channels_last_3d"):
        assert ours.is_contiguous(memory_format=getattr(numdiff, name)) == theirs.is_contiguous(
            memory_format=getattr(torch, name)), name


@pytest.mark.parametrize("shape", [(4, 1, 4, 4), (4, 1, 1, 1), (1, 3, 1, 1), (2, 3, 4, 5)])
def test_is_contiguous_of_a_row_major_tensor_matches_pytorchs(shape):
    ours, theirs = numdiff.empty(*shape), torch.empty(*shape)
    assert ours.is_contiguous(memory_format=numdiff.channels_last) == theirs.is_contiguous(
        memory_format=torch.channels_last)


def test_values_survive_layout_changes_and_module_to_converts_4d_weights():
    x = numdiff.randn(2, 3, 5, 5)
    y = x.to(memory_format=numdiff.channels_last)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    conv = numdiff.nn.Conv2d(3, 4, 3).to(memory_format=numdiff.channels_last)
    assert conv.weight.is_contiguous(memory_format=numdiff.channels_last) and conv.bias.is_contiguous()
    np.testing.assert_allclose(conv(y).detach().numpy(), conv(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_flow_through_a_layout_change():
    x = numdiff.randn(2, 3, 4, 4, dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda t: (t.contiguous(memory_format=numdiff.channels_last) * t).sin(), (x,))
    assert gradcheck(lambda t: t.to(memory_format=numdiff.channels_last).clone().exp(), (x,))


def test_bad_formats_and_ranks_are_named():
    with pytest.raises(RuntimeError, match=r"contiguous: memory_format=numdiff.channels_last needs a 4-D tensor, got 3-D"):
        numdiff.empty(2, 3, 4).contiguous(memory_format=numdiff.channels_last)
    with pytest.raises(RuntimeError, match="empty: memory_format=numdiff.channels_last_3d needs a 5-D tensor"):
        numdiff.empty(2, 3, 4, 5, memory_format=numdiff.channels_last_3d)
    with pytest.raises(TypeError, match="memory_format must be numdiff.contiguous_format"):
        numdiff.empty(2, 3, 4, 5).contiguous(memory_format="channels_last")
    with pytest.raises(RuntimeError, match="preserve_format is not a layout to make"):
        numdiff.empty(2, 3).contiguous(memory_format=numdiff.preserve_format)
    assert repr(numdiff.channels_last) == "numdiff.channels_last"


def test_a_channels_last_input_gives_a_channels_last_conv2d_output_as_in_pytorch():
    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Conv2d(3, 4, 3, padding=1).to(memory_format=lib.channels_last)
        return model(lib.rand(2, 3, 6, 6).contiguous(memory_format=lib.channels_last))

    ours, theirs = run(numdiff), run(torch)
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous(memory_format=numdiff.channels_last)
