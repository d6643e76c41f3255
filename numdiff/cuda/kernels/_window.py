"""Pooling windows: the index arithmetic the CUDA pooling kernels share, and its checks in Python.

Plain functions compiled as CUDA device functions, so forward and backward kernels agree on every
window by construction. The rules are the CPU kernels' (numdiff.kernels.pool), which are PyTorch's.
"""

from __future__ import annotations

from numba import cuda

from numdiff.cuda.kernels._checks import check_shape, ints
from numdiff.kernels.pool import pool_output_size


@cuda.jit(device=True)
def adaptive_window(o, in_size, out_size):
    """Input range [lo, hi) pooled into output `o` of adaptive pooling: floor(o*In/Out) to
    ceil((o+1)*In/Out)."""
    return (o * in_size) // out_size, ((o + 1) * in_size + out_size - 1) // out_size


@cuda.jit(device=True)
def adaptive_outputs(i, in_size, out_size):
    """Outputs [lo, hi) of adaptive pooling whose window holds input `i` (the inverse of
    adaptive_window: lo = floor(i*Out/In), hi = ceil((i+1)*Out/In))."""
    return (i * out_size) // in_size, ((i + 1) * out_size + in_size - 1) // in_size


@cuda.jit(device=True)
def avg_window(o, stride, pad, kernel, size):
    """Average pooling along one axis: the in-image range [lo, hi) of output `o`'s window and
    PyTorch's padded window length (the window end clipped to size + pad, not to size)."""
    start = o * stride - pad
    end = min(start + kernel, size + pad)
    return max(start, 0), min(end, size), end - start


@cuda.jit(device=True)
def window_outputs(i, stride, pad, kernel, out_size):
    """Outputs [lo, hi) of an undilated pooling whose window [o*stride - pad, +kernel) holds `i`."""
    first = i + pad - kernel + 1
    lo = (first + stride - 1) // stride if first > 0 else 0
    return lo, min((i + pad) // stride + 1, out_size)


@cuda.jit(device=True)
def avg_divisor(oh, ow, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor_override):
    """The divisor of window (oh, ow); 0 for a window with no in-image element."""
    h0, h1, h_padded = avg_window(oh, sh, ph, kh, height)
    w0, w1, w_padded = avg_window(ow, sw, pw, kw, width)
    if h1 <= h0 or w1 <= w0:
        return 0
    if divisor_override != 0:
        return divisor_override
    if count_include_pad:
        return h_padded * w_padded
    return (h1 - h0) * (w1 - w0)


def check_window(op: str, x, out, kernel_size, stride, padding, dilation, ceil_mode) -> tuple:
    """Validate a pooling window of x (N, C, H, W) -> out (N, C, OH, OW) as the CPU kernels do;
    return (kh, kw, sh, sw, ph, pw, dh, dw)."""
    kh, kw = ints(op, "kernel_size", kernel_size, 2)
    sh, sw = ints(op, "stride", stride, 2)
    ph, pw = ints(op, "padding", padding, 2)
    dh, dw = ints(op, "dilation", dilation, 2)
    for name, value in (("kernel_size", kh), ("kernel_size", kw), ("stride", sh), ("stride", sw)):
        if value < 1:
            raise ValueError(f"{op}: {name} must be positive, got {value}")
    if dh < 1 or dw < 1 or ph < 0 or pw < 0:
        raise ValueError(f"{op}: dilation {(dh, dw)} must be positive and padding {(ph, pw)} non-negative")
    if x.ndim != 4:
        raise ValueError(f"{op}: input must be 4-D (N, C, H, W), got shape {x.shape}")
    if ph > kh // 2 or pw > kw // 2:
        raise ValueError(f"{op}: padding {(ph, pw)} must be at most half the kernel size {(kh, kw)}")
    height, width = x.shape[2], x.shape[3]
    oh_size = pool_output_size(height, kh, sh, ph, dh, ceil_mode)
    ow_size = pool_output_size(width, kw, sw, pw, dw, ceil_mode)
    if oh_size < 1 or ow_size < 1:
        raise ValueError(
            f"{op}: kernel {(kh, kw)} with dilation {(dh, dw)} does not fit the padded input "
            f"{(height + 2 * ph, width + 2 * pw)}"
        )
    check_shape(op, "output", out, (x.shape[0], x.shape[1], oh_size, ow_size))
    return kh, kw, sh, sw, ph, pw, dh, dw


def check_adaptive(op: str, x, out) -> None:
    """Adaptive pooling: 4-D input and output with equal (N, C) and positive spatial sizes."""
    if x.ndim != 4 or out.ndim != 4 or x.shape[:2] != out.shape[:2]:
        raise ValueError(
            f"{op}: input and output must be 4-D with equal (N, C), got {x.shape} and {out.shape}"
        )
    if min(out.shape[2:]) < 1 or min(x.shape[2:]) < 1:
        raise ValueError(f"{op}: spatial sizes must be positive, got input {x.shape} and output {out.shape}")
