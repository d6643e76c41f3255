"""Transposing copies of strided views into new C-contiguous arrays, split over numdiff's threads (CPU, Numba).

``x.permute(...).contiguous()``, ``x.t().contiguous()`` and ``clone()`` of a transposed view copy a
view whose rows are not contiguous into a row-major array. NumPy's copy runs on the calling
thread, so at ``numdiff.set_num_threads(2)`` such a copy kept one core idle while PyTorch's split
over both (measured, thread CPU time, load 13, busiest thread over PyTorch's at one / two threads:
(64,128,256) permuted (0,2,1) 1.09 / 2.00, (32,64,16,16) to NHWC 0.82 / 1.26, (512,512).T 2.72 /
2.54), and it reads the source a whole strided column after another.

:func:`contiguous_copy` runs numdiff.kernels._layout_copy_rows's parallel build, in tiles, at two or more threads
on float32 and float64 views of at least :data:`SPLIT_MIN_ELEMENTS` elements whose dimensions
coalesce (:func:`_coalesced`) into at most four with a last one that is not unit stride, and whose
last two cover :data:`TRANSPOSE_MIN_PLANE` elements. Measured (two threads, float32, load 18,
busiest thread over NumPy's copy, medians of 15 x 10 calls): (1024,1024).T 0.13, (256,256).T 0.38,
(4,256,256) permuted (0,2,1) 0.22, (16,128,256) 0.30, (64,128,256) 0.51-0.61, (8,64,64,64) to
NHWC 0.20, to (0,3,1,2) 0.54, (32,64,16,16) to NHWC 0.46 (1.64 in a run at load 20). Left to
NumPy: copies of contiguous rows, which the split did not speed up (a (8,16,16,16,16) permuted
(0,2,1,3,4): 1.25), and transposes of small planes ((16,64,64) and (64,64,64) permuted (0,2,1):
1.5-1.6; a 64x64 plane fits the L1 cache, where NumPy's order loses nothing). Everything else
(one thread, a smaller view, another dtype, more dimensions, a negative stride, a device array)
is NumPy's copy, as before. A copy moves values without arithmetic, so the result is bit for bit
NumPy's whatever the thread count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff._threads import get_num_threads
from numdiff.backend import is_host

_rows = lazy_module("numdiff.kernels._layout_copy_rows")  # Numba loads with the first split copy

__all__ = ["SPLIT_MIN_ELEMENTS", "TRANSPOSE_MIN_PLANE", "contiguous", "contiguous_copy", "reshaped"]

SPLIT_MIN_ELEMENTS = 1 << 16
"""Elements from which a copy is split over the threads (PyTorch's grain is 32,768)."""
TRANSPOSE_MIN_PLANE = 1 << 14
"""Fewest elements in the coalesced view's last two dimensions (one transposed plane) for the split."""

_RANK = 4
_SPLIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _coalesced(x: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    """``(shape, strides, span)``: a 4-D view of x's elements in x's row-major order, strides in
    elements, and the elements from x's first to its last (dimensions of length 1 dropped,
    neighbours merged where the outer one steps over the inner one whole, padded in front with
    length-1 dimensions). None when more than four remain or a stride is negative or not a whole
    number of elements."""
    shape: list[int] = []
    strides: list[int] = []
    span = 1
    for length, stride in zip(x.shape, x.strides):
        if length == 1:
            continue
        step, rest = divmod(stride, x.itemsize)
        if step < 0 or rest:
            return None
        span += (length - 1) * step
        if shape and strides[-1] == step * length:
            shape[-1] *= length
            strides[-1] = step
        else:
            shape.append(length)
            strides.append(step)
    if len(shape) > _RANK:
        return None
    pad = _RANK - len(shape)
    return (1,) * pad + tuple(shape), (0,) * pad + tuple(strides), span


def contiguous_copy(x: Any) -> Any:
    """A new C-contiguous array with x's shape and values (``x.copy()``; a device array's own
    copy), split over numdiff's threads for the transposing copies the module docstring names.

    >>> contiguous_copy(np.arange(6.0).reshape(2, 3).T).tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    """
    if not is_host(x) or x.size < SPLIT_MIN_ELEMENTS or x.dtype not in _SPLIT_DTYPES:
        return x.copy()
    parts = get_num_threads()
    view = _coalesced(x) if parts > 1 else None
    if view is None:
        return x.copy()
    shape, strides, span = view
    if strides[3] == 1 or shape[2] * shape[3] < TRANSPOSE_MIN_PLANE:
        return x.copy()
    out = np.empty(x.shape, x.dtype)
    # x's elements as one flat read-only array from its first element (every stride is >= 0).
    flat = np.lib.stride_tricks.as_strided(x, (span,), (x.itemsize,), writeable=False)
    _rows.copy_rows(flat, shape, strides, out.reshape(-1), parts)
    return out


def contiguous(x: Any) -> Any:
    """x itself where it is C-contiguous, else :func:`contiguous_copy` of it
    (``np.ascontiguousarray``, split over the threads where it pays).

    >>> a = np.zeros((2, 3)); contiguous(a) is a, contiguous(a.T).flags.c_contiguous
    (True, True)
    """
    if not is_host(x):
        return np.ascontiguousarray(x, like=x)
    return x if x.flags.c_contiguous else contiguous_copy(x)


def reshaped(x: Any, shape: tuple[int, ...]) -> Any:
    """``x.reshape(shape)``: a view where NumPy gives one, else :func:`contiguous_copy` of x reshaped
    (the copy NumPy would make, split over the threads where it pays).

    >>> reshaped(np.arange(6.0).reshape(2, 3).T, (6,)).tolist()
    [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    """
    if not is_host(x) or x.size < SPLIT_MIN_ELEMENTS or x.flags.c_contiguous or get_num_threads() < 2:
        return x.reshape(shape)  # at one thread without the failed view's exception (2-3 us a call)
    try:
        return x.reshape(shape, copy=False)
    except ValueError:  # no view of x has that shape: NumPy would copy
        return contiguous_copy(x).reshape(shape)
