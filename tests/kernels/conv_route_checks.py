"""Checks shared by the tests of each convolution route (Winograd, direct): the route's kernels
under a float64 gradient check, and a compiled training step that plans them matching eager. The
caller first asserts that its shapes take the route."""

from __future__ import annotations

import numpy as np

import numdiff


def assert_conv2d_gradcheck(x_shape: tuple, out_channels: int, padding: int) -> None:
    """conv2d with a bias passes numdiff.autograd.gradcheck (float64, central differences)."""
    rng = np.random.default_rng(padding)
    x = numdiff.tensor(rng.standard_normal(x_shape), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((out_channels, x_shape[1], 3, 3)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(out_channels), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda x, w, b: numdiff.nn.functional.conv2d(x, w, b, padding=padding), (x, w, b))


def assert_compiled_step_matches_eager(labels: list[int], out_channels: int) -> None:
    """A conv-relu-linear cross-entropy step on (len(labels), 3, 6, 5) float64 inputs gives the same
    gradients compiled (numdiff.compile plans each conv once and calls the planned core) as eager."""
    nn = numdiff.nn
    numdiff.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, out_channels, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(out_channels * 6 * 5, 3))
    model = model.to(dtype=numdiff.float64)
    x = numdiff.randn(len(labels), 3, 6, 5, dtype=numdiff.float64, requires_grad=True)
    y = numdiff.tensor(np.array(labels))

    def grads(compiled):
        for p in model.parameters():
            p.grad = None
        x.grad = None

        def loss_of(a, b):
            return numdiff.nn.functional.cross_entropy(model(a), b)

        (numdiff.compile(loss_of) if compiled else loss_of)(x, y).backward()
        return [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]

    for got, want in zip(grads(True), grads(False)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
