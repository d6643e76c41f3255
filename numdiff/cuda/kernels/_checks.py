"""Argument checks for the CUDA conv and pooling launchers, run in Python before any launch.

A kernel that indexes past a buffer's end corrupts device memory (or faults the context) instead
of raising, so every launcher checks types, dtypes, devices, layout and shapes here first. Errors
name the kernel, the argument and the values involved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.cuda.array import CudaArray

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_float_arrays(op: str, **arrays: Any) -> None:
    """Require C-contiguous float32/float64 CudaArrays of one dtype on one device."""
    first_name, first = None, None
    for name, arr in arrays.items():
        if not isinstance(arr, CudaArray):
            raise TypeError(f"{op}: {name} must be a CUDA array, got {type(arr).__name__}")
        if arr.dtype not in FLOAT_DTYPES:
            raise TypeError(f"{op}: {name} must be float32 or float64, got {arr.dtype}")
        if first is None:
            first_name, first = name, arr
        elif arr.dtype != first.dtype:
            listed = ", ".join(f"{n}={a.dtype}" for n, a in arrays.items())
            raise TypeError(f"{op}: all arrays must share one dtype, got {listed}")
        elif arr.device != first.device:
            raise ValueError(
                f"{op}: {first_name} is on {first.device} but {name} is on {arr.device}; "
                "move them to one device first"
            )
        check_contiguous(op, name, arr)


def check_contiguous(op: str, name: str, arr: CudaArray) -> None:
    if not arr.flags.c_contiguous:
        raise ValueError(
            f"{op}: {name} must be C-contiguous (shape {arr.shape}, strides {arr.strides}); "
            "pass np.ascontiguousarray(...)"
        )


def check_index_array(op: str, name: str, arr: Any, like: CudaArray) -> None:
    """Require a C-contiguous int64 CudaArray on `like`'s device (pooling argmax indices)."""
    if not isinstance(arr, CudaArray) or arr.dtype != np.int64:
        got = arr.dtype if isinstance(arr, CudaArray) else type(arr).__name__
        raise TypeError(f"{op}: {name} must be an int64 CUDA array, got {got}")
    if arr.device != like.device:
        raise ValueError(f"{op}: {name} is on {arr.device} but the data is on {like.device}")
    check_contiguous(op, name, arr)


def check_shape(op: str, name: str, arr: CudaArray, expected: tuple[int, ...]) -> None:
    if tuple(arr.shape) != tuple(expected):
        raise ValueError(f"{op}: {name} must have shape {tuple(expected)}, got {arr.shape}")


def check_disjoint(op: str, written: dict[str, CudaArray], read: dict[str, Any]) -> None:
    """Refuse an output that shares device memory with an input or another output (the kernels
    read while they write): the same check as the CPU kernels', on the buffer ranges the arrays
    span (like np.may_share_memory: strided views that interleave count as overlapping).
    """
    names = list(written)
    for i, name in enumerate(names):
        others = [(n, written[n]) for n in names[i + 1 :]] + list(read.items())
        for other_name, other in others:
            if other is not None and _overlap(written[name], other):
                raise ValueError(
                    f"{op}: {name} {written[name].shape} overlaps {other_name} {other.shape} in memory; "
                    "pass a separate output array"
                )


def _span(a: CudaArray) -> tuple[int, int]:
    """Bytes [lo, hi) of its buffer that a (possibly strided) array can touch."""
    lo = hi = a._offset
    for n, stride in zip(a.shape, a._strides):
        lo += min(0, (n - 1) * stride)
        hi += max(0, (n - 1) * stride)
    return lo * a.itemsize, (hi + 1) * a.itemsize


def _overlap(a: CudaArray, b: CudaArray) -> bool:
    if a._buffer is not b._buffer or a.size == 0 or b.size == 0:
        return False
    (a_lo, a_hi), (b_lo, b_hi) = _span(a), _span(b)
    return a_lo < b_hi and b_lo < a_hi


def flat(arr: CudaArray) -> Any:
    """The 1-D device buffer holding a C-contiguous array's elements, in order."""
    return arr._buffer[arr._offset : arr._offset + arr.size]
