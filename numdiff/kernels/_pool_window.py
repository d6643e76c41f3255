"""Window arithmetic and argument checks shared by the pooling kernels (pool, avg_pool).

Window of output (oh, ow): input rows ``oh*sh - ph + i*dh`` for i < KH and columns
``ow*sw - pw + j*dw`` for j < KW, clipped to the image. :func:`pool_output_size` is PyTorch's
output length rule; the checks run in Python before any compiled code.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._checks import check_non_negative, check_positive, check_shape
from numdiff.kernels._im2col import valid_out_range
from numdiff.kernels._self_healing_cache import njit


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


@njit(cache=True, nogil=True, inline="always")
def tap_range(start, dilation, taps, size):
    """Taps t in [lo, hi) of a window starting at ``start`` with ``0 <= start + t*dilation < size``."""
    lo = 0 if start >= 0 else (-start + dilation - 1) // dilation
    hi = (size - 1 - start) // dilation + 1 if size - 1 - start >= 0 else 0
    hi = min(hi, taps)
    return lo, max(lo, hi)


@njit(cache=True, nogil=True)
def column_taps(kw, dw, sw, pw, width, ow_size):
    """Per tap column j: the output range [lo, hi) whose tap j is inside the image.
    Computed once per call so that the per-row loops carry no range arithmetic."""
    lo = np.empty(kw, np.int64)
    hi = np.empty(kw, np.int64)
    for j in range(kw):
        lo[j], hi[j] = valid_out_range(j * dw - pw, sw, width, ow_size)
    return lo, hi


def ints(op: str, name: str, value, n: int) -> tuple[int, ...]:
    """`value` as a tuple of exactly n ints."""
    values = tuple(int(v) for v in value)
    if len(values) != n:
        raise ValueError(f"{op}: {name} must have {n} ints, got {value!r}")
    return values


def check_window(op, x, out, kernel, stride, padding, dilation, ceil_mode):
    """Validate a pooling window against x (N, C, H, W) and out (N, C, OH, OW)."""
    kh, kw = ints(op, "kernel_size", kernel, 2)
    sh, sw = ints(op, "stride", stride, 2)
    ph, pw = ints(op, "padding", padding, 2)
    dh, dw = ints(op, "dilation", dilation, 2)
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


def planes(a: np.ndarray) -> np.ndarray:
    """(N, C, H, W) viewed as (N*C, H, W) planes."""
    return a.reshape(a.shape[0] * a.shape[1], a.shape[2], a.shape[3])


def flat_planes(a: np.ndarray) -> np.ndarray:
    """(N, C, ...) viewed as (N*C, prod(...)) flat planes."""
    return a.reshape(a.shape[0] * a.shape[1], -1)


def as_2d(op: str, name: str, a: np.ndarray) -> np.ndarray:
    """A 1-d pooling array (N, C, L) viewed as 2-d (N, C, 1, L)."""
    if a.ndim != 3:
        raise ValueError(f"{op}: {name} must be 3-D (N, C, L), got shape {a.shape}")
    return a.reshape(a.shape[0], a.shape[1], 1, a.shape[2])


def check_adaptive(op: str, x: np.ndarray, out: np.ndarray) -> None:
    """Adaptive pooling: 4-D input and output with equal (N, C) and positive spatial sizes."""
    if x.ndim != 4 or out.ndim != 4 or x.shape[:2] != out.shape[:2]:
        raise ValueError(
            f"{op}: input and output must be 4-D with equal (N, C), got {x.shape} and {out.shape}"
        )
    if min(out.shape[2:]) < 1 or min(x.shape[2:]) < 1:
        raise ValueError(f"{op}: spatial sizes must be positive, got input {x.shape} and output {out.shape}")
