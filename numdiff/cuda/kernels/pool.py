"""Max-pooling CUDA kernels with the CPU kernels' conventions (numdiff.kernels.pool).

One thread per output element, grid-stride over N*C*OH*OW. The window of output (oh, ow) reads
input rows ``oh*sh - ph + i*dh`` and columns ``ow*sw - pw + j*dw`` inside the image, scanned
row-major; a value replaces the running maximum when strictly greater or NaN, and the starting
index is the window's first in-image element (-1 for a window wholly in padding), as on the CPU.
Indices are flat ``h*W + w`` positions in the input plane. Backward scatters with atomic adds
(overlapping windows share inputs); its own backward is the gather at the same indices.
"""

from __future__ import annotations

import math

from numba import cuda

from numdiff.cuda.kernels._index import grid_1d


@cuda.jit
def max_pool2d_kernel(x, out, indices, height, width, oh_size, ow_size, kh, kw, sh, sw, ph, pw, dh, dw, n):
    """out[p, oh, ow] = max over the window of plane p; indices gets h*W + w of that max."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        ow = t % ow_size
        oh = (t // ow_size) % oh_size
        plane = t // (ow_size * oh_size)
        base = plane * height * width
        best = -math.inf
        best_at = -1
        for i in range(kh):
            ih = oh * sh - ph + i * dh
            if ih < 0 or ih >= height:
                continue
            for j in range(kw):
                iw = ow * sw - pw + j * dw
                if iw < 0 or iw >= width:
                    continue
                v = x[base + ih * width + iw]
                if best_at < 0:
                    best_at = ih * width + iw  # the first in-image element starts the scan
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


def _pair(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


def _flat(a, name: str):
    if not a.flags.c_contiguous:
        raise ValueError(f"max pooling: {name} must be C-contiguous, got strides {a.strides}")
    return a._buffer[a._offset : a._offset + a.size]


def _check(op: str, small, indices, big) -> None:
    if small.ndim < 2 or big.ndim != small.ndim or big.shape[:2] != small.shape[:2]:
        raise ValueError(
            f"{op}: arrays must share leading (N, C) dims and ndim, got {small.shape} and {big.shape}"
        )
    if indices.shape != small.shape or indices.dtype.kind != "i":
        raise ValueError(
            f"{op}: indices must be integer of shape {small.shape}, got {indices.dtype} {indices.shape}"
        )
    if small.dtype != big.dtype or small.dtype.kind != "f":
        raise TypeError(f"{op}: expected one float dtype, got {small.dtype} and {big.dtype}")


def max_pool2d_forward(
    x, out, indices, kernel_size, stride, padding=(0, 0), dilation=(1, 1), ceil_mode=False
):
    """x (N, C, H, W) -> out, indices (N, C, OH, OW); sizes as numdiff.kernels.pool computes them."""
    from numdiff.kernels.pool import pool_output_size

    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    if x.ndim != 4:
        raise ValueError(f"max_pool2d_forward: x must be (N, C, H, W), got shape {x.shape}")
    height, width = x.shape[2:]
    expected = x.shape[:2] + (
        pool_output_size(height, kh, sh, ph, dh, ceil_mode),
        pool_output_size(width, kw, sw, pw, dw, ceil_mode),
    )
    if out.shape != expected or indices.shape != expected or out.dtype != x.dtype:
        raise ValueError(
            f"max_pool2d_forward: out/indices must be {expected} of {x.dtype}, got {out.shape}, {indices.shape}"
        )
    x = x if x.flags.c_contiguous else x.copy()
    n = out.size
    if n:
        blocks, threads = grid_1d(n)
        max_pool2d_kernel[blocks, threads](
            _flat(x, "x"), _flat(out, "out"), _flat(indices, "indices"), height, width,
            expected[2], expected[3], kh, kw, sh, sw, ph, pw, dh, dw, n,
        )  # fmt: skip
    return out


def max_pool_backward(grad_out, indices, grad_in):
    """grad_in (zeroed here) gets grad_out scatter-added at `indices` within each (n, c) plane."""
    _check("max_pool_backward", grad_out, indices, grad_in)
    grad_in[...] = 0
    grad_out = grad_out if grad_out.flags.c_contiguous else grad_out.copy()
    n = grad_out.size
    if n:
        out_plane = n // (grad_out.shape[0] * grad_out.shape[1])
        in_plane = grad_in.size // (grad_in.shape[0] * grad_in.shape[1])
        blocks, threads = grid_1d(n)
        scatter_planes_kernel[blocks, threads](
            _flat(grad_out, "grad_out"),
            _flat(indices, "indices"),
            _flat(grad_in, "grad_in"),
            out_plane,
            in_plane,
            n,
        )
    return grad_in


def max_pool_gather(src, indices, out):
    """out[n, c, o] = src[n, c].flat[indices[n, c, o]]: the backward of max_pool_backward."""
    _check("max_pool_gather", out, indices, src)
    src = src if src.flags.c_contiguous else src.copy()
    n = out.size
    if n:
        out_plane = n // (out.shape[0] * out.shape[1])
        in_plane = src.size // (src.shape[0] * src.shape[1])
        blocks, threads = grid_1d(n)
        gather_planes_kernel[blocks, threads](
            _flat(src, "src"), _flat(indices, "indices"), _flat(out, "out"), out_plane, in_plane, n
        )
    return out
