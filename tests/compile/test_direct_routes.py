"""numdiff.compile's direct convolution calls take the route eager's kernel takes: a stride-1 input
gradient into at least twice as many channels per group as it reads (a last 9x9 conv to RGB, a
transposed conv that widens) runs as a forward convolution of the flipped weight in eager mode
(numdiff.kernels.conv), which gathers where the planned im2col core scatters; the compiled program
must not run the slower core instead (style transfer's compiled step did). Same numbers as eager,
bit for bit, since the same kernel runs."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import nn

CONVS = {
    # c_in, c_out, kernel, padding, dilation, groups, size: each reads cog <= cg / 2 in its input gradient
    "rgb head 9x9": (16, 3, 9, 4, 1, 1, 20),
    "3x3 to 9": (32, 9, 3, 1, 1, 1, 12),
    "5x5 dilated": (12, 4, 5, 3, 2, 1, 15),
    # 16 channels a group: fewer (at most _conv_routing.GROUPED_DIRECT_MAX_CHANNELS) run the grouped stencil.
    "grouped 3x3": (32, 8, 3, 1, 1, 2, 10),
}


def _backward_source(f) -> str:
    (source,) = f.compiled.sources
    return source.split("def backward(")[1]


@pytest.mark.parametrize("name", sorted(CONVS))
@pytest.mark.parametrize("dtype", [numdiff.float32, numdiff.float64])
def test_a_gathered_input_gradient_runs_eagers_route_and_equals_it_bit_for_bit(name, dtype):
    c_in, c_out, kernel, padding, dilation, groups, size = CONVS[name]
    numdiff.manual_seed(1)
    conv = nn.Conv2d(c_in, c_out, kernel, padding=padding, dilation=dilation, groups=groups).to(dtype)
    rng = np.random.default_rng(c_in + kernel)
    x = numdiff.tensor(rng.standard_normal((2, c_in, size, size)), dtype=dtype, requires_grad=True)

    def loss_of(x):
        return (conv(x) ** 2).sum()

    f = numdiff.compile(loss_of)
    grads = []
    for run in (f, loss_of):
        x.grad = None
        run(x).backward()
        grads.append(x.grad.numpy().copy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert "conv2d_backward_input_core" not in _backward_source(f)


@pytest.mark.parametrize(("c_in", "c_out", "stride"), [(8, 16, 1), (6, 20, 1), (8, 16, 2)])
def test_a_transposed_convolution_runs_eagers_route(c_in, c_out, stride):
    # A widening stride-1 transposed conv on 12x12 images (im2col's core is planned; on a 1x1 latent,
    # as DCGAN's first generator layer, the batched core runs in both modes).
    numdiff.manual_seed(2)
    up = nn.ConvTranspose2d(c_in, c_out, 4, stride, 1, bias=False)
    x = numdiff.tensor(np.random.default_rng(c_out).standard_normal((3, c_in, 12, 12)).astype(np.float32))
    f = numdiff.compile(lambda x: up(x))
    with numdiff.no_grad():
        np.testing.assert_array_equal(f(x).numpy(), up(x).numpy())
    (source,) = f.compiled.sources
    forward = source.split("def forward(")[1].split("def backward(")[0]
    # stride 1 gathers as eager does; stride 2 keeps the planned core (eager's route there too)
    assert ("conv2d_backward_input_core" in forward) == (stride != 1)


def test_a_narrowing_input_gradient_keeps_the_planned_core():
    # 3 -> 16 channels: the input gradient reads 16 per group into 3, so eager scatters with the core too.
    numdiff.manual_seed(3)
    conv = nn.Conv2d(3, 16, 5, padding=2)
    x = numdiff.randn(2, 3, 12, 12, requires_grad=True)
    f = numdiff.compile(lambda x: (conv(x) ** 2).sum())
    f(x).backward()
    assert "conv2d_backward_input_core" in _backward_source(f)
