"""Average-pooling kernels (CPU, Numba): avg_pool1d/2d, adaptive_avg_pool1d/2d, and backward.

Every kernel works on planes: an (N, C, H, W) array is N*C independent (H, W) planes, pooled
by a ``prange`` over planes (pooling is memory-bound). 1-d pooling is 2-d with H = 1.

Average pooling follows PyTorch's rule for windows that run into padding (including the last
window with ``ceil_mode``): the window end is clipped to ``size + padding`` first and its
area there is the ``count_include_pad`` divisor; it is then clipped to the image for summing
and for the ``count_include_pad=False`` divisor; ``divisor_override`` replaces both. A window
with no in-image element outputs 0. The backward spreads each output gradient over the same
window with the same divisor, and is linear, so its own backward is the forward.

Adaptive pooling of ``In`` to ``Out`` uses windows ``[floor(i*In/Out), ceil((i+1)*In/Out))``.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._checks import check_float_arrays
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._pool_window import as_2d, check_adaptive, check_window, column_taps, planes, tap_range
from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "avg_pool2d_forward",
    "avg_pool2d_backward",
    "avg_pool1d_forward",
    "avg_pool1d_backward",
    "adaptive_avg_pool2d_forward",
    "adaptive_avg_pool2d_backward",
    "adaptive_avg_pool1d_forward",
    "adaptive_avg_pool1d_backward",
]


# --------------------------------------------------------------------------- compiled cores


@njit(cache=True, nogil=True)
def _avg_divisors(o_size, stride, pad, kernel, size):
    """Per output index along one axis: in-image tap count and PyTorch's padded window size
    (window end clipped to ``size + pad`` first)."""
    valid = np.empty(o_size, np.int64)
    padded = np.empty(o_size, np.int64)
    for o in range(o_size):
        lo = o * stride - pad
        hi = min(lo + kernel, size + pad)
        padded[o] = hi - lo
        valid[o] = max(0, min(hi, size) - max(lo, 0))
    return valid, padded


@njit(cache=True, nogil=True)
def _avg_counts(oh_size, ow_size, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor):
    """(OH, OW) divisor of every window; 0 marks a window with no in-image element."""
    h_valid, h_pad = _avg_divisors(oh_size, sh, ph, kh, height)
    w_valid, w_pad = _avg_divisors(ow_size, sw, pw, kw, width)
    counts = np.empty((oh_size, ow_size), np.float64)
    for oh in range(oh_size):
        for ow in range(ow_size):
            if h_valid[oh] == 0 or w_valid[ow] == 0:
                counts[oh, ow] = 0.0
            elif divisor != 0:
                counts[oh, ow] = divisor
            elif count_include_pad:
                counts[oh, ow] = h_pad[oh] * w_pad[ow]
            else:
                counts[oh, ow] = h_valid[oh] * w_valid[ow]
    return counts


def _avg_pool_core(x3, out3, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, backward):
    """forward: out3 <- avg(x3); backward: x3 <- spread(out3) (x3 is then the gradient).

    Per output row, per in-image tap (i, j): one strided sweep over the output row between
    the precomputed column range of tap j (no data-dependent branches, so no phase split is
    needed: it measured slower here). Forward sums accumulate in float64.
    """
    n_planes, height, width = x3.shape
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    counts = _avg_counts(oh_size, ow_size, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor)
    j_lo, j_hi = column_taps(kw, 1, sw, pw, width, ow_size)
    xf = x3.reshape(-1)
    of = out3.reshape(-1)
    ustride = np.uint64(sw)
    for p in prange(n_planes):
        row = np.empty(ow_size, np.float64)
        if backward:
            xf[p * height * width : (p + 1) * height * width] = 0
        for oh in range(oh_size):
            o_base = np.uint64((p * oh_size + oh) * ow_size)
            h0 = oh * sh - ph
            i_lo, i_hi = tap_range(h0, 1, kh, height)
            for ow in range(np.uint64(ow_size)):
                cnt = counts[oh, ow]
                if backward:
                    row[ow] = of[o_base + ow] / cnt if cnt != 0 else 0.0
                else:
                    row[ow] = 0.0
            for i in range(i_lo, i_hi):
                row_base = (p * height + h0 + i) * width
                for j in range(kw):
                    lo = j_lo[j]
                    at = np.uint64(row_base + lo * sw + j - pw)
                    ulo = np.uint64(lo)
                    if backward:
                        for k in range(np.uint64(j_hi[j] - lo)):
                            xf[at + k * ustride] += row[ulo + k]
                    else:
                        for k in range(np.uint64(j_hi[j] - lo)):
                            row[ulo + k] += xf[at + k * ustride]
            if not backward:
                for ow in range(np.uint64(ow_size)):
                    cnt = counts[oh, ow]
                    of[o_base + ow] = row[ow] / cnt if cnt != 0 else 0.0


def _adaptive_avg_core(x3, out3, backward):
    """forward: out3 <- adaptive avg(x3); backward: x3 <- spread(out3)."""
    height, width = x3.shape[1], x3.shape[2]
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    for p in prange(x3.shape[0]):
        plane = x3[p]
        if backward:
            plane[:, :] = 0
        for oh in range(oh_size):
            h0 = (oh * height) // oh_size
            h1 = ((oh + 1) * height + oh_size - 1) // oh_size
            for ow in range(ow_size):
                w0 = (ow * width) // ow_size
                w1 = ((ow + 1) * width + ow_size - 1) // ow_size
                count = (h1 - h0) * (w1 - w0)
                if backward:
                    share = out3[p, oh, ow] / count
                    for ih in range(h0, h1):
                        for iw in range(w0, w1):
                            plane[ih, iw] += share
                else:
                    total = 0.0
                    for ih in range(h0, h1):
                        for iw in range(w0, w1):
                            total += plane[ih, iw]
                    out3[p, oh, ow] = total / count


# --------------------------------------------------------------------------- average pooling


# Each core as a serial and a parallel build, picked per call by size (numdiff.kernels._parallel).
_avg_pool_core = serial_and_parallel(_avg_pool_core, nogil=True)
_adaptive_avg_core = serial_and_parallel(_adaptive_avg_core, nogil=True)


def _avg_args(op, x, out, kernel_size, stride, padding, ceil_mode, divisor_override):
    kh, kw, sh, sw, ph, pw, _, _ = check_window(op, x, out, kernel_size, stride, padding, (1, 1), ceil_mode)
    if divisor_override is None:
        divisor = 0
    elif int(divisor_override) != divisor_override or divisor_override == 0:
        raise ValueError(f"{op}: divisor_override must be a non-zero integer, got {divisor_override!r}")
    else:
        divisor = int(divisor_override)
    return kh, kw, sh, sw, ph, pw, divisor


def avg_pool2d_forward(
    x: np.ndarray,
    out: np.ndarray,
    kernel_size: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int] = (0, 0),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> np.ndarray:
    """``out[n, c, oh, ow] = sum(window) / divisor`` with PyTorch's window and divisor rules.

    Shapes: x (N, C, H, W), out (N, C, OH, OW). Loop nest: prange over planes; for oh; for ow;
    for window element. Sums accumulate in float64.

    >>> avg_pool2d_forward(np.arange(16.0).reshape(1, 1, 4, 4), np.empty((1, 1, 2, 2)), (2, 2), (2, 2))[0, 0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]])
    """
    op = "avg_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    kh, kw, sh, sw, ph, pw, divisor = _avg_args(
        op, x, out, kernel_size, stride, padding, ceil_mode, divisor_override
    )
    core, _ = _avg_pool_core.pick(x.size)
    core(planes(x), planes(out), kh, kw, sh, sw, ph, pw, bool(count_include_pad), divisor, False)
    return out


def avg_pool2d_backward(
    grad_out: np.ndarray,
    grad_in: np.ndarray,
    kernel_size: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int] = (0, 0),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> np.ndarray:
    """Input gradient of :func:`avg_pool2d_forward`, overwriting grad_in: each output gradient
    divided by its window's divisor is added to every in-image element of the window.

    Shapes: grad_out (N, C, OH, OW), grad_in (N, C, H, W). Loop nest: prange over planes; zero
    the plane; for oh; for ow; for window element. Linear in grad_out; its own backward is
    :func:`avg_pool2d_forward` with the same arguments.

    >>> avg_pool2d_backward(np.ones((1, 1, 1, 1)), np.empty((1, 1, 2, 2)), (2, 2), (2, 2))[0, 0]
    array([[0.25, 0.25],
           [0.25, 0.25]])
    """
    op = "avg_pool2d_backward"
    check_float_arrays(op, grad_out=grad_out, grad_in=grad_in)
    kh, kw, sh, sw, ph, pw, divisor = _avg_args(
        op, grad_in, grad_out, kernel_size, stride, padding, ceil_mode, divisor_override
    )
    _avg_pool_core.pick(grad_in.size)[0](
        planes(grad_in), planes(grad_out), kh, kw, sh, sw, ph, pw, bool(count_include_pad), divisor, True
    )
    return grad_in


def avg_pool1d_forward(
    x: np.ndarray,
    out: np.ndarray,
    kernel_size: int,
    stride: int,
    padding: int = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> np.ndarray:
    """1-d average pooling as 2-d with H = 1: x (N, C, L), out (N, C, OL).

    >>> avg_pool1d_forward(np.array([[[1.0, 3.0, 5.0, 7.0]]]), np.empty((1, 1, 2)), 2, 2)
    array([[[2., 6.]]])
    """
    op = "avg_pool1d_forward"
    avg_pool2d_forward(
        as_2d(op, "x", x),
        as_2d(op, "out", out),
        (1, kernel_size),
        (1, stride),
        (0, padding),
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
    return out


def avg_pool1d_backward(
    grad_out: np.ndarray,
    grad_in: np.ndarray,
    kernel_size: int,
    stride: int,
    padding: int = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> np.ndarray:
    """Input gradient of :func:`avg_pool1d_forward`, overwriting grad_in.

    >>> avg_pool1d_backward(np.array([[[2.0, 4.0]]]), np.empty((1, 1, 4)), 2, 2)
    array([[[1., 1., 2., 2.]]])
    """
    op = "avg_pool1d_backward"
    avg_pool2d_backward(
        as_2d(op, "grad_out", grad_out),
        as_2d(op, "grad_in", grad_in),
        (1, kernel_size),
        (1, stride),
        (0, padding),
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
    return grad_in


# --------------------------------------------------------------------------- adaptive average


def adaptive_avg_pool2d_forward(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Adaptive average pooling of x (N, C, H, W) to out (N, C, OH, OW).

    Loop nest: prange over planes; for oh; for ow; for window element (float64 sum).

    >>> adaptive_avg_pool2d_forward(np.arange(6.0).reshape(1, 1, 2, 3), np.empty((1, 1, 1, 1)))
    array([[[[2.5]]]])
    """
    op = "adaptive_avg_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    check_adaptive(op, x, out)
    _adaptive_avg_core.pick(x.size)[0](planes(x), planes(out), False)
    return out


def adaptive_avg_pool2d_backward(grad_out: np.ndarray, grad_in: np.ndarray) -> np.ndarray:
    """Input gradient of :func:`adaptive_avg_pool2d_forward`, overwriting grad_in. Linear; its
    own backward is the forward.

    >>> adaptive_avg_pool2d_backward(np.full((1, 1, 1, 1), 4.0), np.empty((1, 1, 2, 2)))[0, 0]
    array([[1., 1.],
           [1., 1.]])
    """
    op = "adaptive_avg_pool2d_backward"
    check_float_arrays(op, grad_out=grad_out, grad_in=grad_in)
    check_adaptive(op, grad_in, grad_out)
    _adaptive_avg_core.pick(grad_in.size)[0](planes(grad_in), planes(grad_out), True)
    return grad_in


def adaptive_avg_pool1d_forward(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Adaptive average pooling of x (N, C, L) to out (N, C, OL).

    >>> adaptive_avg_pool1d_forward(np.array([[[1.0, 2.0, 3.0]]]), np.empty((1, 1, 2)))
    array([[[1.5, 2.5]]])
    """
    op = "adaptive_avg_pool1d_forward"
    adaptive_avg_pool2d_forward(as_2d(op, "x", x), as_2d(op, "out", out))
    return out


def adaptive_avg_pool1d_backward(grad_out: np.ndarray, grad_in: np.ndarray) -> np.ndarray:
    """Input gradient of :func:`adaptive_avg_pool1d_forward`, overwriting grad_in.

    >>> adaptive_avg_pool1d_backward(np.array([[[2.0, 4.0]]]), np.empty((1, 1, 3)))
    array([[[1., 3., 2.]]])
    """
    op = "adaptive_avg_pool1d_backward"
    adaptive_avg_pool2d_backward(as_2d(op, "grad_out", grad_out), as_2d(op, "grad_in", grad_in))
    return grad_in
