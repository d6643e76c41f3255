"""CUDA conv and pooling kernels against the CPU kernels (numdiff.kernels.conv / pool).

Tiny random shapes (the simulator runs every thread in Python) chosen to reach the arguments'
edge cases: stride, asymmetric and negative padding, dilation, groups and depthwise, several
tiles and reduction splits, ceil_mode's clipped last window, count_include_pad, divisor_override.
float64 must agree to 1e-9, float32 to 1e-4.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff._device import device
from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels import conv as cuda_conv
from numdiff.cuda.kernels import pool as cuda_pool
from numdiff.kernels import conv as cpu_conv
from numdiff.kernels import pool as cpu_pool

F = numdiff.nn.functional

CUDA = device("cuda")
DTYPES = [pytest.param(np.float64, 1e-9, id="float64"), pytest.param(np.float32, 1e-4, id="float32")]
F64, F32 = (np.float64, 1e-9), (np.float32, 1e-4)


def up(array: np.ndarray) -> CudaArray:
    return CudaArray.from_numpy(array, CUDA)


def empty(shape: tuple, dtype=np.float64) -> CudaArray:
    return CudaArray.empty(shape, dtype, CUDA)


def close(got: CudaArray, want: np.ndarray, tol: float) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.to_host(), want, rtol=tol, atol=tol)


# (N, C, H, W, Co, KH, KW, stride, padding (t, b, l, r), dilation, groups), dtype, tolerance;
# float32 runs on one configuration of each kernel family, to keep the simulator's time down.
GROUPED = (2, 4, 5, 6, 6, 3, 2, (1, 2), (1, 0, 2, 1), (1, 1), 2)
DEPTHWISE = (1, 3, 6, 5, 3, 3, 3, (2, 2), (1, 1, 1, 1), (2, 1), 3)
CONV2D = [
    pytest.param(GROUPED, np.float64, 1e-9, id="groups2-stride-asym-pad"),
    pytest.param(GROUPED, np.float32, 1e-4, id="groups2-stride-asym-pad-float32"),
    pytest.param(DEPTHWISE, np.float64, 1e-9, id="depthwise-dilated-strided"),
    pytest.param(
        (2, 10, 3, 4, 10, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
        np.float64,
        1e-9,
        id="pointwise-two-row-tiles",
    ),
    pytest.param(
        (1, 2, 5, 5, 2, 2, 2, (1, 1), (0, -1, 1, 0), (1, 1), 1), np.float64, 1e-9, id="negative-pad-crops"
    ),
]


@pytest.mark.parametrize("config, dtype, tol", CONV2D)
def test_conv2d_forward_and_both_gradients_match_the_cpu_kernels(config, dtype, tol):
    n, c, h, w, co, kh, kw, stride, padding, dilation, groups = config
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((co, c // groups, kh, kw)).astype(dtype)
    bias = rng.standard_normal(co).astype(dtype)
    oh = cpu_conv.conv_output_size(h, kh, stride[0], padding[0], padding[1], dilation[0])
    ow = cpu_conv.conv_output_size(w, kw, stride[1], padding[2], padding[3], dilation[1])
    args = (stride, padding, dilation, groups)

    out = cpu_conv.conv2d_forward(x, weight, bias, np.empty((n, co, oh, ow), dtype), *args)
    close(cuda_conv.conv2d_forward(up(x), up(weight), up(bias), empty(out.shape, dtype), *args), out, tol)
    grad_out = rng.standard_normal(out.shape).astype(dtype)
    grad_in = cpu_conv.conv2d_backward_input(grad_out, weight, np.empty_like(x), *args)
    close(
        cuda_conv.conv2d_backward_input(up(grad_out), up(weight), empty(x.shape, dtype), *args), grad_in, tol
    )
    grad_w = cpu_conv.conv2d_backward_weight(x, grad_out, np.empty_like(weight), *args)
    close(
        cuda_conv.conv2d_backward_weight(up(x), up(grad_out), empty(weight.shape, dtype), *args), grad_w, tol
    )


def test_conv2d_without_bias_and_weight_gradient_split_across_blocks():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 1, 6, 6))
    weight = rng.standard_normal((2, 1, 2, 2))
    out = cpu_conv.conv2d_forward(x, weight, None, np.empty((2, 2, 5, 5)))
    close(cuda_conv.conv2d_forward(up(x), up(weight), None, empty(out.shape)), out, 1e-9)
    # 2*5*5 = 50 reduction steps over a one-tile output: the reduction runs in several chunks
    # that add atomically, so this pins the split path.
    assert cuda_conv._split_count(1, 50, 1) > 1
    grad_out = rng.standard_normal(out.shape)
    grad_w = cpu_conv.conv2d_backward_weight(x, grad_out, np.empty_like(weight))
    close(cuda_conv.conv2d_backward_weight(up(x), up(grad_out), empty(weight.shape)), grad_w, 1e-9)


def test_conv_launchers_refuse_bad_arguments_before_launching():
    x, weight = up(np.ones((1, 4, 5, 5))), up(np.ones((2, 2, 3, 3)))
    with pytest.raises(ValueError, match=r"output must have shape \(1, 2, 3, 3\)"):
        cuda_conv.conv2d_forward(x, weight, None, empty((1, 2, 4, 4)), groups=2)
    with pytest.raises(ValueError, match="weight .* expects 2 input channels with groups=1"):
        cuda_conv.conv2d_forward(x, weight, None, empty((1, 2, 3, 3)))
    with pytest.raises(TypeError, match="share one dtype, got x=float64, weight=float32"):
        cuda_conv.conv2d_forward(x, weight.astype(np.float32), None, empty((1, 2, 3, 3)), groups=2)
    with pytest.raises(TypeError, match="x must be a CUDA array, got ndarray"):
        cuda_conv.conv2d_forward(np.ones((1, 4, 5, 5)), weight, None, empty((1, 2, 3, 3)), groups=2)
    with pytest.raises(ValueError, match="x must be C-contiguous"):
        cuda_conv.conv2d_forward(x.transpose(0, 1, 3, 2), weight, None, empty((1, 2, 3, 3)), groups=2)


# (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
CLIPPED = ((3, 3), (2, 2), (1, 1), True, True, None)
AVG2D = [
    pytest.param(((2, 2), (2, 2), (0, 0), False, True, None), *F64, id="plain"),
    pytest.param(((3, 2), (2, 1), (1, 1), True, False, None), *F64, id="ceil-exclude-pad"),
    pytest.param(CLIPPED, *F64, id="ceil-include-pad-clipped"),
    pytest.param(CLIPPED, *F32, id="ceil-include-pad-clipped-float32"),
    pytest.param(((2, 3), (1, 2), (1, 0), True, True, 3), *F64, id="divisor-override"),
]


@pytest.mark.parametrize("config, dtype, tol", AVG2D)
def test_avg_pool2d_forward_and_backward_match_the_cpu_kernels(config, dtype, tol):
    kernel, stride, padding, ceil_mode, include_pad, divisor = config
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 2, 5, 6)).astype(dtype)
    oh = cpu_pool.pool_output_size(5, kernel[0], stride[0], padding[0], 1, ceil_mode)
    ow = cpu_pool.pool_output_size(6, kernel[1], stride[1], padding[1], 1, ceil_mode)
    args = (kernel, stride, padding, ceil_mode, include_pad, divisor)
    out = cpu_pool.avg_pool2d_forward(x, np.empty((2, 2, oh, ow), dtype), *args)
    close(cuda_pool.avg_pool2d_forward(up(x), empty(out.shape, dtype), *args), out, tol)
    grad_out = rng.standard_normal(out.shape).astype(dtype)
    grad_in = cpu_pool.avg_pool2d_backward(grad_out, np.empty_like(x), *args)
    close(cuda_pool.avg_pool2d_backward(up(grad_out), empty(x.shape, dtype), *args), grad_in, tol)


@pytest.mark.parametrize(
    "out_size, dtype, tol",
    [
        pytest.param((2, 3), *F64, id="shrink"),
        pytest.param((3, 5), *F64, id="overlapping"),
        pytest.param((3, 5), *F32, id="overlapping-float32"),
        pytest.param((5, 6), *F64, id="identity"),
    ],
)
def test_adaptive_pool2d_matches_the_cpu_kernels(out_size, dtype, tol):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 2, 5, 6)).astype(dtype)
    x[0, 1, 2, 3] = np.nan  # a NaN wins its max windows, as on the CPU
    shape = (1, 2) + out_size
    out = cpu_pool.adaptive_avg_pool2d_forward(x, np.empty(shape, dtype))
    close(cuda_pool.adaptive_avg_pool2d_forward(up(x), empty(shape, dtype)), out, tol)
    grad_out = rng.standard_normal(shape).astype(dtype)
    grad_in = cpu_pool.adaptive_avg_pool2d_backward(grad_out, np.empty_like(x))
    close(cuda_pool.adaptive_avg_pool2d_backward(up(grad_out), empty(x.shape, dtype)), grad_in, tol)
    indices = np.empty(shape, np.int64)
    out = cpu_pool.adaptive_max_pool2d_forward(x, np.empty(shape, dtype), indices)
    d_indices = empty(shape, np.int64)
    close(cuda_pool.adaptive_max_pool2d_forward(up(x), empty(shape, dtype), d_indices), out, 0)
    np.testing.assert_array_equal(d_indices.to_host(), indices)
    grad_in = cpu_pool.max_pool_backward(grad_out, indices, np.empty_like(x))
    close(cuda_pool.max_pool_backward(up(grad_out), d_indices, empty(x.shape, dtype)), grad_in, tol)


@pytest.mark.parametrize("dtype, tol", DTYPES)
def test_max_pool_with_unit_height_forward_backward_and_gather_match_the_cpu_kernels(dtype, tol):
    # 1-d max pooling as the ops run it: 2-d with H = 1.
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 3, 1, 9)).astype(dtype)
    x[1, 2, 0, 4] = np.nan
    args = ((1, 3), (1, 2), (0, 1), (1, 2), True)
    ol = cpu_pool.pool_output_size(9, 3, 2, 1, 2, True)
    out, indices = np.empty((2, 3, 1, ol), dtype), np.empty((2, 3, 1, ol), np.int64)
    cpu_pool.max_pool2d_forward(x, out, indices, *args)
    d_out, d_indices = empty(out.shape, dtype), empty(out.shape, np.int64)
    cuda_pool.max_pool2d_forward(up(x), d_out, d_indices, *args)
    close(d_out, out, 0)
    np.testing.assert_array_equal(d_indices.to_host(), indices)
    grad_out = rng.standard_normal(out.shape).astype(dtype)
    grad_in = cpu_pool.max_pool_backward(grad_out, indices, np.empty_like(x))
    close(cuda_pool.max_pool_backward(up(grad_out), d_indices, empty(x.shape, dtype)), grad_in, tol)
    gathered = cpu_pool.max_pool_gather(x, indices, np.empty_like(out))
    close(cuda_pool.max_pool_gather(up(x), d_indices, empty(out.shape, dtype)), gathered, 0)


def test_max_pool_window_wholly_in_padding_reports_pytorchs_index_on_both_targets():
    # Issue 9 item 7: the CPU said 1 (as PyTorch does), CUDA said -1. The window's taps sit at
    # columns -1 and 1 of a 1-wide row; the scan starts at the first non-negative tap, column 1.
    x = np.array([[[[3.0]]]])
    args = ((1, 2), (1, 1), (0, 1), (1, 2), False)
    out, indices = np.empty((1, 1, 1, 1)), np.empty((1, 1, 1, 1), np.int64)
    cpu_pool.max_pool2d_forward(x, out, indices, *args)
    d_out, d_indices = empty(out.shape), empty(out.shape, np.int64)
    cuda_pool.max_pool2d_forward(up(x), d_out, d_indices, *args)
    assert out[0, 0, 0, 0] == -np.inf and indices[0, 0, 0, 0] == 1
    close(d_out, out, 0)
    np.testing.assert_array_equal(d_indices.to_host(), indices)


def test_max_pool2d_op_with_return_indices_agrees_on_cpu_and_cuda():
    x = numdiff.tensor([[[[3.0]]]], dtype=numdiff.float64)
    options = dict(stride=1, padding=(0, 1), dilation=(1, 2), return_indices=True)
    cpu_out, cpu_idx = F.max_pool2d(x, (1, 2), **options)
    cuda_out, cuda_idx = F.max_pool2d(x.to("cuda"), (1, 2), **options)
    assert cpu_idx.tolist() == cuda_idx.cpu().tolist() == [[[[1]]]]
    assert cpu_out.tolist() == cuda_out.cpu().tolist() == [[[[-np.inf]]]]


def test_launchers_refuse_an_output_overlapping_an_input():
    buffer = up(np.ones((2, 1, 1, 4, 4)))
    x, out = buffer[0], buffer[1]
    cuda_pool.avg_pool2d_forward(x, out[:, :, :2, :2].copy(), (2, 2), (2, 2))  # disjoint: fine
    with pytest.raises(ValueError, match="avg_pool2d_backward: grad_in .* overlaps grad_out"):
        cuda_pool.avg_pool2d_backward(x, x, (1, 1), (1, 1))
    weight = up(np.ones((1, 1, 1, 1)))
    with pytest.raises(ValueError, match="conv2d_forward: out .* overlaps x"):
        cuda_conv.conv2d_forward(x, weight, None, x)
    np.testing.assert_array_equal(buffer.to_host(), 1.0)


def test_pool_launchers_refuse_bad_arguments_before_launching():
    x = up(np.ones((1, 1, 4, 4)))
    with pytest.raises(ValueError, match=r"padding \(2, 2\) must be at most half the kernel size \(2, 2\)"):
        cuda_pool.avg_pool2d_forward(x, empty((1, 1, 4, 4)), (2, 2), (2, 2), (2, 2))
    with pytest.raises(ValueError, match=r"output must have shape \(1, 1, 2, 2\), got \(1, 1, 3, 3\)"):
        cuda_pool.avg_pool2d_forward(x, empty((1, 1, 3, 3)), (2, 2), (2, 2))
    with pytest.raises(ValueError, match="divisor_override must be a non-zero int"):
        cuda_pool.avg_pool2d_forward(x, empty((1, 1, 2, 2)), (2, 2), (2, 2), divisor_override=0)
    with pytest.raises(TypeError, match="indices must be an int64 CUDA array, got float64"):
        cuda_pool.max_pool2d_forward(x, empty((1, 1, 2, 2)), empty((1, 1, 2, 2)), (2, 2), (2, 2))
    with pytest.raises(ValueError, match=r"equal \(N, C\)"):
        cuda_pool.adaptive_avg_pool2d_forward(x, empty((1, 2, 2, 2)))


def test_matmul_refuses_an_output_overlapping_an_operand():
    from numdiff.cuda.kernels import matmul as cuda_matmul

    a = up(np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"matmul: out \(3, 3\) overlaps a \(3, 3\) in memory"):
        cuda_matmul.gemm_nn(a, up(np.ones((3, 3))), a)
    with pytest.raises(ValueError, match="matmul: out .* overlaps b"):
        cuda_matmul.gemm_nt(up(np.ones((3, 3))), a, a)  # b arrives transposed: a strided view
    np.testing.assert_array_equal(a.to_host(), 1.0)
