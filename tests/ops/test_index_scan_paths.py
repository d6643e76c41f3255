"""The fast paths of roll, cumsum and the gather family: each runs as one primitive (no gather or
scatter-add standing in for a copy), and the values and gradients stay NumPy's and torch's."""

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.kernels.scan import cumprod_backward_lanes, cumsum_lanes


def _float64(*shape: int, seed: int = 0) -> numdiff.Tensor:
    data = np.random.default_rng(seed).standard_normal(shape)
    return numdiff.tensor(data, requires_grad=True)


@pytest.mark.parametrize(
    ("shape", "shifts", "dims"),
    [((3, 5), 2, 1), ((2, 3, 4), (-1, 5), (0, 2)), ((4, 6), (3, -3, 1), (1, 1, 0)), ((2, 7), -9, -1)],
)
def test_roll_is_one_op_whose_gradient_is_a_roll(shape, shifts, dims) -> None:
    x = _float64(*shape)
    y = x.roll(shifts, dims)
    assert y.grad_fn.name() == "RollBackward"
    np.testing.assert_array_equal(y.detach().numpy(), np.roll(x.detach().numpy(), shifts, dims))
    assert gradcheck(lambda t: t.roll(shifts, dims), (x,))
    assert gradgradcheck(lambda t: t.roll(shifts, dims), (x,))


def test_roll_by_whole_turns_is_a_copy() -> None:
    x = _float64(3, 4)
    y = x.roll((3, -8), (0, 1))
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())
    assert y.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "dim"), [((3, 7), -1), ((5, 2, 3), 0), ((2, 6, 4), 1), ((4,), 0), ((2, 0, 3), 1)])
def test_cumsum_kernel_matches_numpy_both_ways(shape, dim, dtype) -> None:
    data = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    x = numdiff.tensor(data, requires_grad=True)
    y = x.cumsum(dim)
    assert y.dtype == x.dtype
    np.testing.assert_allclose(y.detach().numpy(), np.cumsum(data.astype(np.float64), dim), rtol=1e-6, atol=1e-6)
    weights = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    y.backward(numdiff.tensor(weights))
    expected = np.flip(np.cumsum(np.flip(weights.astype(np.float64), dim), dim), dim)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_cumsum_float32_rounds_once_per_element() -> None:
    # 1 + 1e-8 * k is lost at every step in float32 sums; the float64 running sum keeps it.
    data = np.array([1.0] + [1e-8] * 1000, dtype=np.float32)
    y = numdiff.tensor(data).cumsum(0).numpy()
    assert y[-1] == np.float32(1.0 + 1e-5)


@pytest.mark.parametrize(("shape", "dim"), [((3, 4), 1), ((2, 3, 2), 0), ((2, 3, 4), 1)])
def test_cumsum_gradients_and_second_order(shape, dim) -> None:
    x = _float64(*shape, seed=3)
    assert gradcheck(lambda t: t.cumsum(dim), (x,))
    assert gradgradcheck(lambda t: t.cumsum(dim), (x,))


def test_cumsum_of_a_transposed_view() -> None:
    data = np.random.default_rng(4).standard_normal((4, 5))
    y = numdiff.tensor(data).T.cumsum(1)
    np.testing.assert_allclose(y.numpy(), np.cumsum(data.T, 1))


def test_cumsum_lanes_rejects_mixed_dtypes_and_shapes() -> None:
    with pytest.raises(TypeError, match=r"cumsum_lanes: all arrays must share one dtype"):
        cumsum_lanes(np.ones((1, 2, 1)), np.ones((1, 2, 1), np.float32), False)
    with pytest.raises(ValueError, match=r"cumsum_lanes: x must be 3-D .* got x \(2, 2\), out \(2, 2\)"):
        cumsum_lanes(np.ones((2, 2)), np.ones((2, 2)), False)


def test_roll_and_reverse_cumsum_have_forward_mode_tangents() -> None:
    x, t = _float64(3, 4), _float64(3, 4, seed=9)
    for fn in (lambda v: v.roll((1, -2), (0, 1)), lambda v: v.cumsum(1).sum(1, keepdim=True).cumsum(0)):
        _, tangent = numdiff.func.jvp(fn, (x.detach(),), (t.detach(),))
        np.testing.assert_allclose(tangent.numpy(), fn(t).detach().numpy(), rtol=1e-12)


def _cumprod_grad_reference(x: np.ndarray, g: np.ndarray, dim: int) -> np.ndarray:
    """dx[i] = sum_{j >= i} g[j] * prod_{k <= j, k != i} x[k], written out element by element."""
    x, g = np.moveaxis(x, dim, -1), np.moveaxis(g, dim, -1)
    out = np.zeros_like(x, dtype=np.float64)
    n = x.shape[-1]
    for i in range(n):
        for j in range(i, n):
            others = np.prod(np.delete(x[..., : j + 1], i, axis=-1), axis=-1)
            out[..., i] += g[..., j] * others
    return np.moveaxis(out, -1, dim)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "dim"), [((3, 6), -1), ((4, 2, 3), 0), ((2, 5, 4), 1), ((2, 0, 3), 1)])
def test_cumprod_kernel_matches_the_written_out_gradient_with_zeros(shape, dim, dtype) -> None:
    rng = np.random.default_rng(7)
    data = rng.uniform(0.5, 1.5, shape).astype(dtype)
    if data.size:
        data.reshape(-1)[:: max(1, data.size // 3)] = 0.0  # zeros: the gradient must not divide by x
    x = numdiff.tensor(data, requires_grad=True)
    y = x.cumprod(dim)
    np.testing.assert_allclose(y.detach().numpy(), np.cumprod(data.astype(np.float64), dim), rtol=1e-6)
    weights = rng.standard_normal(shape).astype(dtype)
    y.backward(numdiff.tensor(weights))
    expected = _cumprod_grad_reference(data.astype(np.float64), weights.astype(np.float64), dim)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_cumprod_gradients_and_second_order() -> None:
    x = _float64(2, 4, 3, seed=8)
    assert gradcheck(lambda t: t.cumprod(1), (x,))
    assert gradgradcheck(lambda t: t.cumprod(1), (x,))


def test_cumprod_backward_lanes_names_the_kernel_and_shapes() -> None:
    with pytest.raises(ValueError, match=r"cumprod_backward_lanes: .* got x \(1, 2, 1\), grad \(1, 3, 1\)"):
        cumprod_backward_lanes(np.ones((1, 2, 1)), np.ones((1, 3, 1)), np.ones((1, 2, 1)))
