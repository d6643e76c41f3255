"""numdiff.kernels._conv_rows: conv1d's forward (one product per filter tap over staged rows) and
weight gradient (dot products of output-gradient rows with the shifted staged rows), for every
stride, dilation, padding (causal and cropping included), groups and kernel size, agree with torch
(and so does the input gradient beside them), are the route such shapes take, have float64
gradients through conv1d and conv_transpose1d, run the same when compiled, and bad arguments are
refused before they run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.kernels import conv
from numdiff.kernels._conv_route import ConvRoute
from numdiff.kernels._conv_rows import rows_backward_weight_core, rows_forward_core, rows_images, use_rows
from numdiff.kernels._parallel import always_parallel, always_serial
from numdiff.kernels.conv import conv2d_backward_input, conv2d_backward_weight, conv2d_forward, conv2d_plan


@pytest.fixture(autouse=True)
def _loops_route(monkeypatch):
    """The route is taken where the products run as Numba loops (numdiff.kernels._conv_route);
    these tests pin it on any machine."""
    monkeypatch.setattr(conv, "conv_route", lambda: ConvRoute(True, "the tests of the rows route"))


SHAPES = [
    # (N, C, L, Co, K, stride, (left, right) padding, dilation, groups)
    (4, 12, 40, 10, 3, 1, (1, 1), 1, 1),  # tcn's block, dilation 1
    (3, 10, 37, 12, 3, 1, (4, 4), 4, 1),  # dilation 4, same length
    (2, 9, 50, 7, 3, 1, (4, 0), 2, 1),  # causal: left padding only (F.pad then conv1d)
    (5, 16, 33, 20, 5, 1, (2, 2), 1, 1),  # the text CNN's k5
    (2, 11, 64, 6, 9, 2, (4, 4), 1, 1),  # k9, stride 2
    (3, 8, 29, 9, 4, 3, (0, 2), 2, 1),  # stride 3, dilation 2, an even kernel
    (2, 20, 31, 18, 3, 2, (1, 1), 3, 2),  # groups with more than 8 channels a group
    (1, 9, 16, 9, 7, 1, (0, 0), 1, 1),  # one series, no padding
    (3, 10, 20, 8, 1, 2, (0, 0), 1, 1),  # a strided 1x1
    (2, 9, 21, 10, 3, 1, (2, -1), 1, 1),  # a cropping right pad (a transposed conv's output_padding)
]


def _case(shape, dtype):
    n, c, length, co, k, stride, sides, dilation, groups = shape
    rng = np.random.default_rng(n * 100 + c * 10 + k)
    x = rng.standard_normal((n, c, length)).astype(dtype)
    w = rng.standard_normal((co, c // groups, k)).astype(dtype)
    b = rng.standard_normal(co).astype(dtype)
    return x, w, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("build", [always_serial, always_parallel])
@pytest.mark.parametrize("shape", SHAPES)
def test_rows_forward_and_the_gradients_beside_it_match_torch(shape, build, dtype):
    n, c, length, co, k, stride, sides, dilation, groups = shape
    x, w, b = _case(shape, dtype)
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    out_t = torch.nn.functional.conv1d(
        torch.nn.functional.pad(xt, sides), wt, torch.tensor(b), stride, 0, dilation, groups
    )
    grad = np.random.default_rng(1).standard_normal(out_t.shape).astype(dtype)
    out_t.backward(torch.tensor(grad))
    pads, st, dil = (0, 0) + sides, (1, stride), (1, dilation)
    x4, w4, g4 = x[:, :, None], w[:, :, None], grad[:, :, None]
    core, _ = conv2d_plan("forward", x4.shape, w4.shape, g4.shape, st, pads, dil, groups)
    assert core in rows_forward_core
    core, _ = conv2d_plan("backward_weight", x4.shape, w4.shape, g4.shape, st, pads, dil, groups)
    assert core in rows_backward_weight_core
    out = np.full(g4.shape, np.nan, dtype)
    grad_x = np.full(x4.shape, np.nan, dtype)
    grad_w = np.full(w4.shape, np.nan, dtype)
    with build():
        conv2d_forward(x4, w4, b, out, st, pads, dil, groups)
        conv2d_backward_input(g4, w4, grad_x, st, pads, dil, groups)
        conv2d_backward_weight(x4, g4, grad_w, st, pads, dil, groups)
    tol = 2e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(out[:, :, 0], out_t.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(grad_x[:, :, 0], xt.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(grad_w[:, :, 0], wt.grad.numpy(), rtol=tol, atol=tol * 10)


def test_rows_route_takes_one_row_convolutions_only():
    assert use_rows(1, 1, 0, 0, 3, 1, 1, 1, True)
    assert use_rows(1, 1, 0, 0, 1, 2, 0, 0, True)  # a strided 1x1 reads every other position
    assert not use_rows(1, 1, 0, 0, 1, 1, 0, 0, True)  # a 1x1: the im2col cores read the rows in place
    assert not use_rows(5, 3, 1, 1, 3, 1, 1, 1, True)  # two-dimensional
    assert not use_rows(1, 1, 0, 0, 3, 1, 1, 1, False)  # BLAS products: im2col
    core, _ = conv2d_plan(
        "forward", (2, 4, 1, 16), (4, 1, 1, 3), (2, 4, 1, 16), (1, 1), (0, 0, 1, 1), (1, 1), 4
    )
    assert core not in rows_forward_core  # depthwise: the grouped stencil


def test_rows_blocks_give_every_thread_work():
    assert rows_images(32, 1, 130, 1) == 7  # about 1024 columns
    assert rows_images(30, 1, 100, 1) == 10  # 10 images fill 1000 columns: three equal blocks
    assert rows_images(3, 1, 130, 2) == 2  # two blocks for two threads
    assert rows_images(4, 2, 130, 2) == 4  # two groups already give two threads work
    assert rows_images(1, 1, 5000, 2) == 1


def test_rows_route_has_float64_gradients():
    rng = np.random.default_rng(3)
    x = numdiff.tensor(rng.standard_normal((2, 3, 13)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((4, 3, 3)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(4), requires_grad=True)
    fn = numdiff.nn.functional
    assert numdiff.autograd.gradcheck(
        lambda x, w, b: fn.conv1d(x, w, b, stride=2, padding=2, dilation=2), (x, w, b)
    )
    assert numdiff.autograd.gradcheck(
        lambda x, w, b: fn.conv1d(fn.pad(x, (4, 0)), w, b, dilation=2), (x, w, b)
    )
    assert numdiff.autograd.gradgradcheck(lambda x, w: fn.conv1d(x, w, None, padding=1, dilation=2), (x, w))
    wt = numdiff.tensor(rng.standard_normal((3, 2, 3)), requires_grad=True)
    assert numdiff.autograd.gradcheck(
        lambda x, w: fn.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1), (x, wt)
    )
    # groups of 9 channels (fewer run the grouped stencil, numdiff.kernels._conv_grouped)
    xg = numdiff.tensor(rng.standard_normal((1, 18, 7)), requires_grad=True)
    wg = numdiff.tensor(rng.standard_normal((4, 9, 3)), requires_grad=True)
    core, _ = conv.conv2d_plan(
        "forward", (1, 18, 1, 7), (4, 9, 1, 3), (1, 4, 1, 4), (1, 2), (0, 0, 1, 1), (1, 1), 2
    )
    assert core in rows_forward_core
    assert numdiff.autograd.gradcheck(
        lambda x, w: fn.conv1d(x, w, None, stride=2, padding=1, groups=2), (xg, wg)
    )


def test_conv_transpose1d_on_the_rows_route_matches_torch():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 10, 17)).astype(np.float32)
    w = rng.standard_normal((10, 6, 5)).astype(np.float32)
    got = numdiff.nn.functional.conv_transpose1d(
        numdiff.tensor(x), numdiff.tensor(w), stride=3, padding=2, output_padding=2, dilation=2
    )
    want = torch.nn.functional.conv_transpose1d(
        torch.tensor(x), torch.tensor(w), stride=3, padding=2, output_padding=2, dilation=2
    )
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-4, atol=2e-4)


def test_compiled_conv1d_step_matches_eager():
    nn = numdiff.nn
    numdiff.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(4, 6, 3, padding=2, dilation=2), nn.ReLU(), nn.Conv1d(6, 5, 5, stride=2),
                          nn.Flatten(), nn.Linear(5 * 6, 3)).to(dtype=numdiff.float64)  # fmt: skip
    x = numdiff.randn(3, 4, 16, dtype=numdiff.float64, requires_grad=True)
    y = numdiff.tensor(np.array([0, 2, 1]))

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


def test_rows_kernels_refuse_bad_arguments_before_running():
    x, w = np.ones((2, 4, 1, 20)), np.ones((3, 4, 1, 3))
    with pytest.raises(ValueError, match="conv2d_forward"):
        conv2d_forward(x, w, None, np.empty((2, 3, 1, 17)), (1, 1), (0, 0, 0, 0))  # output should be 18 long
    with pytest.raises(ValueError, match="conv2d_backward_weight"):
        conv2d_backward_weight(x, np.ones((2, 3, 1, 18)), np.empty((3, 4, 1, 4)), (1, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="conv1d"):
        numdiff.nn.functional.conv1d(
            numdiff.ones(1, 4, 5), numdiff.ones(3, 4, 3), dilation=3
        )  # kernel spans 7 > 5
