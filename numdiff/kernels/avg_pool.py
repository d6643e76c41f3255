"""Average-pooling kernels (CPU, Numba): avg_pool2d, adaptive_avg_pool2d, and their backward.

Every kernel works on planes: an (N, C, H, W) array is N*C independent (H, W) planes, pooled
by a ``prange`` over planes (pooling is memory-bound). 1-d pooling is 2-d with H = 1 (the ops
reshape).

Average pooling follows PyTorch's rule for windows that run into padding (including the last
window with ``ceil_mode``): the window end is clipped to ``size + padding`` first and its
area there is the ``count_include_pad`` divisor; it is then clipped to the image for summing
and for the ``count_include_pad=False`` divisor; ``divisor_override`` replaces both. A window
with no in-image element outputs 0. The backward spreads each output gradient over the same
window with the same divisor, and is linear, so its own backward is the forward. Windows and
divisors come from :mod:`numdiff._ground.pool_geometry`, which the CUDA kernels share.

Forward and backward are separate compiled functions: the forward only reads its input, so a
read-only array (a NumPy view of a constant, a memory-mapped file) pools without a copy.

Adaptive pooling of ``In`` to ``Out`` uses windows ``[floor(i*In/Out), ceil((i+1)*In/Out))``.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff._ground.pool_geometry import check_adaptive, check_divisor, check_window
from numdiff.kernels._checks import check_disjoint, check_float_arrays
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._pool_compiled import adaptive_window_cpu, avg_divisor_cpu, tap_range_cpu
from numdiff.kernels._pool_planes import column_taps, planes
from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "avg_pool2d_forward",
    "avg_pool2d_backward",
    "adaptive_avg_pool2d_forward",
    "adaptive_avg_pool2d_backward",
]


# --------------------------------------------------------------------------- compiled cores


@njit(cache=True, nogil=True)
def _avg_counts(oh_size, ow_size, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor):
    """(OH, OW) divisor of every window; 0 marks a window with no in-image element."""
    counts = np.empty((oh_size, ow_size), np.float64)
    for oh in range(oh_size):
        for ow in range(ow_size):
            counts[oh, ow] = avg_divisor_cpu(
                oh, ow, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor
            )
    return counts


def _avg_pool_forward_core(x3, out3, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    """out3 <- avg(x3). Per output row, per in-image tap (i, j): one strided sweep over the
    output row between the precomputed column range of tap j (no data-dependent branches, so
    no phase split is needed: it measured slower here). Sums accumulate in float64.
    """
    n_planes, height, width = x3.shape
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    counts = _avg_counts(oh_size, ow_size, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor)
    j0, j_lo, j_hi = column_taps(kw, 1, sw, pw, width, ow_size)
    # Flat views and unsigned offsets in the inner loop: Numba's negative-index handling on
    # signed indices blocks vectorisation.
    xf = x3.reshape(-1)
    of = out3.reshape(-1)
    ustride = np.uint64(sw)
    for p in prange(n_planes):
        row = np.empty(ow_size, np.float64)
        for oh in range(oh_size):
            o_base = np.uint64((p * oh_size + oh) * ow_size)
            h0 = oh * sh - ph
            i_lo, i_hi = tap_range_cpu(h0, 1, kh, height)
            row[:] = 0.0
            for i in range(i_lo, i_hi):
                row_base = (p * height + h0 + i) * width
                for t in range(j_lo.size):
                    lo = j_lo[t]
                    at = np.uint64(row_base + lo * sw + j0 + t - pw)
                    ulo = np.uint64(lo)
                    for k in range(np.uint64(j_hi[t] - lo)):
                        row[ulo + k] += xf[at + k * ustride]
            for ow in range(np.uint64(ow_size)):
                cnt = counts[oh, ow]
                of[o_base + ow] = row[ow] / cnt if cnt != 0 else 0.0


def _avg_pool_backward_core(gi3, go3, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    """gi3 <- spread(go3): the forward's loop nest with the roles of the sweep swapped."""
    n_planes, height, width = gi3.shape
    oh_size, ow_size = go3.shape[1], go3.shape[2]
    counts = _avg_counts(oh_size, ow_size, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor)
    j0, j_lo, j_hi = column_taps(kw, 1, sw, pw, width, ow_size)
    gif = gi3.reshape(-1)
    gof = go3.reshape(-1)
    ustride = np.uint64(sw)
    for p in prange(n_planes):
        row = np.empty(ow_size, np.float64)
        gif[p * height * width : (p + 1) * height * width] = 0
        for oh in range(oh_size):
            o_base = np.uint64((p * oh_size + oh) * ow_size)
            h0 = oh * sh - ph
            i_lo, i_hi = tap_range_cpu(h0, 1, kh, height)
            for ow in range(np.uint64(ow_size)):
                cnt = counts[oh, ow]
                row[ow] = gof[o_base + ow] / cnt if cnt != 0 else 0.0
            for i in range(i_lo, i_hi):
                row_base = (p * height + h0 + i) * width
                for t in range(j_lo.size):
                    lo = j_lo[t]
                    at = np.uint64(row_base + lo * sw + j0 + t - pw)
                    ulo = np.uint64(lo)
                    for k in range(np.uint64(j_hi[t] - lo)):
                        gif[at + k * ustride] += row[ulo + k]


def _adaptive_avg_forward_core(x3, out3):
    height, width = x3.shape[1], x3.shape[2]
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    for p in prange(x3.shape[0]):
        plane = x3[p]
        for oh in range(oh_size):
            h0, h1 = adaptive_window_cpu(oh, height, oh_size)
            for ow in range(ow_size):
                w0, w1 = adaptive_window_cpu(ow, width, ow_size)
                total = 0.0
                for ih in range(h0, h1):
                    for iw in range(w0, w1):
                        total += plane[ih, iw]
                out3[p, oh, ow] = total / ((h1 - h0) * (w1 - w0))


def _adaptive_avg_backward_core(gi3, go3):
    height, width = gi3.shape[1], gi3.shape[2]
    oh_size, ow_size = go3.shape[1], go3.shape[2]
    for p in prange(gi3.shape[0]):
        plane = gi3[p]
        plane[:, :] = 0
        for oh in range(oh_size):
            h0, h1 = adaptive_window_cpu(oh, height, oh_size)
            for ow in range(ow_size):
                w0, w1 = adaptive_window_cpu(ow, width, ow_size)
                share = go3[p, oh, ow] / ((h1 - h0) * (w1 - w0))
                for ih in range(h0, h1):
                    for iw in range(w0, w1):
                        plane[ih, iw] += share


# --------------------------------------------------------------------------- average pooling


# Each core as a serial and a parallel build, picked per call by size (numdiff.kernels._parallel).
_avg_pool_forward_core = serial_and_parallel(_avg_pool_forward_core, nogil=True)
_avg_pool_backward_core = serial_and_parallel(_avg_pool_backward_core, nogil=True)
_adaptive_avg_forward_core = serial_and_parallel(_adaptive_avg_forward_core, nogil=True)
_adaptive_avg_backward_core = serial_and_parallel(_adaptive_avg_backward_core, nogil=True)


def _avg_args(op, x, out, kernel_size, stride, padding, ceil_mode, divisor_override):
    kh, kw, sh, sw, ph, pw, _, _ = check_window(
        op, x.shape, out.shape, kernel_size, stride, padding, (1, 1), ceil_mode
    )
    return kh, kw, sh, sw, ph, pw, check_divisor(op, divisor_override)


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
    check_disjoint(op, {"out": out}, {"x": x})
    _avg_pool_forward_core.pick(x.size)[0](
        planes(x), planes(out), kh, kw, sh, sw, ph, pw, bool(count_include_pad), divisor
    )
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
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out})
    _avg_pool_backward_core.pick(grad_in.size)[0](
        planes(grad_in), planes(grad_out), kh, kw, sh, sw, ph, pw, bool(count_include_pad), divisor
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
    check_adaptive(op, x.shape, out.shape)
    check_disjoint(op, {"out": out}, {"x": x})
    _adaptive_avg_forward_core.pick(x.size)[0](planes(x), planes(out))
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
    check_adaptive(op, grad_in.shape, grad_out.shape)
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out})
    _adaptive_avg_backward_core.pick(grad_in.size)[0](planes(grad_in), planes(grad_out))
    return grad_in
