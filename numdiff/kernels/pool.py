"""Max-pooling kernels (CPU, Numba): max_pool2d, adaptive_max_pool2d, and their backward.

Every kernel works on planes: an (N, C, H, W) array is N*C independent (H, W) planes, and
pooling is memory-bound, so each kernel is a ``prange`` over planes with the whole plane's
work done by one thread (a 32x32 plane and its gradient stay in L1). 1-d pooling is 2-d pooling
with H = 1 (numdiff.ops.pool reshapes, no copy).

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

Average and adaptive-average pooling live in :mod:`numdiff.kernels.avg_pool` and are
re-exported here; the window arithmetic and checks, shared with the CUDA kernels, in
:mod:`numdiff.kernels._pool_geometry`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_index_array, check_shape
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._pool_geometry import (
    adaptive_window_cpu,
    check_adaptive,
    check_window,
    pool_output_size,
    tap_range_cpu,
)
from numdiff.kernels._pool_planes import column_taps, flat_planes, planes
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels.avg_pool import (
    adaptive_avg_pool2d_backward,
    adaptive_avg_pool2d_forward,
    avg_pool2d_backward,
    avg_pool2d_forward,
)

__all__ = [
    "pool_output_size",
    "max_pool2d_forward",
    "max_pool2d_plan",
    "adaptive_max_pool2d_forward",
    "max_pool_backward",
    "max_pool_gather",
    "avg_pool2d_forward",
    "avg_pool2d_backward",
    "adaptive_avg_pool2d_forward",
    "adaptive_avg_pool2d_backward",
]


DIRECT_MAX_POOL_WIDTH = 32
"""Planes narrower than this are max-pooled element by element (see _max_pool_direct_core)."""


# --------------------------------------------------------------------------- compiled cores


@njit(cache=True, nogil=True)
def _first_columns(ow_size, sw, pw, kw, dw, width):
    """Per output column: first non-negative input column of its window (which is past the
    image when every tap falls outside it: PyTorch reports that position too)."""
    first = np.empty(ow_size, np.int64)
    for ow in range(ow_size):
        w0 = ow * sw - pw
        j_lo, _ = tap_range_cpu(w0, dw, kw, width)
        first[ow] = w0 + j_lo * dw
    return first


@njit(cache=True, nogil=True, inline="always")
def _deinterleave(xf, row_base, width, sw, plen, phases):
    """phases[r*plen + m] = row[m*sw + r]: tap j's elements for consecutive outputs become
    contiguous (``row[ow*sw + off]`` is ``phases[(off % sw)*plen + off // sw + ow]``). Only
    phases r < width exist: a stride wider than the row has no others."""
    for r in range(min(sw, width)):
        for m in range((width - r + sw - 1) // sw):
            phases[r * plen + m] = xf[row_base + m * sw + r]


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
    j0, j_lo, j_hi = column_taps(kw, dw, sw, pw, width, ow_size)
    # Flat views and unsigned offsets in the inner loop: Numba's negative-index handling on
    # signed indices blocks vectorisation.
    xf = x3.reshape(-1)
    bestf = out3.reshape(-1)
    atf = idx3.reshape(-1)
    plen = (width + sw - 1) // sw
    for p in prange(n_planes):
        phases = np.empty(min(sw, width) * plen, x3.dtype)
        for oh in range(oh_size):
            o_base = (p * oh_size + oh) * ow_size
            h0 = oh * sh - ph
            i_lo, i_hi = tap_range_cpu(h0, dh, kh, height)
            row0 = (h0 + i_lo * dh) * width
            for ow in range(ow_size):
                bestf[o_base + ow] = neg_inf
                atf[o_base + ow] = row0 + first_w[ow]
            for i in range(i_lo, i_hi):
                ih = h0 + i * dh
                _deinterleave(xf, (p * height + ih) * width, width, sw, plen, phases)
                for t in range(j_lo.size):
                    off = (j0 + t) * dw - pw
                    lo = j_lo[t]
                    src = np.uint64((off % sw) * plen + off // sw + lo)
                    dst = np.uint64(o_base + lo)
                    pos0 = ih * width + lo * sw + off
                    for k in range(np.uint64(j_hi[t] - lo)):
                        v = phases[src + k]
                        b = bestf[dst + k]
                        b_at = atf[dst + k]
                        take = (v > b) | (v != v)
                        bestf[dst + k] = v if take else b
                        atf[dst + k] = pos0 + np.int64(k) * sw if take else b_at


@njit(cache=True, nogil=True)
def _window_taps(o_size, stride, pad, kernel, dilation, size):
    """Per output index along one axis: its window start and in-image tap range [lo, hi)."""
    starts = np.empty(o_size, np.int64)
    lo = np.empty(o_size, np.int64)
    hi = np.empty(o_size, np.int64)
    for o in range(o_size):
        starts[o] = o * stride - pad
        lo[o], hi[o] = tap_range_cpu(starts[o], dilation, kernel, size)
    return starts, lo, hi


def _max_pool_direct_core(x3, out3, idx3, kh, kw, sh, sw, ph, pw, dh, dw):
    """Per output element, a compare over its window's in-image taps in window order, with the
    same result and argmax rule as :func:`_max_pool_core`. For narrow planes the row sweep's
    per-row set-up dominates: measured single-threaded, 32x16x8x8 took 65 us here against
    225 us, 32x32x16x16 540 against 1480; at width 32 the sweep wins (2235 against 1595), so
    :func:`max_pool2d_forward` takes this core below :data:`DIRECT_MAX_POOL_WIDTH` columns.
    The tap ranges are worked out once per row and column, before the loop: computed per
    output, their integer divisions took most of the time (32x16x8x8: 100 us, now 25 us)."""
    height, width = x3.shape[1], x3.shape[2]
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    neg_inf = x3.dtype.type(-np.inf)
    # Only the taps inside the image: a window may be 2**31 - 1 taps wide.
    h_start, i_lo, i_hi = _window_taps(oh_size, sh, ph, kh, dh, height)
    w_start, j_lo, j_hi = _window_taps(ow_size, sw, pw, kw, dw, width)
    for p in prange(x3.shape[0]):
        for oh in range(oh_size):
            h0 = h_start[oh]
            for ow in range(ow_size):
                w0 = w_start[ow]
                # The sweep's start: the first tap at a non-negative row and column, which is
                # also the index a window wholly in padding (or all -inf) reports.
                best = neg_inf
                best_at = (h0 + i_lo[oh] * dh) * width + w0 + j_lo[ow] * dw
                for i in range(i_lo[oh], i_hi[oh]):
                    ih = h0 + i * dh
                    for j in range(j_lo[ow], j_hi[ow]):
                        iw = w0 + j * dw
                        v = x3[p, ih, iw]
                        # Selects, not a branch: on random data the branch mispredicts.
                        take = (v > best) | (v != v)
                        best = v if take else best
                        best_at = ih * width + iw if take else best_at
                out3[p, oh, ow] = best
                idx3[p, oh, ow] = best_at


def _max_pool_2x2_core(x3, out3, idx3):
    """MaxPool2d(2)'s window (2x2, stride 2, no padding or dilation, every window inside the
    plane): the four taps read and compared in window order with selects, the same rule as
    :func:`_max_pool_direct_core` (whose -inf start is always replaced by, or equal to, the
    first tap). With no per-output tap ranges or branches the loop over a row vectorises:
    measured single-threaded, 64x6x24x24 took 0.08 against 0.50 ms in the direct core."""
    n_planes, height, width = x3.shape
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    xf = x3.reshape(-1)
    bestf = out3.reshape(-1)
    atf = idx3.reshape(-1)
    for p in prange(n_planes):
        for oh in range(oh_size):
            top = np.uint64((p * height + 2 * oh) * width)
            bottom = top + np.uint64(width)
            o_base = np.uint64((p * oh_size + oh) * ow_size)
            at_top = 2 * oh * width
            at_bottom = at_top + width
            for ow in range(np.uint64(ow_size)):
                col = ow + ow
                best = xf[top + col]
                best_at = at_top + np.int64(col)
                v = xf[top + col + np.uint64(1)]
                take = (v > best) | (v != v)
                best = v if take else best
                best_at = at_top + np.int64(col) + 1 if take else best_at
                v = xf[bottom + col]
                take = (v > best) | (v != v)
                best = v if take else best
                best_at = at_bottom + np.int64(col) if take else best_at
                v = xf[bottom + col + np.uint64(1)]
                take = (v > best) | (v != v)
                best = v if take else best
                best_at = at_bottom + np.int64(col) + 1 if take else best_at
                bestf[o_base + ow] = best
                atf[o_base + ow] = best_at


def _max_pool_inside_core(x3, out3, idx3, kh, kw, sh, sw, dh, dw):
    """:func:`_max_pool_direct_core` for windows that lie wholly inside the image (no padding,
    no ceil_mode overhang), the usual case: no tap ranges, and flat unsigned offsets, which
    spare every load Numba's negative-index handling (32x16x8x8: 48 us against 78)."""
    height, width = x3.shape[1], x3.shape[2]
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    xf = x3.reshape(-1)
    bestf = out3.reshape(-1)
    atf = idx3.reshape(-1)
    plane = height * width
    for p in prange(x3.shape[0]):
        for oh in range(oh_size):
            for ow in range(ow_size):
                first = oh * sh * width + ow * sw
                best = xf[np.uint64(p * plane + first)]
                best_at = first
                for i in range(kh):
                    for j in range(kw):
                        at = first + i * dh * width + j * dw
                        v = xf[np.uint64(p * plane + at)]
                        take = (v > best) | (v != v)
                        best = v if take else best
                        best_at = at if take else best_at
                o = np.uint64((p * oh_size + oh) * ow_size + ow)
                bestf[o] = best
                atf[o] = best_at


def _adaptive_max_core(x3, out3, idx3):
    height, width = x3.shape[1], x3.shape[2]
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    neg_inf = x3.dtype.type(-np.inf)
    for p in prange(x3.shape[0]):
        plane = x3[p]
        for oh in range(oh_size):
            h0, h1 = adaptive_window_cpu(oh, height, oh_size)
            for ow in range(ow_size):
                w0, w1 = adaptive_window_cpu(ow, width, ow_size)
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


def _scatter_core(go2, idx2, gi2):
    plane_size = gi2.shape[1]
    for p in prange(go2.shape[0]):
        dst = gi2[p]
        dst[:] = 0
        for o in range(go2.shape[1]):
            at = idx2[p, o]
            if 0 <= at < plane_size:
                dst[at] += go2[p, o]


def _gather_core(src2, idx2, out2):
    plane_size = src2.shape[1]
    for p in prange(out2.shape[0]):
        for o in range(out2.shape[1]):
            at = idx2[p, o]
            out2[p, o] = src2[p, at] if 0 <= at < plane_size else 0


# Each core as a serial and a parallel build, picked per call by size (numdiff.kernels._parallel).
_max_pool_core = serial_and_parallel(_max_pool_core, nogil=True)
_max_pool_direct_core = serial_and_parallel(_max_pool_direct_core, nogil=True)
_max_pool_2x2_core = serial_and_parallel(_max_pool_2x2_core, nogil=True)
_max_pool_inside_core = serial_and_parallel(_max_pool_inside_core, nogil=True)
_adaptive_max_core = serial_and_parallel(_adaptive_max_core, nogil=True)
_scatter_core = serial_and_parallel(_scatter_core, nogil=True)
_gather_core = serial_and_parallel(_gather_core, nogil=True)


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
    :func:`pool_output_size`. Loop nest: prange over N*C planes; for oh; for ow; for window tap
    (a 2x2 window with stride 2 and no padding, MaxPool2d(2), takes a branch-free core).
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
    core, sizes = max_pool2d_plan(x.shape, out.shape, kernel_size, stride, padding, dilation, ceil_mode)
    check_shape(op, "indices", indices, out.shape)
    check_disjoint(op, {"out": out, "indices": indices}, {"x": x})
    core(planes(x), planes(out), planes(indices), *sizes)
    return out


def max_pool2d_plan(x_shape, out_shape, kernel_size, stride, padding=(0, 0), dilation=(1, 1), ceil_mode=False):
    """What :func:`max_pool2d_forward` runs for these shapes: ``(core, sizes)``, called as
    ``core(x3, out3, indices3, *sizes)`` on the (N*C, H, W) planes of C-contiguous arrays.
    Raises as the kernel does for a bad window. numdiff.compile works this out once per graph.

    >>> core, sizes = max_pool2d_plan((1, 1, 4, 4), (1, 1, 2, 2), (2, 2), (2, 2))
    >>> sizes
    (2, 2, 2, 2, 1, 1)
    """
    kh, kw, sh, sw, ph, pw, dh, dw = check_window(
        "max_pool2d_forward", x_shape, out_shape, kernel_size, stride, padding, dilation, ceil_mode
    )
    work = 1
    for s in x_shape:
        work *= s
    if _is_2x2_tiling(x_shape, out_shape, kh, kw, sh, sw, ph, pw, dh, dw):
        return _max_pool_2x2_core.pick(work)[0], ()
    if x_shape[-1] >= DIRECT_MAX_POOL_WIDTH:
        return _max_pool_core.pick(work)[0], (kh, kw, sh, sw, ph, pw, dh, dw)
    if _windows_inside(x_shape, out_shape, kh, kw, sh, sw, ph, pw, dh, dw):
        return _max_pool_inside_core.pick(work)[0], (kh, kw, sh, sw, dh, dw)
    return _max_pool_direct_core.pick(work)[0], (kh, kw, sh, sw, ph, pw, dh, dw)


def _windows_inside(x_shape, out_shape, kh, kw, sh, sw, ph, pw, dh, dw):
    """Whether every pooling window lies wholly inside the image (no padding taps, none past it)."""
    if ph != 0 or pw != 0 or 0 in out_shape:
        return False
    last_row = (out_shape[2] - 1) * sh + (kh - 1) * dh
    last_col = (out_shape[3] - 1) * sw + (kw - 1) * dw
    return last_row < x_shape[2] and last_col < x_shape[3]


def _is_2x2_tiling(x_shape, out_shape, kh, kw, sh, sw, ph, pw, dh, dw) -> bool:
    """True for MaxPool2d(2)'s geometry with every window inside the input (ceil_mode can add
    a last window that hangs over the edge; that one takes the general cores)."""
    plain = (kh, kw, sh, sw, ph, pw, dh, dw) == (2, 2, 2, 2, 0, 0, 1, 1)
    return plain and 2 * out_shape[-2] <= x_shape[-2] and 2 * out_shape[-1] <= x_shape[-1]


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
    check_adaptive(op, x.shape, out.shape)
    check_shape(op, "indices", indices, out.shape)
    check_disjoint(op, {"out": out, "indices": indices}, {"x": x})
    _adaptive_max_core.pick(x.size)[0](planes(x), planes(out), planes(indices))
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
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out, "indices": indices})
    _scatter_core.pick(grad_in.size)[0](flat_planes(grad_out), flat_planes(indices), flat_planes(grad_in))
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
    check_disjoint(op, {"out": out}, {"src": src, "indices": indices})
    _gather_core.pick(src.size)[0](flat_planes(src), flat_planes(indices), flat_planes(out))
    return out


def _check_index_pair(op, small, indices, big):
    check_index_array(op, "indices", indices)
    if small.ndim < 2 or big.ndim != small.ndim or big.shape[:2] != small.shape[:2]:
        raise ValueError(
            f"{op}: arrays must share leading (N, C) dims and ndim, got {small.shape} and {big.shape}"
        )
    check_shape(op, "indices", indices, small.shape)
