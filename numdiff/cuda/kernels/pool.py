"""Max-pooling CUDA kernels with the CPU kernels' conventions (numdiff.kernels.pool).

One thread per output element, grid-stride over N*C*OH*OW. The window of output (oh, ow) reads
input rows ``oh*sh - ph + i*dh`` and columns ``ow*sw - pw + j*dw`` inside the image (the tap
ranges of numdiff._ground.pool_geometry, shared with the CPU), scanned row-major; a value
replaces the running maximum when strictly greater or NaN. The starting index is the window's
first tap at a non-negative row and column, as on the CPU and in PyTorch: for a window wholly in
padding that is a position past the image (its output is -inf and gets no gradient).
Adaptive max pooling scans windows [floor(o*In/Out), ceil((o+1)*In/Out)) the same way. 1-d
pooling is 2-d pooling with H = 1 (numdiff.ops.pool reshapes). Indices are flat ``h*W + w``
positions in the input plane. Backward scatters with atomic adds (overlapping windows share
inputs); its own backward is the gather at the same indices.

This module has the CPU module's names: the average-pooling launchers (numdiff.cuda.kernels.avg_pool)
are re-exported here, so an op picks one module per device and calls the same function names.
"""

from __future__ import annotations

import math

from numba import cuda

from numdiff._ground.pool_geometry import check_adaptive, check_window, pool_output_size
from numdiff.cuda.kernels._checks import (
    check_disjoint,
    check_float_arrays,
    check_index_array,
    check_shape,
    flat,
)
from numdiff.cuda.kernels._index import grid_1d
from numdiff.cuda.kernels._pool_device import adaptive_window, tap_range
from numdiff.cuda.kernels.avg_pool import (
    adaptive_avg_pool2d_backward,
    adaptive_avg_pool2d_forward,
    avg_pool2d_backward,
    avg_pool2d_forward,
)

__all__ = [
    "pool_output_size",
    "max_pool2d_forward",
    "adaptive_max_pool2d_forward",
    "max_pool_backward",
    "max_pool_gather",
    "avg_pool2d_forward",
    "avg_pool2d_backward",
    "adaptive_avg_pool2d_forward",
    "adaptive_avg_pool2d_backward",
]


@cuda.jit
def max_pool2d_kernel(x, out, indices, height, width, oh_size, ow_size, kh, kw, sh, sw, ph, pw, dh, dw, n):
    """out[p, oh, ow] = max over the window of plane p; indices gets h*W + w of that max."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        ow = t % ow_size
        oh = (t // ow_size) % oh_size
        plane = t // (ow_size * oh_size)
        base = plane * height * width
        h0 = oh * sh - ph
        w0 = ow * sw - pw
        i_lo, i_hi = tap_range(h0, dh, kh, height)
        j_lo, j_hi = tap_range(w0, dw, kw, width)
        best = -math.inf
        best_at = (h0 + i_lo * dh) * width + w0 + j_lo * dw
        for i in range(i_lo, i_hi):
            ih = h0 + i * dh
            for j in range(j_lo, j_hi):
                iw = w0 + j * dw
                v = x[base + ih * width + iw]
                if v > best or v != v:
                    best = v
                    best_at = ih * width + iw
        out[t] = best
        indices[t] = best_at


@cuda.jit
def adaptive_max_pool2d_kernel(x, out, indices, height, width, oh_size, ow_size, n):
    """out[p, oh, ow] = max over adaptive window (oh, ow) of plane p; indices gets its h*W + w."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        ow = t % ow_size
        oh = (t // ow_size) % oh_size
        base = (t // (ow_size * oh_size)) * height * width
        h0, h1 = adaptive_window(oh, height, oh_size)
        w0, w1 = adaptive_window(ow, width, ow_size)
        best = -math.inf
        best_at = h0 * width + w0
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                v = x[base + ih * width + iw]
                if v > best or v != v:
                    best = v
                    best_at = ih * width + iw
        out[t] = best
        indices[t] = best_at


@cuda.jit
def scatter_planes_kernel(grad_out, indices, grad_in, out_plane, in_plane, n):
    """grad_in[p, indices[p, o]] += grad_out[p, o] atomically; out-of-plane indices are skipped."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        k = indices[t]
        if 0 <= k < in_plane:
            cuda.atomic.add(grad_in, (t // out_plane) * in_plane + k, grad_out[t])


@cuda.jit
def gather_planes_kernel(src, indices, out, out_plane, in_plane, n):
    """out[p, o] = src[p, indices[p, o]] (0 for an out-of-plane index)."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        k = indices[t]
        out[t] = src[(t // out_plane) * in_plane + k] if 0 <= k < in_plane else 0


def _check_index_pair(op: str, small, indices, big) -> None:
    check_index_array(op, "indices", indices, small)
    if small.ndim < 2 or big.ndim != small.ndim or big.shape[:2] != small.shape[:2]:
        raise ValueError(
            f"{op}: arrays must share leading (N, C) dims and ndim, got {small.shape} and {big.shape}"
        )
    check_shape(op, "indices", indices, small.shape)


def max_pool2d_forward(
    x, out, indices, kernel_size, stride, padding=(0, 0), dilation=(1, 1), ceil_mode=False
):
    """``out[n, c, oh, ow] = max`` over the window; ``indices`` (int64) gets the flat argmax ``h*W + w``.

    Shapes: x (N, C, H, W); out and indices (N, C, OH, OW) with OH, OW from pool_output_size.
    Threads: one per output element (grid-stride).
    """
    op = "max_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    check_index_array(op, "indices", indices, x)
    kh, kw, sh, sw, ph, pw, dh, dw = check_window(
        op, x.shape, out.shape, kernel_size, stride, padding, dilation, ceil_mode
    )
    check_shape(op, "indices", indices, out.shape)
    check_disjoint(op, {"out": out, "indices": indices}, {"x": x})
    height, width = x.shape[2:]
    oh_size, ow_size = out.shape[2:]
    n = out.size
    if n:
        blocks, threads = grid_1d(n)
        max_pool2d_kernel[blocks, threads](
            flat(x),
            flat(out),
            flat(indices),
            height,
            width,
            oh_size,
            ow_size,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            n,
        )
    return out


def adaptive_max_pool2d_forward(x, out, indices):
    """Adaptive max pooling of x (N, C, H, W) to out (N, C, OH, OW), argmax into indices (int64).

    Threads: one per output element (grid-stride).
    """
    op = "adaptive_max_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    check_index_array(op, "indices", indices, x)
    check_adaptive(op, x.shape, out.shape)
    check_shape(op, "indices", indices, out.shape)
    check_disjoint(op, {"out": out, "indices": indices}, {"x": x})
    n = out.size
    if n:
        blocks, threads = grid_1d(n)
        height, width = x.shape[2:]
        adaptive_max_pool2d_kernel[blocks, threads](
            flat(x), flat(out), flat(indices), height, width, out.shape[2], out.shape[3], n
        )
    return out


def max_pool_backward(grad_out, indices, grad_in):
    """grad_in (zeroed here) gets grad_out scatter-added at `indices` within each (n, c) plane.

    Serves max_pool1d/2d and adaptive_max_pool2d (any trailing dims). Threads: one per grad_out
    element, atomic adds; an index outside the plane is skipped (the kernel never writes there).
    """
    op = "max_pool_backward"
    check_float_arrays(op, grad_out=grad_out, grad_in=grad_in)
    _check_index_pair(op, grad_out, indices, grad_in)
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out, "indices": indices})
    grad_in[...] = 0
    n = grad_out.size
    if n:
        out_plane = n // (grad_out.shape[0] * grad_out.shape[1])
        in_plane = grad_in.size // (grad_in.shape[0] * grad_in.shape[1])
        blocks, threads = grid_1d(n)
        scatter_planes_kernel[blocks, threads](
            flat(grad_out), flat(indices), flat(grad_in), out_plane, in_plane, n
        )
    return grad_in


def max_pool_gather(src, indices, out):
    """out[n, c, o] = src[n, c].flat[indices[n, c, o]]: the backward of max_pool_backward.

    Threads: one per output element; an index outside the plane reads as 0.
    """
    op = "max_pool_gather"
    check_float_arrays(op, src=src, out=out)
    _check_index_pair(op, out, indices, src)
    check_disjoint(op, {"out": out}, {"src": src, "indices": indices})
    n = out.size
    if n:
        out_plane = n // (out.shape[0] * out.shape[1])
        in_plane = src.size // (src.shape[0] * src.shape[1])
        blocks, threads = grid_1d(n)
        gather_planes_kernel[blocks, threads](flat(src), flat(indices), flat(out), out_plane, in_plane, n)
    return out
