"""CUDA kernels against NumPy on shapes that reach their edge cases: many blocks, views, repeats."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff._device import device
from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels import matmul as cuda_matmul

CUDA = device("cuda")


def up(array: np.ndarray) -> CudaArray:
    return CudaArray.from_numpy(array, CUDA)


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def test_sum_of_a_long_row_uses_several_blocks_and_is_exact(rng):
    # 5000 > 256 threads * 8 per thread: pass 1 splits the row into parts, pass 2 folds them.
    x = rng.standard_normal(5000)
    np.testing.assert_allclose(np.sum(up(x)).to_host(), np.sum(x), rtol=1e-12)
    np.testing.assert_allclose(np.max(up(x)).to_host(), np.max(x))


@pytest.mark.parametrize("axis", [0, 1, 2, (0, 2), (1, 2), None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_any_axes_of_a_transposed_view(rng, axis, keepdims):
    x = rng.standard_normal((3, 4, 5))
    view_host = x.transpose(2, 0, 1)
    view = up(x).transpose(2, 0, 1)
    for fn in (np.sum, np.prod, np.max, np.min):
        np.testing.assert_allclose(
            fn(view, axis=axis, keepdims=keepdims).to_host(),
            fn(view_host, axis=axis, keepdims=keepdims),
            rtol=1e-12,
        )
    for fn in (np.argmax, np.argmin):
        if isinstance(axis, int):
            np.testing.assert_array_equal(
                fn(view, axis=axis, keepdims=keepdims).to_host(), fn(view_host, axis=axis, keepdims=keepdims)
            )


def test_max_and_argmax_propagate_nan_like_numpy():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 4.0]])
    np.testing.assert_array_equal(np.max(up(x), axis=1).to_host(), np.max(x, axis=1))
    np.testing.assert_array_equal(np.argmax(up(x), axis=1).to_host(), np.argmax(x, axis=1))


def test_integer_and_bool_reductions_follow_numpy_dtypes():
    x = np.array([[1, 2], [3, 4]], dtype=np.int32)
    got = np.sum(up(x), axis=0)
    assert got.dtype == np.sum(x, axis=0).dtype
    np.testing.assert_array_equal(got.to_host(), [4, 6])
    mask = np.array([[True, False], [True, True]])
    np.testing.assert_array_equal(np.all(up(mask), axis=1).to_host(), [False, True])
    np.testing.assert_array_equal(np.any(up(mask), axis=0).to_host(), [True, True])


def test_broadcasting_elementwise_over_strided_views(rng):
    a = rng.standard_normal((4, 3))
    b = rng.standard_normal(4)
    got = np.multiply(up(a).T, up(b)[::-1]) + 1.0
    np.testing.assert_allclose(got.to_host(), a.T * b[::-1] + 1.0, rtol=1e-15)


def test_float32_stays_float32_with_python_scalars(rng):
    a = rng.standard_normal(5).astype(np.float32)
    got = up(a) * 2.5 - 1
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.to_host(), a * 2.5 - 1, rtol=1e-6)


def test_scatter_add_accumulates_every_repeated_index(rng):
    values = rng.standard_normal((4, 2))
    key = (np.array([0, 2, 0, 0]),)
    out = up(np.zeros((3, 2)))
    np.add.at(out, key, up(values))
    expected = np.zeros((3, 2))
    np.add.at(expected, key, values)
    np.testing.assert_allclose(out.to_host(), expected, rtol=1e-15)


def test_advanced_getitem_and_setitem_match_numpy(rng):
    x = rng.standard_normal((3, 4))
    mask = x > 0
    np.testing.assert_array_equal(up(x)[up(mask)].to_host(), x[mask])
    np.testing.assert_array_equal(up(x)[[2, 0], 1:3].to_host(), x[[2, 0], 1:3])
    target = up(x)
    target[:, [1, 3]] = up(np.array([7.0, 8.0]))
    expected = x.copy()
    expected[:, [1, 3]] = [7.0, 8.0]
    np.testing.assert_array_equal(target.to_host(), expected)


def test_take_along_axis_gathers_like_numpy(rng):
    x = rng.standard_normal((3, 4))
    index = np.array([[0, 3], [1, 1], [2, 0]])
    np.testing.assert_array_equal(
        np.take_along_axis(up(x), up(index), axis=1).to_host(), np.take_along_axis(x, index, axis=1)
    )


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_tiled_matmul_crosses_tile_edges_and_reads_transposed_views(rng, dtype, tol):
    a = rng.standard_normal((2, 5, 7)).astype(dtype)
    b = rng.standard_normal((2, 7, 6)).astype(dtype)
    out = cuda_matmul.bgemm_nn(up(a), up(b), CudaArray.empty((2, 5, 6), dtype, CUDA))
    np.testing.assert_allclose(out.to_host(), a @ b, rtol=tol, atol=tol)
    g = rng.standard_normal((5, 6)).astype(dtype)
    out = CudaArray.empty((5, 7), dtype, CUDA)
    cuda_matmul.gemm_nt(up(g), up(b[0]), out)
    np.testing.assert_allclose(out.to_host(), g @ b[0].T, rtol=tol, atol=tol)
    out = CudaArray.empty((7, 6), dtype, CUDA)
    cuda_matmul.gemm_tn(up(a[1]), up(g), out)
    np.testing.assert_allclose(out.to_host(), a[1].T @ g, rtol=tol, atol=tol)


def test_matmul_refuses_mismatched_shapes_before_launching():
    with pytest.raises(ValueError, match=r"\(2, 3\) @ \(4, 2\)"):
        cuda_matmul.gemm_nn(up(np.ones((2, 3))), up(np.ones((4, 2))), CudaArray.empty((2, 2), np.float64, CUDA))


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation, ceil_mode",
    [
        ((2, 2), (2, 2), (0, 0), (1, 1), False),
        ((3, 2), (1, 2), (1, 1), (1, 1), True),
        ((2, 2), (1, 1), (0, 1), (2, 1), False),
    ],
)
def test_max_pool2d_forward_backward_and_gather_match_the_cpu_kernels(
    rng, kernel, stride, padding, dilation, ceil_mode
):
    from numdiff.cuda.kernels import pool as cuda_pool
    from numdiff.kernels import pool as cpu_pool

    x = rng.standard_normal((2, 2, 5, 5))
    x[0, 0, 1, 1] = np.nan
    oh = cpu_pool.pool_output_size(5, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow = cpu_pool.pool_output_size(5, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    out, idx = np.empty((2, 2, oh, ow)), np.empty((2, 2, oh, ow), np.int64)
    cpu_pool.max_pool2d_forward(x, out, idx, kernel, stride, padding, dilation, ceil_mode)
    d_out, d_idx = CudaArray.empty(out.shape, np.float64, CUDA), CudaArray.empty(out.shape, np.int64, CUDA)
    cuda_pool.max_pool2d_forward(up(x), d_out, d_idx, kernel, stride, padding, dilation, ceil_mode)
    np.testing.assert_array_equal(d_out.to_host(), out)
    np.testing.assert_array_equal(d_idx.to_host(), idx)
    g = rng.standard_normal(out.shape)
    grad_in = cpu_pool.max_pool_backward(g, idx, np.empty_like(x))
    d_grad_in = cuda_pool.max_pool_backward(up(g), d_idx, CudaArray.empty(x.shape, np.float64, CUDA))
    np.testing.assert_allclose(d_grad_in.to_host(), grad_in, rtol=1e-12)
    gathered = cpu_pool.max_pool_gather(x, idx, np.empty_like(out))
    d_gathered = cuda_pool.max_pool_gather(up(x), d_idx, CudaArray.empty(out.shape, np.float64, CUDA))
    np.testing.assert_array_equal(d_gathered.to_host(), gathered)
