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

This module checks the arguments, picks a core for the geometry (:func:`max_pool2d_plan`) and
calls it; the compiled cores themselves are in :mod:`numdiff.kernels._max_pool_cores`.
Average and adaptive-average pooling live in :mod:`numdiff.kernels.avg_pool` and are
re-exported here; the window arithmetic and checks, shared with the CUDA kernels, in
:mod:`numdiff._ground.pool_geometry`.
"""

from __future__ import annotations

import numpy as np

from numdiff._ground.pool_geometry import check_adaptive, check_window, pool_output_size
from numdiff.kernels import _max_pool_cores as cores
from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_index_array, check_shape
from numdiff.kernels._pool_planes import flat_planes, planes
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
"""Planes narrower than this are max-pooled element by element (see _max_pool_cores.max_pool_direct_core)."""


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

    >>> core, sizes = max_pool2d_plan((1, 1, 4, 4), (1, 1, 3, 3), (2, 2), (1, 1))
    >>> sizes  # kh, kw, sh, sw, dh, dw: every window inside a narrow plane takes the inside core
    (2, 2, 1, 1, 1, 1)
    >>> max_pool2d_plan((1, 1, 4, 4), (1, 1, 2, 2), (2, 2), (2, 2))[1]  # MaxPool2d(2): no sizes
    ()
    """
    kh, kw, sh, sw, ph, pw, dh, dw = check_window(
        "max_pool2d_forward", x_shape, out_shape, kernel_size, stride, padding, dilation, ceil_mode
    )
    work = 1
    for s in x_shape:
        work *= s
    if _is_2x2_tiling(x_shape, out_shape, kh, kw, sh, sw, ph, pw, dh, dw):
        return cores.max_pool_2x2_core.pick(work)[0], ()
    if x_shape[-1] >= DIRECT_MAX_POOL_WIDTH:
        return cores.max_pool_core.pick(work)[0], (kh, kw, sh, sw, ph, pw, dh, dw)
    if _windows_inside(x_shape, out_shape, kh, kw, sh, sw, ph, pw, dh, dw):
        return cores.max_pool_inside_core.pick(work)[0], (kh, kw, sh, sw, dh, dw)
    return cores.max_pool_direct_core.pick(work)[0], (kh, kw, sh, sw, ph, pw, dh, dw)


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
    cores.adaptive_max_core.pick(x.size)[0](planes(x), planes(out), planes(indices))
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
    cores.scatter_core.pick(grad_in.size)[0](flat_planes(grad_out), flat_planes(indices), flat_planes(grad_in))
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
    cores.gather_core.pick(src.size)[0](flat_planes(src), flat_planes(indices), flat_planes(out))
    return out


def _check_index_pair(op, small, indices, big):
    check_index_array(op, "indices", indices)
    if small.ndim < 2 or big.ndim != small.ndim or big.shape[:2] != small.shape[:2]:
        raise ValueError(
            f"{op}: arrays must share leading (N, C) dims and ndim, got {small.shape} and {big.shape}"
        )
    check_shape(op, "indices", indices, small.shape)
