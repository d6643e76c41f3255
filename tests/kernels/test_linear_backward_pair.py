"""A linear layer's two gradient products in one call (numdiff.kernels.matmul.linear_backward_products):
side by side on the threads from PAIR_MIN_MACS, one after the other below, the same numbers either way."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numdiff
from numdiff.kernels import matmul


@pytest.fixture(params=[1, 2])
def threads(request):
    if numba.config.NUMBA_NUM_THREADS < request.param:
        pytest.skip("needs a Numba pool of at least two threads")
    previous = numdiff.get_num_threads()
    numdiff.set_num_threads(request.param)
    yield request.param
    numdiff.set_num_threads(previous)


# (rows, out, in): below PAIR_MIN_MACS, just above it, and uneven sizes that split into odd blocks.
@pytest.mark.parametrize("rows, outputs, inputs", [(7, 5, 3), (256, 128, 128), (300, 97, 151)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_match_numpy(threads, rows, outputs, inputs, dtype):
    rng = np.random.default_rng(rows + outputs)
    grad = rng.standard_normal((rows, outputs)).astype(dtype)
    weight = rng.standard_normal((outputs, inputs)).astype(dtype)
    x = rng.standard_normal((rows, inputs)).astype(dtype)
    grad_x, grad_weight = np.empty_like(x), np.empty_like(weight)
    matmul.linear_backward_products(grad, weight, x, grad_x, grad_weight)
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(grad_x, grad.astype(np.float64) @ weight, **tol)
    np.testing.assert_allclose(grad_weight, grad.T.astype(np.float64) @ x, **tol)


def test_pairs_from_pair_min_macs():
    assert 256 * 128 * 128 >= matmul.PAIR_MIN_MACS > 7 * 5 * 3


@pytest.mark.parametrize(
    "shapes, message",
    [(((4, 2), (3, 3), (4, 3), (4, 3), (3, 3)), "weight"),
     (((4, 2), (2, 3), (5, 3), (5, 3), (2, 3)), "x"),
     (((4, 2), (2, 3), (4, 3), (4, 2), (2, 3)), "grad_x"),
     (((4, 2), (2, 3), (4, 3), (4, 3), (3, 2)), "grad_weight")],
)  # fmt: skip
def test_wrong_shapes_are_refused_by_name(shapes, message):
    arrays = [np.ones(shape) for shape in shapes]
    with pytest.raises(ValueError, match=f"linear_backward_products.*{message}"):
        matmul.linear_backward_products(*arrays)


def test_an_output_overlapping_an_input_is_refused():
    grad, weight, x = np.ones((4, 2)), np.ones((2, 3)), np.ones((4, 3))
    with pytest.raises(ValueError, match="linear_backward_products"):
        matmul.linear_backward_products(grad, weight, x, x, np.empty((2, 3)))


def test_linear_layer_gradients_at_two_threads_match_one_thread(threads):
    rng = np.random.default_rng(5)
    # 512 rows x 128 x 128: 8.4 million multiply-adds a product, paired at two threads.
    x_data, w_data, b_data = rng.standard_normal((4, 128, 128)), rng.standard_normal((128, 128)), rng.standard_normal(128)
    x = numdiff.tensor(x_data, requires_grad=True)
    w = numdiff.tensor(w_data, requires_grad=True)
    b = numdiff.tensor(b_data, requires_grad=True)
    (numdiff.nn.functional.linear(x, w, b) ** 2).sum().backward()
    grad = 2 * (x_data @ w_data.T + b_data)
    # Each product's summation order is its GEMM's (OpenBLAS or numdiff's loops, numdiff.kernels._gemm_route):
    # bounded by the size of the sums' terms, not each result's (an element can cancel to near 0).
    expected = [grad @ w_data, grad.reshape(-1, 128).T @ x_data.reshape(-1, 128), grad.reshape(-1, 128).sum(0)]
    for got, want in zip((x.grad, w.grad, b.grad), expected):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("rows, outputs, inputs", [(1, 128, 185), (7, 5, 3), (256, 128, 128)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_checked_entries_give_the_checking_functions_bits(threads, rows, outputs, inputs, dtype):
    # run_linear_backward_checked and run_product_checked skip only the argument checks: the
    # products are the public functions', bit for bit.
    rng = np.random.default_rng(rows * outputs)
    grad = rng.standard_normal((rows, outputs)).astype(dtype)
    weight = rng.standard_normal((outputs, inputs)).astype(dtype)
    x = rng.standard_normal((rows, inputs)).astype(dtype)
    checked = np.empty_like(x), np.empty_like(weight)
    matmul.linear_backward_products(grad, weight, x, *checked)
    trusted = np.empty_like(x), np.empty_like(weight)
    matmul.run_linear_backward_checked(grad, weight, x, *trusted)
    np.testing.assert_array_equal(trusted[0], checked[0])
    np.testing.assert_array_equal(trusted[1], checked[1])
    for public, trans_a, trans_b, a, b in [
        (matmul.gemm_nt, False, True, x, weight),
        (matmul.gemm_nn, False, False, grad, weight),
        (matmul.gemm_tn, True, False, grad, x),
    ]:
        rows_out = a.shape[1] if trans_a else a.shape[0]
        cols_out = b.shape[0] if trans_b else b.shape[1]
        expected = public(a, b, np.empty((rows_out, cols_out), dtype))
        out = np.empty((rows_out, cols_out), dtype)
        matmul.run_product_checked(trans_a, trans_b, a, b, out)
        np.testing.assert_array_equal(out, expected)
