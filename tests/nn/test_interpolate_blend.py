"""interpolate's per-axis resampling (numdiff.ops._axis_blend over numdiff.kernels.resample): every
mode against PyTorch forward and backward, on shapes and options the benchmarks do not use, float64
gradients to second order, 3-D area mode, and the kernels' refusals of bad tables."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff.kernels._parallel import always_parallel
from numdiff.kernels.resample import axis_blend_adjoint, axis_blend_forward
from numdiff.ops._axis_blend import AxisBlend, AxisBlendBackward

torch = pytest.importorskip("torch")
tf = torch.nn.functional

RNG = np.random.default_rng(7)
CASES = [
    ("linear", (3, 2, 9), [dict(scale_factor=3), dict(size=4), dict(scale_factor=0.45)]),
    ("bilinear", (2, 3, 6, 9), [dict(scale_factor=2), dict(size=(4, 13)), dict(scale_factor=(0.5, 1.25))]),
    ("bicubic", (2, 3, 6, 9), [dict(scale_factor=2), dict(size=(4, 13)), dict(scale_factor=(0.7, 3.0))]),
    ("trilinear", (1, 2, 3, 5, 4), [dict(scale_factor=2), dict(size=(2, 7, 3))]),
    ("nearest", (2, 3, 6, 9), [dict(scale_factor=1.5), dict(size=(4, 5))]),
    ("nearest-exact", (1, 2, 3, 5, 4), [dict(scale_factor=0.6), dict(size=(5, 2, 7))]),
    ("area", (1, 2, 5, 7, 6), [dict(size=(2, 3, 4)), dict(scale_factor=0.5), dict(size=1)]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("mode", "shape", "options"), CASES, ids=[case[0] for case in CASES])
def test_every_mode_matches_torch_forward_and_backward(mode, shape, options, dtype):
    corners = [False, True] if mode in ("linear", "bilinear", "bicubic", "trilinear") else [None]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for option in options:
        for align_corners in corners:
            x = RNG.standard_normal(shape).astype(dtype)
            ours, theirs = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            y = nf.interpolate(ours, mode=mode, align_corners=align_corners, **option)
            expected = tf.interpolate(theirs, mode=mode, align_corners=align_corners, **option)
            np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), rtol=tol, atol=tol)
            g = RNG.standard_normal(tuple(expected.shape)).astype(dtype)
            y.backward(numdiff.tensor(g))
            expected.backward(torch.tensor(g))
            np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize(("mode", "shape", "options"), CASES, ids=[case[0] for case in CASES])
def test_every_mode_has_float64_gradients_to_second_order(mode, shape, options):
    x = numdiff.tensor(RNG.standard_normal((1, 2) + shape[2:]), requires_grad=True)
    corners = True if mode in ("linear", "bilinear", "bicubic", "trilinear") else None
    for option in options[:2]:
        def f(t, option=option):
            return nf.interpolate(t, mode=mode, align_corners=corners, **option)

        assert numdiff.autograd.gradcheck(f, (x,))
        assert numdiff.autograd.gradgradcheck(f, (x,))


def test_half_precision_input_is_resized_in_float32_and_keeps_its_dtype():
    x = RNG.standard_normal((1, 2, 4, 5)).astype(np.float16)
    y = nf.interpolate(numdiff.tensor(x), scale_factor=2, mode="bilinear")
    expected = tf.interpolate(torch.tensor(x).float(), scale_factor=2, mode="bilinear").half()
    assert y.dtype == numdiff.float16
    np.testing.assert_array_equal(y.numpy(), expected.numpy())


def test_axis_blend_ops_are_each_others_adjoint():
    index = np.array([[0, 1], [2, 2], [1, 0]])
    weight = RNG.standard_normal((3, 2))
    x, g = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 4))
    forward = AxisBlend.apply(numdiff.tensor(x), index=index, weight=weight).numpy()
    adjoint = AxisBlendBackward.apply(numdiff.tensor(g), index=index, weight=weight, size=3).numpy()
    np.testing.assert_allclose(np.sum(forward * g), np.sum(x * adjoint), rtol=1e-12)


def test_blend_kernels_refuse_bad_tables_naming_the_values():
    x, out = np.zeros((2, 3, 4)), np.zeros((2, 2, 4))
    with pytest.raises(ValueError, match=r"axis_blend_forward: index must lie in \[0, 3\), got values 0\.\.3"):
        axis_blend_forward(x, np.array([[0, 3], [1, 2]]), np.ones((2, 2)), out)
    with pytest.raises(TypeError, match="axis_blend_forward: weight must have the arrays' dtype float64, got float32"):
        axis_blend_forward(x, np.array([[0, 1], [1, 2]]), np.ones((2, 2), np.float32), out)
    with pytest.raises(ValueError, match=r"axis_blend_adjoint: index must be \(O, K\) int64.*int32"):
        axis_blend_adjoint(out, np.array([[0, 1], [1, 2]], np.int32), np.ones((2, 2)), x)
    with pytest.raises(ValueError, match=r"axis_blend_forward: x must be \(B, D, R\) and out \(B, O, R\) with O = 2"):
        axis_blend_forward(x, np.array([[0, 1], [1, 2]]), np.ones((2, 2)), np.zeros((2, 3, 4)))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(("shape", "amounts"), [
    ((2, 3, 9), (3, 1)), ((2, 3, 5, 6), (2, 0, 1, 3)), ((1, 2, 4, 3, 5), (1, 2, 0, 2, 3, 1)),
    ((2, 3, 7, 40), (2, 3, 1, 4)),  # rows wide enough for the adjoint's runs (numdiff.kernels.resample)
])  # fmt: skip
def test_index_padding_runs_on_the_blend_kernels_with_torchs_values_and_gradients(mode, shape, amounts):
    x = RNG.standard_normal(shape)
    ours, theirs = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, expected = nf.pad(ours, amounts, mode=mode), tf.pad(theirs, amounts, mode=mode)
    np.testing.assert_array_equal(y.detach().numpy(), expected.detach().numpy())
    assert "AxisBlend" in repr(y.grad_fn.next_functions[0][0])
    g = RNG.standard_normal(tuple(expected.shape))
    y.backward(numdiff.tensor(g))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)
    small = numdiff.tensor(RNG.standard_normal(shape[:2] + (4,) * (len(shape) - 2)), requires_grad=True)
    assert numdiff.autograd.gradgradcheck(lambda t: nf.pad(t, tuple(min(a, 3) for a in amounts), mode=mode), (small,))


def test_index_padding_of_integers_still_copies_rows():
    x = numdiff.tensor(np.arange(12).reshape(1, 3, 4))
    np.testing.assert_array_equal(nf.pad(x, (2, 1), mode="reflect").numpy(),
                                  tf.pad(torch.arange(12).reshape(1, 3, 4), (2, 1), mode="reflect").numpy())


@pytest.mark.parametrize("width", [1, 5])
def test_parallel_blend_builds_match_the_serial_ones(width):
    x, g = RNG.standard_normal((7, 6, width)), RNG.standard_normal((7, 9, width))
    index, weight = RNG.integers(0, 6, (9, 3)), RNG.standard_normal((9, 3))
    serial = (axis_blend_forward(x, index, weight, np.empty(g.shape)), axis_blend_adjoint(g, index, weight, np.empty(x.shape)))
    with always_parallel():
        parallel = (axis_blend_forward(x, index, weight, np.empty(g.shape)), axis_blend_adjoint(g, index, weight, np.empty(x.shape)))
    np.testing.assert_array_equal(parallel[0], serial[0])
    np.testing.assert_array_equal(parallel[1], serial[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_last_axis_adjoint_of_one_tap_tables_adds_exactly_as_one_element_at_a_time(dtype):
    # One-tap tables whose outputs read consecutive rows take the adjoint's run path, the others
    # its register path (repeated rows added in a register); each input row must still gather its
    # shares in the order of the outputs, so NumPy's sequential add.at gives the same bits.
    size = 40
    padded = np.arange(-2, size + 3)
    tables = [
        np.where(np.abs(padded) >= size, 2 * (size - 1) - np.abs(padded), np.abs(padded)),  # reflect pad
        np.clip(padded, 0, size - 1),  # replicate pad
        np.arange(-5, size + 5) % size,  # circular pad
        np.arange(3, size - 3),  # crop
        np.r_[np.arange(size), np.arange(size)[::-1], np.arange(size)],  # rows read three times
        np.arange(3 * size) // 3,  # nearest upsampling by 3
        np.floor(np.arange(size * 3 // 2) / 1.5).astype(np.int64),  # nearest by 1.5
        RNG.integers(0, size, 2 * size),  # any order, rows revisited
    ]
    for rows in tables:
        index = rows[:, None].astype(np.int64)
        weight = RNG.standard_normal(index.shape).astype(dtype)
        g = RNG.standard_normal((5, rows.size, 1)).astype(dtype)
        expected = np.zeros((5, size), dtype)
        for b in range(5):
            np.add.at(expected[b], rows, weight[:, 0] * g[b, :, 0])
        np.testing.assert_array_equal(axis_blend_adjoint(g, index, weight, np.empty((5, size, 1), dtype))[:, :, 0], expected)
        with always_parallel():
            parallel = axis_blend_adjoint(g, index, weight, np.empty((5, size, 1), dtype))
        np.testing.assert_array_equal(parallel[:, :, 0], expected)
