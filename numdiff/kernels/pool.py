"""Pooling kernels (CPU, Numba): max/avg pooling (1-d and 2-d), adaptive avg/max, and backward.

Every kernel works on planes: an (N, C, H, W) array is N*C independent (H, W) planes, and
pooling is memory-bound, so each kernel is a ``prange`` over planes with the whole plane's
work done by one thread (a 32x32 plane and its gradient stay in L1). 1-d pooling is 2-d pooling
with H = 1 (the 1-d entry points reshape, no copy).

Window of output (oh, ow): input rows ``oh*sh - ph + i*dh`` for i < KH and columns
``ow*sw - pw + j*dw`` for j < KW, clipped to the image; the valid tap range of each output row
and column is computed once so the inner loops carry no bounds checks.

Max pooling follows PyTorch exactly: windows are scanned row-major; a value replaces the
running maximum when it is strictly greater (so ties keep the first maximum) or when it is NaN
(so a NaN propagates, and with several NaNs the index is the last one scanned). The starting
index is the window's first tap at a non-negative row and column, which is what an all
``-inf`` window reports (and, as in PyTorch, a position past the image for a window whose
taps all miss it; such an output is ``-inf`` and receives no gradient).
Indices are flat positions ``h*W + w`` in the input plane (PyTorch's ``return_indices``).
Backward is a scatter-add of the output gradient at those indices (:func:`max_pool_backward`)
and the scatter's own backward is a gather at the same indices (:func:`max_pool_gather`),
which is what double backward needs.

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
from numba import njit, prange

from numdiff.kernels._checks import (
    check_float_arrays,
    check_index_array,
    check_non_negative,
    check_positive,
    check_shape,
)
from numdiff.kernels._im2col import valid_out_range

__all__ = [
    "pool_output_size",
    "max_pool2d_forward",
    "max_pool1d_forward",
    "adaptive_max_pool2d_forward",
    "max_pool_backward",
    "max_pool_gather",
    "avg_pool2d_forward",
    "avg_pool2d_backward",
    "avg_pool1d_forward",
    "avg_pool1d_backward",
    "adaptive_avg_pool2d_forward",
    "adaptive_avg_pool2d_backward",
    "adaptive_avg_pool1d_forward",
    "adaptive_avg_pool1d_backward",
]


def pool_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool
) -> int:
    """Pooled length along one axis (PyTorch's rule: with ceil_mode, a last window that would
    start in the right padding is dropped).

    >>> pool_output_size(5, 2, 2, 0, 1, False), pool_output_size(5, 2, 2, 0, 1, True)
    (2, 3)
    """
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


# --------------------------------------------------------------------------- compiled cores


@njit(cache=True, nogil=True, inline="always")
def _tap_range(start, dilation, taps, size):
    """Taps t in [lo, hi) of a window starting at ``start`` with ``0 <= start + t*dilation < size``."""
    lo = 0 if start >= 0 else (-start + dilation - 1) // dilation
    hi = (size - 1 - start) // dilation + 1 if size - 1 - start >= 0 else 0
    hi = min(hi, taps)
    return lo, max(lo, hi)


@njit(cache=True, nogil=True)
def _first_columns(ow_size, sw, pw, kw, dw, width):
    """Per output column: first non-negative input column of its window (which is past the
    image when every tap falls outside it: PyTorch reports that position too)."""
    first = np.empty(ow_size, np.int64)
    for ow in range(ow_size):
        w0 = ow * sw - pw
        j_lo, _ = _tap_range(w0, dw, kw, width)
        first[ow] = w0 + j_lo * dw
    return first


@njit(cache=True, nogil=True)
def _column_taps(kw, dw, sw, pw, width, ow_size):
    """Per tap column j: the output range [lo, hi) whose tap j is inside the image.
    Computed once per call so that the per-row loops carry no range arithmetic."""
    lo = np.empty(kw, np.int64)
    hi = np.empty(kw, np.int64)
    for j in range(kw):
        lo[j], hi[j] = valid_out_range(j * dw - pw, sw, width, ow_size)
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def _deinterleave(xf, row_base, width, sw, plen, phases):
    """phases[r*plen + m] = row[m*sw + r]: tap j's elements for consecutive outputs become
    contiguous (``row[ow*sw + off]`` is ``phases[(off % sw)*plen + off // sw + ow]``)."""
    for r in range(sw):
        for m in range((width - r + sw - 1) // sw):
            phases[r * plen + m] = xf[row_base + m * sw + r]


@njit(cache=True, nogil=True, parallel=True)
def _max_pool_core(x3, out3, idx3, kh, kw, sh, sw, ph, pw, dh, dw):
    """Per output row: for each tap (i, j) in window order, sweep the whole output row with a
    compare-and-select on contiguous data (each input row is first split into its ``sw``
    stride phases). Written per output element, the compare branched and mispredicted on
    random data (3x slower); swept over contiguous data it becomes SIMD blends.
    """
    n_planes, height, width = x3.shape
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    neg_inf = x3.dtype.type(-np.inf)
    first_w = _first_columns(ow_size, sw, pw, kw, dw, width)
    j_lo, j_hi = _column_taps(kw, dw, sw, pw, width, ow_size)
    # Flat views and unsigned offsets in the inner loop: Numba's negative-index handling on
    # signed indices blocks vectorisation.
    xf = x3.reshape(-1)
    bestf = out3.reshape(-1)
    atf = idx3.reshape(-1)
    plen = (width + sw - 1) // sw
    for p in prange(n_planes):
        phases = np.empty(sw * plen, x3.dtype)
        for oh in range(oh_size):
            o_base = (p * oh_size + oh) * ow_size
            h0 = oh * sh - ph
            i_lo, i_hi = _tap_range(h0, dh, kh, height)
            row0 = (h0 + i_lo * dh) * width
            for ow in range(ow_size):
                bestf[o_base + ow] = neg_inf
                atf[o_base + ow] = row0 + first_w[ow]
            for i in range(i_lo, i_hi):
                ih = h0 + i * dh
                _deinterleave(xf, (p * height + ih) * width, width, sw, plen, phases)
                for j in range(kw):
                    off = j * dw - pw
                    lo = j_lo[j]
                    src = np.uint64((off % sw) * plen + off // sw + lo)
                    dst = np.uint64(o_base + lo)
                    pos0 = ih * width + lo * sw + off
                    for k in range(np.uint64(j_hi[j] - lo)):
                        v = phases[src + k]
                        b = bestf[dst + k]
                        b_at = atf[dst + k]
                        take = (v > b) | (v != v)
                        bestf[dst + k] = v if take else b
                        atf[dst + k] = pos0 + np.int64(k) * sw if take else b_at


@njit(cache=True, nogil=True, parallel=True)
def _adaptive_max_core(x3, out3, idx3):
    height, width = x3.shape[1], x3.shape[2]
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    neg_inf = x3.dtype.type(-np.inf)
    for p in prange(x3.shape[0]):
        plane = x3[p]
        for oh in range(oh_size):
            h0 = (oh * height) // oh_size
            h1 = ((oh + 1) * height + oh_size - 1) // oh_size
            for ow in range(ow_size):
                w0 = (ow * width) // ow_size
                w1 = ((ow + 1) * width + ow_size - 1) // ow_size
                best = neg_inf
                best_at = h0 * width + w0
                for ih in range(h0, h1):
                    for iw in range(w0, w1):
                        v = plane[ih, iw]
                        if v > best or v != v:
                            best = v
                            best_at = ih * width + iw
                out3[p, oh, ow] = best
                idx3[p, oh, ow] = best_at


@njit(cache=True, nogil=True, parallel=True)
def _scatter_core(go2, idx2, gi2):
    plane_size = gi2.shape[1]
    for p in prange(go2.shape[0]):
        dst = gi2[p]
        dst[:] = 0
        for o in range(go2.shape[1]):
            at = idx2[p, o]
            if 0 <= at < plane_size:
                dst[at] += go2[p, o]


@njit(cache=True, nogil=True, parallel=True)
def _gather_core(src2, idx2, out2):
    plane_size = src2.shape[1]
    for p in prange(out2.shape[0]):
        for o in range(out2.shape[1]):
            at = idx2[p, o]
            out2[p, o] = src2[p, at] if 0 <= at < plane_size else 0


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


@njit(cache=True, nogil=True, parallel=True)
def _avg_pool_core(x3, out3, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, backward):
    """forward: out3 <- avg(x3); backward: x3 <- spread(out3) (x3 is then the gradient).

    Per output row, per in-image tap (i, j): one strided sweep over the output row between
    the precomputed column range of tap j (no data-dependent branches, so no phase split is
    needed: it measured slower here). Forward sums accumulate in float64.
    """
    n_planes, height, width = x3.shape
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    counts = _avg_counts(oh_size, ow_size, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor)
    j_lo, j_hi = _column_taps(kw, 1, sw, pw, width, ow_size)
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
            i_lo, i_hi = _tap_range(h0, 1, kh, height)
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


@njit(cache=True, nogil=True, parallel=True)
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


# --------------------------------------------------------------------------- argument checks


def _ints(op: str, name: str, value, n: int) -> tuple[int, ...]:
    values = tuple(int(v) for v in value)
    if len(values) != n:
        raise ValueError(f"{op}: {name} must have {n} ints, got {value!r}")
    return values


def _check_window(op, x, out, kernel, stride, padding, dilation, ceil_mode):
    """Validate a pooling window against x (N, C, H, W) and out (N, C, OH, OW)."""
    kh, kw = _ints(op, "kernel_size", kernel, 2)
    sh, sw = _ints(op, "stride", stride, 2)
    ph, pw = _ints(op, "padding", padding, 2)
    dh, dw = _ints(op, "dilation", dilation, 2)
    check_positive(op, kernel_h=kh, kernel_w=kw, stride_h=sh, stride_w=sw, dilation_h=dh, dilation_w=dw)
    check_non_negative(op, padding_h=ph, padding_w=pw)
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


def _planes(a: np.ndarray) -> np.ndarray:
    return a.reshape(a.shape[0] * a.shape[1], a.shape[2], a.shape[3])


def _flat_planes(a: np.ndarray) -> np.ndarray:
    return a.reshape(a.shape[0] * a.shape[1], -1)


def _as_2d(op: str, name: str, a: np.ndarray) -> np.ndarray:
    if a.ndim != 3:
        raise ValueError(f"{op}: {name} must be 3-D (N, C, L), got shape {a.shape}")
    return a.reshape(a.shape[0], a.shape[1], 1, a.shape[2])


# --------------------------------------------------------------------------- max pooling


def max_pool2d_forward(
    x: np.ndarray,
    out: np.ndarray,
    indices: np.ndarray,
    kernel_size: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int] = (0, 0),
    dilation: tuple[int, int] = (1, 1),
    ceil_mode: bool = False,
) -> np.ndarray:
    """``out[n, c, oh, ow] = max`` over the window; ``indices`` gets the flat argmax ``h*W + w``.

    Shapes: x (N, C, H, W); out and indices (int64) (N, C, OH, OW) with OH, OW from
    :func:`pool_output_size`. Loop nest: prange over N*C planes; for oh; for ow; for window tap.
    Extra memory: none.

    >>> x = np.arange(16.0).reshape(1, 1, 4, 4)
    >>> out, idx = np.empty((1, 1, 2, 2)), np.empty((1, 1, 2, 2), np.int64)
    >>> max_pool2d_forward(x, out, idx, (2, 2), (2, 2))[0, 0], idx[0, 0]
    (array([[ 5.,  7.],
           [13., 15.]]), array([[ 5,  7],
           [13, 15]]))
    """
    op = "max_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    check_index_array(op, "indices", indices)
    kh, kw, sh, sw, ph, pw, dh, dw = _check_window(
        op, x, out, kernel_size, stride, padding, dilation, ceil_mode
    )
    check_shape(op, "indices", indices, out.shape)
    _max_pool_core(_planes(x), _planes(out), _planes(indices), kh, kw, sh, sw, ph, pw, dh, dw)
    return out


def max_pool1d_forward(
    x: np.ndarray,
    out: np.ndarray,
    indices: np.ndarray,
    kernel_size: int,
    stride: int,
    padding: int = 0,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> np.ndarray:
    """1-d max pooling as 2-d with H = 1: x (N, C, L), out and indices (N, C, OL).

    >>> out, idx = np.empty((1, 1, 2)), np.empty((1, 1, 2), np.int64)
    >>> _ = max_pool1d_forward(np.array([[[1.0, 3.0, 2.0, 0.0]]]), out, idx, 2, 2); idx
    array([[[1, 2]]])
    """
    op = "max_pool1d_forward"
    max_pool2d_forward(
        _as_2d(op, "x", x),
        _as_2d(op, "out", out),
        _as_2d(op, "indices", indices),
        (1, kernel_size),
        (1, stride),
        (0, padding),
        (1, dilation),
        ceil_mode,
    )
    return out


def adaptive_max_pool2d_forward(x: np.ndarray, out: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Adaptive max pooling of x (N, C, H, W) to out (N, C, OH, OW), argmax into indices.

    Loop nest: prange over planes; for oh; for ow; for window element.

    >>> out, idx = np.empty((1, 1, 1, 2)), np.empty((1, 1, 1, 2), np.int64)
    >>> _ = adaptive_max_pool2d_forward(np.arange(6.0).reshape(1, 1, 2, 3), out, idx); idx
    array([[[[4, 5]]]])
    """
    op = "adaptive_max_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    check_index_array(op, "indices", indices)
    _check_adaptive(op, x, out)
    check_shape(op, "indices", indices, out.shape)
    _adaptive_max_core(_planes(x), _planes(out), _planes(indices))
    return out


def max_pool_backward(grad_out: np.ndarray, indices: np.ndarray, grad_in: np.ndarray) -> np.ndarray:
    """Scatter-add: ``grad_in[n, c].flat[indices[n, c, o]] += grad_out[n, c, o]``, grad_in zeroed
    first. Serves max_pool1d/2d and adaptive_max_pool2d (any trailing dims).

    Shapes: grad_out and indices (N, C, ...out), grad_in (N, C, ...in). Loop nest: prange over
    planes; zero the plane; for output element. An index outside the plane (the forward
    reports one for a window lying wholly in padding, whose output is a constant -inf) adds
    nothing, as in PyTorch; the bounds check is inside the loop, so it never writes out of
    bounds.

    >>> gi = np.empty((1, 1, 4))
    >>> max_pool_backward(np.ones((1, 1, 2)), np.array([[[1, 1]]]), gi)
    array([[[0., 2., 0., 0.]]])
    """
    op = "max_pool_backward"
    check_float_arrays(op, grad_out=grad_out, grad_in=grad_in)
    _check_index_pair(op, grad_out, indices, grad_in)
    _scatter_core(_flat_planes(grad_out), _flat_planes(indices), _flat_planes(grad_in))
    return grad_in


def max_pool_gather(src: np.ndarray, indices: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Gather: ``out[n, c, o] = src[n, c].flat[indices[n, c, o]]`` -- the backward of
    :func:`max_pool_backward` (and so the second derivative of max pooling).

    Shapes: src (N, C, ...in), indices and out (N, C, ...out). Loop nest: prange over planes;
    for output element. An index outside the plane gathers 0.

    >>> max_pool_gather(np.array([[[5.0, 6.0, 7.0]]]), np.array([[[2, 0]]]), np.empty((1, 1, 2)))
    array([[[7., 5.]]])
    """
    op = "max_pool_gather"
    check_float_arrays(op, src=src, out=out)
    _check_index_pair(op, out, indices, src)
    _gather_core(_flat_planes(src), _flat_planes(indices), _flat_planes(out))
    return out


def _check_index_pair(op, small, indices, big):
    check_index_array(op, "indices", indices)
    if small.ndim < 2 or big.ndim != small.ndim or big.shape[:2] != small.shape[:2]:
        raise ValueError(
            f"{op}: arrays must share leading (N, C) dims and ndim, got {small.shape} and {big.shape}"
        )
    check_shape(op, "indices", indices, small.shape)


# --------------------------------------------------------------------------- average pooling


def _avg_args(op, x, out, kernel_size, stride, padding, ceil_mode, divisor_override):
    kh, kw, sh, sw, ph, pw, _, _ = _check_window(op, x, out, kernel_size, stride, padding, (1, 1), ceil_mode)
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
    _avg_pool_core(_planes(x), _planes(out), kh, kw, sh, sw, ph, pw, bool(count_include_pad), divisor, False)
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
    _avg_pool_core(
        _planes(grad_in), _planes(grad_out), kh, kw, sh, sw, ph, pw, bool(count_include_pad), divisor, True
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
        _as_2d(op, "x", x),
        _as_2d(op, "out", out),
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
        _as_2d(op, "grad_out", grad_out),
        _as_2d(op, "grad_in", grad_in),
        (1, kernel_size),
        (1, stride),
        (0, padding),
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
    return grad_in


# --------------------------------------------------------------------------- adaptive average


def _check_adaptive(op: str, x: np.ndarray, out: np.ndarray) -> None:
    if x.ndim != 4 or out.ndim != 4 or x.shape[:2] != out.shape[:2]:
        raise ValueError(
            f"{op}: input and output must be 4-D with equal (N, C), got {x.shape} and {out.shape}"
        )
    if min(out.shape[2:]) < 1 or min(x.shape[2:]) < 1:
        raise ValueError(f"{op}: spatial sizes must be positive, got input {x.shape} and output {out.shape}")


def adaptive_avg_pool2d_forward(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Adaptive average pooling of x (N, C, H, W) to out (N, C, OH, OW).

    Loop nest: prange over planes; for oh; for ow; for window element (float64 sum).

    >>> adaptive_avg_pool2d_forward(np.arange(6.0).reshape(1, 1, 2, 3), np.empty((1, 1, 1, 1)))
    array([[[[2.5]]]])
    """
    op = "adaptive_avg_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    _check_adaptive(op, x, out)
    _adaptive_avg_core(_planes(x), _planes(out), False)
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
    _check_adaptive(op, grad_in, grad_out)
    _adaptive_avg_core(_planes(grad_in), _planes(grad_out), True)
    return grad_in


def adaptive_avg_pool1d_forward(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Adaptive average pooling of x (N, C, L) to out (N, C, OL).

    >>> adaptive_avg_pool1d_forward(np.array([[[1.0, 2.0, 3.0]]]), np.empty((1, 1, 2)))
    array([[[1.5, 2.5]]])
    """
    op = "adaptive_avg_pool1d_forward"
    adaptive_avg_pool2d_forward(_as_2d(op, "x", x), _as_2d(op, "out", out))
    return out


def adaptive_avg_pool1d_backward(grad_out: np.ndarray, grad_in: np.ndarray) -> np.ndarray:
    """Input gradient of :func:`adaptive_avg_pool1d_forward`, overwriting grad_in.

    >>> adaptive_avg_pool1d_backward(np.array([[[2.0, 4.0]]]), np.empty((1, 1, 3)))
    array([[[1., 3., 2.]]])
    """
    op = "adaptive_avg_pool1d_backward"
    adaptive_avg_pool2d_backward(_as_2d(op, "grad_out", grad_out), _as_2d(op, "grad_in", grad_in))
    return grad_in
