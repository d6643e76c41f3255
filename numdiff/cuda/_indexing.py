"""Indexing CudaArrays: basic keys make views, advanced keys gather and scatter through offsets.

For an advanced key, NumPy itself indexes the host grid of buffer offsets (index bookkeeping
only, no data): the result says which elements are read or written, in NumPy's own order and
shape for every mix of ints, slices, None, Ellipsis, integer and bool arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels.elementwise import launch_map
from numdiff.cuda.kernels.indexing import (
    launch_gather_offsets,
    launch_scatter_add_along_axis,
    launch_scatter_offsets,
    launch_take_along_axis,
)


def _normalize(key: Any) -> tuple:
    key = key if isinstance(key, tuple) else (key,)
    parts = []
    for k in key:
        if isinstance(k, CudaArray):
            k = k.to_host()  # an index computed on the device; indices are bookkeeping
        elif isinstance(k, list):
            k = np.asarray(k)
        parts.append(k)
    return tuple(parts)


def _is_basic(key: tuple) -> bool:
    return all(
        k is None
        or k is Ellipsis
        or isinstance(k, slice)
        or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))
        for k in key
    )


def _basic_view(x: CudaArray, key: tuple) -> CudaArray:
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > x.ndim:
        raise IndexError(f"too many indices for array of shape {x.shape}: {used} were indexed")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (x.ndim - used) + key[at + 1 :]
    else:
        key = key + (slice(None),) * (x.ndim - used)
    shape, strides, offset, d = [], [], x._offset, 0
    for k in key:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        n, s = x.shape[d], x._strides[d]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            shape.append(len(range(start, stop, step)))
            strides.append(s * step)
            offset += start * s if shape[-1] else 0
        else:
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {d} with size {n}")
            offset += (int(k) % n) * s
        d += 1
    return x._view(tuple(shape), tuple(strides), offset)


def _offsets(x: CudaArray, key: tuple) -> tuple[Any, tuple]:
    """Device int64 offsets of the elements `key` selects, and the shape they form."""
    selected = x.host_offsets()[key]
    return x._upload_index(np.ascontiguousarray(selected).reshape(-1)), selected.shape


def _selected_shape(x: CudaArray, key: tuple) -> tuple:
    return np.empty(x.shape, dtype=np.bool_)[key].shape


def getitem(x: CudaArray, key: Any) -> CudaArray:
    key = _normalize(key)
    if _is_basic(key):
        return _basic_view(x, key)
    offsets, shape = _offsets(x, key)
    out = CudaArray.empty(shape, x.dtype, x.device)
    launch_gather_offsets(out, x, offsets)
    return out


def _as_values(target: CudaArray, value: Any) -> CudaArray:
    if isinstance(value, CudaArray):
        if value.device != target.device:
            raise ValueError(f"cannot assign an array on {value.device} into one on {target.device}")
        return value if value.dtype == target.dtype else value.astype(target.dtype)
    if isinstance(value, np.ndarray) and value.ndim > 0:
        raise TypeError(
            f"cannot assign a host array of shape {value.shape} into an array on {target.device}; "
            "move it to the device first"
        )
    return target.from_host(np.asarray(value, dtype=target.dtype))


def setitem(x: CudaArray, key: Any, value: Any) -> None:
    scatter(x, key, value, accumulate=False)


_BFLOAT16_BITS = np.dtype("V2")  # numdiff._dtype.BFLOAT16_STORAGE: kernels cannot type opaque items


def _as_bits(array: CudaArray) -> CudaArray:
    """A bfloat16 array's storage as uint16 bit patterns (the same buffer), which kernels copy."""
    return CudaArray(array._buffer.view(np.uint16), array.shape, array._strides, array._offset, array.device)


def add_at(out: CudaArray, key: Any, values: Any) -> None:
    """np.add.at(out, key, values): the backend's scatter-add (the host's is numdiff.kernels.scatter)."""
    scatter(out, key, values, accumulate=True)


def scaled_row_scatter(out: CudaArray, src: CudaArray, scale: CudaArray, take: CudaArray, into: CudaArray) -> None:
    """out[into[t]] += scale[t] * src[take[t]] for every t (the host's is numdiff.kernels.scatter):
    the rows gathered and scaled by elementwise kernels, then scatter-added with atomic adds."""
    scaled = np.multiply(src[(take,)], scale.reshape(scale.shape[0], 1))
    scatter(out, (into,), scaled, accumulate=True)


def scatter(x: CudaArray, key: Any, value: Any, accumulate: bool) -> None:
    """x[key] = value, or x[key] += value with every repeat of an index counted (np.add.at)."""
    if x.dtype == _BFLOAT16_BITS and not accumulate and isinstance(value, CudaArray) and value.dtype == x.dtype:
        x, value = _as_bits(x), _as_bits(value)  # a copy of bits: bfloat16 is never summed here
    key = _normalize(key)
    values = _as_values(x, value)
    while values.ndim and values.shape[0] == 1 and values.ndim > len(_selected_shape(x, key)):
        values = values.reshape(values.shape[1:])  # NumPy drops leading 1s of the value
    if _is_basic(key) and not accumulate:
        target = _basic_view(x, key)
        if np.broadcast_shapes(values.shape, target.shape) != target.shape:
            raise ValueError(
                f"could not broadcast input array from shape {values.shape} into shape {target.shape}"
            )
        if values._buffer is x._buffer:
            values = values.copy()
        launch_map("copy", target, (values,))
        return
    offsets, shape = _offsets(x, key)
    if np.broadcast_shapes(values.shape, shape) != shape:
        raise ValueError(f"could not broadcast input array from shape {values.shape} into shape {shape}")
    launch_scatter_offsets(x, offsets, values, shape, accumulate)


def take_along_axis(arr: CudaArray, indices: CudaArray, axis: int) -> CudaArray:
    """np.take_along_axis for CUDA arrays of equal ndim (index sizes within arr's off `axis`)."""
    if not isinstance(indices, CudaArray) or indices.dtype.kind not in "iu":
        raise TypeError(f"take_along_axis: indices must be an integer CUDA array, got {indices!r}")
    if indices.ndim != arr.ndim or indices.device != arr.device:
        raise ValueError(f"take_along_axis: indices {indices!r} do not match array {arr!r}")
    axis = axis % arr.ndim
    if any(i > a for d, (i, a) in enumerate(zip(indices.shape, arr.shape)) if d != axis):
        raise ValueError(f"take_along_axis: index shape {indices.shape} exceeds array shape {arr.shape}")
    out = CudaArray.empty(indices.shape, arr.dtype, arr.device)
    launch_take_along_axis(out, arr, indices, axis)
    return out


def scatter_add_along_axis(target: CudaArray, indices: CudaArray, src: CudaArray, axis: int) -> CudaArray:
    """A copy of `target` with src[i] added at target[.., indices[i], ..] (PyTorch's scatter_add)."""
    if src.dtype != target.dtype or indices.device != target.device or src.device != target.device:
        raise ValueError(
            f"scatter_add: target {target!r}, index {indices!r} and src {src!r} must share device and dtype"
        )
    out = target.copy()
    launch_scatter_add_along_axis(out, indices, src, axis)
    return out
