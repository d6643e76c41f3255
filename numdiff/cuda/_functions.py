"""NumPy functions on CudaArrays (NEP 18 and NEP 35's ``like=``): the calls numdiff's ops make.

Each entry takes NumPy's arguments, checks them in Python, and launches a kernel or returns a
view. A NumPy function missing here raises a TypeError that names it, rather than falling back
to the host.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff.cuda import _indexing
from numdiff.cuda._ufuncs import check_operands, elementwise, probe
from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels.elementwise import launch_map
from numdiff.cuda.kernels.reduce import launch_arg_extreme, launch_cumprod, launch_cumsum, launch_reduce

IMPLEMENTATIONS: dict[Callable, Callable] = {}


def implements(*functions: Callable) -> Callable:
    def register(impl: Callable) -> Callable:
        for f in functions:
            IMPLEMENTATIONS[f] = impl
        return impl

    return register


def dispatch(func: Callable, args: tuple, kwargs: dict, like: CudaArray) -> Any:
    """Run NumPy's `func` on CUDA arrays; `like` is the array whose protocol NumPy called."""
    impl = IMPLEMENTATIONS.get(func)
    if impl is None:
        raise TypeError(f"np.{func.__name__} is not supported on CUDA arrays by numdiff")
    if func in _CREATION:
        kwargs = {**kwargs, "like": like}  # NEP 35 drops like= from kwargs; it is `like` here
    return impl(*args, **kwargs)


def _axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    bound = max(ndim, 1)
    for a in axes:
        if not -bound <= a < bound:
            raise np.exceptions.AxisError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return tuple(sorted({int(a) % bound for a in axes})) if ndim else ()


def _rows_view(a: CudaArray, axes: tuple) -> tuple[CudaArray, tuple, int, int]:
    """`a` with the reduced axes moved last; the kept shape; and (rows, row length)."""
    kept = [d for d in range(a.ndim) if d not in axes]
    view = a.transpose(kept + list(axes)) if a.ndim else a
    kept_shape = tuple(a.shape[d] for d in kept)
    return view, kept_shape, math.prod(kept_shape), math.prod(a.shape[d] for d in axes)


def _reduce(op: str, a: CudaArray, axis: Any, keepdims: bool, dtype: np.dtype) -> CudaArray:
    axes = _axes(axis, a.ndim)
    source = a.astype(dtype, copy=False)
    if not axes:
        out = source.copy()
        return out
    view, kept_shape, n_out, n_red = _rows_view(source, axes)
    out_shape = tuple(1 if d in axes else n for d, n in enumerate(a.shape)) if keepdims else kept_shape
    if n_red == 0:
        if op in ("max", "min"):
            raise ValueError(f"zero-size array to reduction operation {op} which has no identity")
        from numdiff.cuda.kernels.reduce import identity

        return _full(out_shape, identity(op, np.dtype(dtype)), dtype, a)
    out = CudaArray.empty(out_shape, dtype, a.device)
    if n_out:
        launch_reduce(op, out, view, n_out, n_red)
    return out


def _sum_dtype(a: CudaArray, dtype: Any) -> np.dtype:
    return np.dtype(dtype) if dtype is not None else np.sum(np.zeros(1, a.dtype)).dtype


@implements(np.sum)
def _sum(a, axis=None, dtype=None, keepdims=False):
    return _reduce("sum", a, axis, keepdims, _sum_dtype(a, dtype))


def sum_dims(x: CudaArray, dims: tuple[int, ...], out: CudaArray) -> None:
    """``out[...] = x.sum(axis=dims, keepdims=True)``: the CUDA twin of numdiff.kernels.reduce_sum's
    launcher, by the reduction kernel (one thread block per output element)."""
    kept_shape = tuple(1 if axis in dims else size for axis, size in enumerate(x.shape))
    if tuple(out.shape) != kept_shape:
        raise ValueError(
            f"sum_dims: out has shape {tuple(out.shape)}, expected {kept_shape} (x {tuple(x.shape)} "
            f"summed over axes {tuple(dims)} with the summed axes kept as size 1)"
        )
    out[...] = _reduce("sum", x, tuple(dims), True, out.dtype)


@implements(np.prod)
def _prod(a, axis=None, dtype=None, keepdims=False):
    return _reduce("prod", a, axis, keepdims, _sum_dtype(a, dtype))


@implements(np.max, np.amax)
def _max(a, axis=None, keepdims=False):
    return _reduce("max", a, axis, keepdims, a.dtype)


@implements(np.min, np.amin)
def _min(a, axis=None, keepdims=False):
    return _reduce("min", a, axis, keepdims, a.dtype)


@implements(np.all)
def _all(a, axis=None, keepdims=False):
    nonzero = a if a.dtype == np.bool_ else np.not_equal(a, 0)
    return _reduce("min", nonzero.astype(np.int32), axis, keepdims, np.dtype(np.int32)).astype(np.bool_)


@implements(np.any)
def _any(a, axis=None, keepdims=False):
    nonzero = a if a.dtype == np.bool_ else np.not_equal(a, 0)
    return _reduce("max", nonzero.astype(np.int32), axis, keepdims, np.dtype(np.int32)).astype(np.bool_)


def _arg_extreme(a: CudaArray, axis: Any, keepdims: bool, find_max: bool) -> CudaArray:
    name = "argmax" if find_max else "argmin"
    if a.size == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    if axis is None:
        flat = a.reshape(-1)
        out = _arg_extreme(flat, 0, False, find_max)
        return out.reshape((1,) * a.ndim) if keepdims else out
    axes = _axes(axis, a.ndim)
    view, kept_shape, n_out, n_red = _rows_view(a, axes)
    out_shape = tuple(1 if d in axes else n for d, n in enumerate(a.shape)) if keepdims else kept_shape
    out = CudaArray.empty(out_shape, np.int64, a.device)
    launch_arg_extreme(out, view, n_out, n_red, find_max)
    return out


@implements(np.argmax)
def _argmax(a, axis=None, keepdims=False):
    return _arg_extreme(a, axis, keepdims, True)


@implements(np.argmin)
def _argmin(a, axis=None, keepdims=False):
    return _arg_extreme(a, axis, keepdims, False)


@implements(np.cumprod)
def _cumprod(a, axis=None, dtype=None):
    return _scan(launch_cumprod, _in_dtype(a, dtype), axis)


@implements(np.cumsum)
def _cumsum(a, axis=None, dtype=None):
    return _scan(launch_cumsum, _in_dtype(a, dtype), axis)


def _in_dtype(a: CudaArray, dtype: Any) -> CudaArray:
    """`a` for a scan in `dtype` (None: a's own, as the kernels run): integers pass their own dtype,
    so that they wrap, as PyTorch's do."""
    if dtype is None or np.dtype(dtype) == a.dtype:
        return a
    return a.astype(dtype)


def _scan(launch: Callable, a: CudaArray, axis: Any) -> CudaArray:
    """Running products or sums along `axis` (of the flattened array when None), in a's dtype."""
    if axis is None:
        return _scan(launch, a.reshape(-1), 0)
    axis = _axes(axis, a.ndim)[0]
    moved = np.moveaxis(a, axis, -1)
    out = CudaArray.empty(moved.shape, moved.dtype, a.device)
    if out.size:
        launch(out, moved, out.size // moved.shape[-1], moved.shape[-1])
    return np.moveaxis(out, -1, axis)


@implements(np.where)
def _where(condition, x, y):
    check_operands("where", (condition, x, y))
    if not isinstance(condition, CudaArray) or condition.dtype != np.bool_:
        raise TypeError(f"np.where on CUDA arrays needs a bool CUDA condition, got {condition!r}")
    dtype = np.where(np.empty(0, np.bool_), probe(x), probe(y)).dtype
    return elementwise("where", (condition, x, y), dtype)


@implements(np.broadcast_to)
def _broadcast_to(array, shape):
    return array.broadcast_to(tuple(shape) if not isinstance(shape, int) else (shape,))


@implements(np.flip)
def _flip(m, axis=None):
    return m.flip(_axes(axis, m.ndim))


@implements(np.moveaxis)
def _moveaxis(a, source, destination):
    source = _axes_in_order(source, a.ndim)
    destination = _axes_in_order(destination, a.ndim)
    order = [d for d in range(a.ndim) if d not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return a.transpose(order)


def _axes_in_order(axes: Any, ndim: int) -> list:
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    return [int(a) % ndim for a in axes]


@implements(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal `offset` of the (axis1, axis2) planes as a last axis: a strided view that, unlike
    NumPy's read-only one, writes through (numdiff's diagonal is a view, as PyTorch's)."""
    axis1, axis2 = _axes(axis1, a.ndim)[0], _axes(axis2, a.ndim)[0]
    length = max(0, min(a.shape[axis1] + min(offset, 0), a.shape[axis2] - max(offset, 0)))
    keep = [d for d in range(a.ndim) if d not in (axis1, axis2)]
    start = a._offset
    if length:
        start += max(-offset, 0) * a._strides[axis1] + max(offset, 0) * a._strides[axis2]
    shape = tuple(a.shape[d] for d in keep) + (length,)
    strides = tuple(a._strides[d] for d in keep) + (a._strides[axis1] + a._strides[axis2],)
    return a._view(shape, strides, start)


@implements(np.transpose)
def _transpose(a, axes=None):
    return a.transpose(axes) if axes is not None else a.transpose()


@implements(np.reshape)
def _reshape(a, shape):
    return a.reshape(shape)


@implements(np.ascontiguousarray)
def _ascontiguousarray(a, dtype=None):
    a = a if dtype is None else a.astype(dtype, copy=False)
    return a if a.flags.c_contiguous else a.copy()


@implements(np.concatenate)
def _concatenate(arrays, axis=0, dtype=None):
    arrays = list(arrays)
    first = check_operands("concatenate", tuple(arrays))
    axis = _axes(axis, first.ndim)[0]
    for a in arrays:
        if a.ndim != first.ndim or any(
            x != y for d, (x, y) in enumerate(zip(a.shape, first.shape)) if d != axis
        ):
            raise ValueError(f"concatenate: shapes {[x.shape for x in arrays]} differ off axis {axis}")
    out_dtype = np.dtype(dtype) if dtype is not None else np.result_type(*[a.dtype for a in arrays])
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = CudaArray.empty(tuple(shape), out_dtype, first.device)
    start = 0
    for a in arrays:
        key = (slice(None),) * axis + (slice(start, start + a.shape[axis]),)
        launch_map("copy", out[key], (a,))
        start += a.shape[axis]
    return out


@implements(np.stack)
def _stack(arrays, axis=0):
    arrays = list(arrays)
    axis = _axes(axis, arrays[0].ndim + 1)[0]
    return _concatenate([a[(slice(None),) * axis + (None,)] for a in arrays], axis)


@implements(np.may_share_memory, np.shares_memory)
def _may_share_memory(a, b, max_work=None):
    return isinstance(a, CudaArray) and isinstance(b, CudaArray) and a._buffer is b._buffer


@implements(np.take_along_axis)
def _take_along_axis(arr, indices, axis):
    return _indexing.take_along_axis(arr, indices, axis)


@implements(np.copyto)
def _copyto(dst, src, casting="same_kind"):
    dst[...] = src


def _full(shape: Any, fill_value: Any, dtype: Any, like: CudaArray) -> CudaArray:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    out = CudaArray.empty(shape, dtype, like.device)
    out[...] = fill_value
    return out


@implements(np.zeros)
def _zeros(shape, dtype=float, order="C", *, like, device=None):
    return _full(shape, 0, dtype, like)


@implements(np.ones)
def _ones(shape, dtype=float, order="C", *, like, device=None):
    return _full(shape, 1, dtype, like)


@implements(np.empty)
def _empty(shape, dtype=float, order="C", *, like, device=None):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return CudaArray.empty(shape, dtype, like.device)


@implements(np.full)
def _full_like_arg(shape, fill_value, dtype=None, order="C", *, like, device=None):
    return _full(shape, fill_value, dtype, like)


@implements(np.zeros_like)
def _zeros_like(a, dtype=None):
    return _full(a.shape, 0, dtype or a.dtype, a)


@implements(np.ones_like)
def _ones_like(a, dtype=None):
    return _full(a.shape, 1, dtype or a.dtype, a)


@implements(np.empty_like)
def _empty_like(a, dtype=None):
    return CudaArray.empty(a.shape, dtype or a.dtype, a.device)


@implements(np.full_like)
def _full_like(a, fill_value, dtype=None):
    return _full(a.shape, fill_value, dtype or a.dtype, a)


_CREATION = (np.zeros, np.ones, np.empty, np.full)


@implements(np.result_type)
def _result_type(*arrays_and_dtypes):
    return np.result_type(*[a.dtype if isinstance(a, CudaArray) else a for a in arrays_and_dtypes])


@implements(np.shape)
def _shape(a):
    return a.shape


@implements(np.ndim)
def _ndim(a):
    return a.ndim
