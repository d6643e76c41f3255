"""Compiled cores of the max-pooling kernels; :mod:`numdiff.kernels.pool` checks the arguments,
picks a core for the geometry (``max_pool2d_plan``) and calls these. The window, the argmax rule and
the index convention are described there.

Layouts: ``x3``/``out3``/``idx3`` are the (N*C, H, W) and (N*C, OH, OW) planes of C-contiguous
arrays; the scatter and gather cores take (N*C, plane size) flat planes. Each core is built serial
and parallel (:mod:`numdiff.kernels._parallel`) and loops ``prange`` over planes.

Numba's disk cache keys a core on this file alone, not on the window helpers it inlines
(numdiff/_ground/pool_geometry.py, numdiff/kernels/_pool_compiled.py, _pool_planes.py): after
changing those, clear __pycache__.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._pool_compiled import adaptive_window_cpu, tap_range_cpu
from numdiff.kernels._pool_planes import column_taps
from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "adaptive_max_core",
    "gather_core",
    "max_pool_2x2_core",
    "max_pool_core",
    "max_pool_direct_core",
    "max_pool_inside_core",
    "scatter_core",
]


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


def max_pool_core(x3, out3, idx3, kh, kw, sh, sw, ph, pw, dh, dw):
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


def max_pool_direct_core(x3, out3, idx3, kh, kw, sh, sw, ph, pw, dh, dw):
    """Per output element, a compare over its window's in-image taps in window order, with the
    same result and argmax rule as :func:`max_pool_core`. For narrow planes the row sweep's
    per-row set-up dominates: measured single-threaded, 32x16x8x8 took 65 us here against
    225 us, 32x32x16x16 540 against 1480; at width 32 the sweep wins (2235 against 1595), so
    :func:`numdiff.kernels.pool.max_pool2d_forward` takes this core below
    :data:`numdiff.kernels.pool.DIRECT_MAX_POOL_WIDTH` columns.
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


def max_pool_2x2_core(x3, out3, idx3):
    """MaxPool2d(2)'s window (2x2, stride 2, no padding or dilation, every window inside the
    plane): the four taps read and compared in window order with selects, the same rule as
    :func:`max_pool_direct_core` (whose -inf start is always replaced by, or equal to, the
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


def max_pool_inside_core(x3, out3, idx3, kh, kw, sh, sw, dh, dw):
    """:func:`max_pool_direct_core` for windows that lie wholly inside the image (no padding,
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


def adaptive_max_core(x3, out3, idx3):
    """Per output, a compare over its window in row-major order (the argmax rule of
    :func:`max_pool_core`). Global pooling (a 1x1 output: AdaptiveMaxPool1d(1), AdaptiveMaxPool2d(1))
    scans each plane as one flat run instead: the same order, without the window loops around it
    (measured single-threaded, 8192 planes of 1x100: 1.0 ms against 1.9)."""
    height, width = x3.shape[1], x3.shape[2]
    oh_size, ow_size = out3.shape[1], out3.shape[2]
    neg_inf = x3.dtype.type(-np.inf)
    if oh_size == 1 and ow_size == 1:
        for p in prange(x3.shape[0]):
            best = neg_inf
            best_at = 0
            for ih in range(height):
                for iw in range(width):
                    v = x3[p, ih, iw]
                    if v > best or v != v:
                        best = v
                        best_at = ih * width + iw
            out3[p, 0, 0] = best
            idx3[p, 0, 0] = best_at
        return
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


def scatter_core(go2, idx2, gi2):
    plane_size = gi2.shape[1]
    for p in prange(go2.shape[0]):
        dst = gi2[p]
        dst[:] = 0
        for o in range(go2.shape[1]):
            at = idx2[p, o]
            if 0 <= at < plane_size:
                dst[at] += go2[p, o]


def gather_core(src2, idx2, out2):
    plane_size = src2.shape[1]
    for p in prange(out2.shape[0]):
        for o in range(out2.shape[1]):
            at = idx2[p, o]
            out2[p, o] = src2[p, at] if 0 <= at < plane_size else 0


# Each core as a serial and a parallel build, picked per call by size (numdiff.kernels._parallel).
max_pool_core = serial_and_parallel(max_pool_core, nogil=True)
max_pool_direct_core = serial_and_parallel(max_pool_direct_core, nogil=True)
max_pool_2x2_core = serial_and_parallel(max_pool_2x2_core, nogil=True)
max_pool_inside_core = serial_and_parallel(max_pool_inside_core, nogil=True)
adaptive_max_core = serial_and_parallel(adaptive_max_core, nogil=True)
scatter_core = serial_and_parallel(scatter_core, nogil=True)
gather_core = serial_and_parallel(gather_core, nogil=True)
