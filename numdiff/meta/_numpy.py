"""NumPy calls on MetaArrays (NEP 13 ufuncs, NEP 18 functions, NEP 35 ``like=``): each works out
its result's shape and dtype, and touches no values.

Three kinds of rule, each written once:

- dtypes come from NumPy itself, asked on tiny host stand-ins (one element per dimension, or none);
- shapes of structural functions (concatenate, stack, take_along_axis, pad, ...) come from NumPy too,
  run on stand-ins of a zero-byte dtype (:data:`numdiff.meta.array.NO_BYTES`), which have any
  shape and no memory;
- reductions, broadcasting, matmul and creation are worked out here.

A NumPy function with no rule raises a TypeError naming it; functions whose result's shape depends
on the values (nonzero, unique, boolean masks) raise as on PyTorch's meta device.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff.meta._ufuncs import (
    DeviceMixError,
    check_operands,
    dtype_probe,
    matmul_shape,
    meta_arrays,
    normalized_axes,
    one_axis,
    reduced_shape,
    shape_probe,
    ufunc,
)
from numdiff.meta.array import NO_BYTES, MetaArray

__all__ = ["RULES", "DeviceMixError", "function", "ufunc"]


RULES: dict[Callable, Callable] = {}


def _rule(*functions: Callable) -> Callable:
    def register(impl: Callable) -> Callable:
        for f in functions:
            RULES[f] = impl
        return impl

    return register


# ----------------------------------------------------------------------------- functions
def function(func: Callable, args: tuple, kwargs: dict) -> Any:
    """NumPy's `func` on meta arrays, by its rule in :data:`RULES`."""
    rule = RULES.get(func)
    if rule is None:
        raise TypeError(f"np.{func.__name__} is not supported on meta arrays by numdiff (no shape rule for it)")
    check_operands(func.__name__, list(args) + list(kwargs.values()))
    return rule(func, *args, **kwargs)


@_rule(np.sum, np.prod, np.max, np.amax, np.min, np.amin, np.all, np.any, np.mean, np.var, np.std, np.nansum,
       np.nanmean, np.argmax, np.argmin, np.count_nonzero, np.median, np.ptp)
def _reduction(func: Callable, a: MetaArray, axis: Any = None, *args: Any, keepdims: bool = False, **kwargs: Any) -> MetaArray:
    if a.size == 0 and func in (np.max, np.amax, np.min, np.amin, np.argmax, np.argmin, np.ptp) and (
        axis is None or any(a.shape[d] == 0 for d in normalized_axes(axis, a.ndim))
    ):
        raise ValueError(f"zero-size array to reduction operation {func.__name__} which has no identity")
    probe = np.ones((1,) * a.ndim, a.dtype)
    dtype = np.asarray(func(probe, axis, *args, **kwargs)).dtype
    return MetaArray(reduced_shape(a, axis, keepdims), dtype)


@_rule(np.cumsum, np.cumprod)
def _scan(func: Callable, a: MetaArray, axis: Any = None, dtype: Any = None, **kwargs: Any) -> MetaArray:
    result_dtype = func(np.ones(1, a.dtype), dtype=dtype).dtype
    if axis is None:
        return MetaArray((a.size,), result_dtype)
    one_axis(axis, a.ndim)
    return MetaArray(a.shape, result_dtype)


@_rule(np.where)
def _where(func: Callable, condition: Any, *values: Any) -> Any:
    if not values:
        raise MetaShapeError("np.where(condition) (nonzero)")
    shape = tuple(np.broadcast_shapes(*[np.shape(shape_probe(v)) for v in (condition, *values)]))
    dtype = np.where(np.empty(0, np.bool_), *[dtype_probe(v) for v in values]).dtype
    return MetaArray(shape, dtype)


class MetaShapeError(NotImplementedError):
    """The result's shape depends on values a meta array does not have (nonzero, unique, masks)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} cannot run on meta tensors: its result's shape depends on the values, "
                         "which a meta tensor does not have")


@_rule(np.nonzero, np.argwhere, np.flatnonzero, np.unique, np.compress, np.extract)
def _value_dependent(func: Callable, *args: Any, **kwargs: Any) -> Any:
    raise MetaShapeError(f"np.{func.__name__}")


_JOINING = (np.concatenate, np.stack, np.hstack, np.vstack)


def _result_dtype(func: Callable, args: tuple, kwargs: dict) -> np.dtype:
    """Joining functions promote their arrays' dtypes; the rest keep the first array's (an index
    array's dtype does not reach take_along_axis's result)."""
    dtype = kwargs.get("dtype")
    if dtype is not None:
        return np.dtype(dtype)
    arrays = meta_arrays(args)
    return np.result_type(*[a.dtype for a in arrays]) if func in _JOINING else arrays[0].dtype


@_rule(np.concatenate, np.stack, np.hstack, np.vstack, np.take_along_axis, np.expand_dims, np.squeeze, np.tile,
       np.repeat, np.roll, np.flip, np.rot90, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.split, np.array_split,
       np.broadcast_arrays, np.moveaxis, np.diagonal, np.ravel, np.take, np.delete, np.flipud, np.fliplr)
def _structural(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """Shape from NumPy itself, run on stand-ins of no memory; dtype that of the arrays."""
    dtype = _result_dtype(func, args, kwargs)
    return _as_meta(func(*shape_probe(args), **{k: v for k, v in kwargs.items() if k != "dtype"}), dtype)


@_rule(np.tril, np.triu, np.sort, np.ascontiguousarray, np.copy, np.clip, np.round, np.around, np.nan_to_num)
def _same_shape(func: Callable, *args: Any, **kwargs: Any) -> MetaArray:
    """Functions that change values, not shapes (clip broadcasts its bounds)."""
    arrays = meta_arrays(args)
    return MetaArray(tuple(np.broadcast_shapes(*[a.shape for a in arrays])), _result_dtype(func, args, kwargs))


@_rule(np.pad)
def _pad(func: Callable, array: MetaArray, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> MetaArray:
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (array.ndim, 2))
    if (widths < 0).any():
        raise ValueError(f"index can't contain negative values (pad widths {widths.tolist()})")
    return MetaArray(tuple(int(n + before + after) for n, (before, after) in zip(array.shape, widths)), array.dtype)


@_rule(np.diff)
def _diff(func: Callable, a: MetaArray, n: int = 1, axis: int = -1, **kwargs: Any) -> MetaArray:
    axis = one_axis(axis, a.ndim)
    shape = tuple(max(size - n, 0) if d == axis else size for d, size in enumerate(a.shape))
    return MetaArray(shape, np.diff(np.zeros((2,) * a.ndim, a.dtype), axis=axis).dtype)


def _as_meta(result: Any, dtype: np.dtype) -> Any:
    if isinstance(result, (list, tuple)):
        return type(result)(_as_meta(r, dtype) for r in result)
    return MetaArray(np.shape(result), dtype)


@_rule(np.transpose)
def _transpose(func: Callable, a: MetaArray, axes: Any = None) -> MetaArray:
    return a.transpose(axes) if axes is not None else a.transpose()


@_rule(np.swapaxes)
def _swapaxes(func: Callable, a: MetaArray, axis1: int, axis2: int) -> MetaArray:
    return a.swapaxes(axis1, axis2)


@_rule(np.reshape)
def _reshape(func: Callable, a: MetaArray, shape: Any = None, *args: Any, **kwargs: Any) -> MetaArray:
    return a.reshape(kwargs.get("newshape", shape))


@_rule(np.broadcast_to)
def _broadcast_to(func: Callable, array: MetaArray, shape: Any, subok: bool = False) -> MetaArray:
    return array.broadcast_to(shape)


@_rule(np.argsort)
def _argsort(func: Callable, a: MetaArray, axis: Any = -1, **kwargs: Any) -> MetaArray:
    return MetaArray((a.size,) if axis is None else a.shape, np.intp)


@_rule(np.dot)
def _dot(func: Callable, a: Any, b: Any, out: Any = None) -> MetaArray:
    dtype = np.dot(dtype_probe(a, 1), dtype_probe(b, 1)).dtype
    a_shape, b_shape = np.shape(shape_probe(a)), np.shape(shape_probe(b))
    if not a_shape or not b_shape:
        return MetaArray(a_shape or b_shape, dtype)
    if len(b_shape) <= 2:
        return MetaArray(matmul_shape(a_shape, b_shape), dtype)
    if a_shape[-1] != b_shape[-2]:
        raise ValueError(f"shapes {a_shape} and {b_shape} not aligned")
    return MetaArray(a_shape[:-1] + b_shape[:-2] + b_shape[-1:], dtype)


@_rule(np.einsum)
def _einsum(func: Callable, subscripts: str, *operands: Any, **kwargs: Any) -> MetaArray:
    if "..." in subscripts or "->" not in subscripts:
        raise TypeError(f"np.einsum on meta arrays needs explicit output subscripts without '...', got {subscripts!r}")
    inputs, output = subscripts.replace(" ", "").split("->")
    sizes: dict[str, int] = {}
    for letters, operand in zip(inputs.split(","), operands):
        for letter, n in zip(letters, np.shape(shape_probe(operand))):
            if sizes.get(letter, 1) not in (1, n) and n != 1:
                raise ValueError(f"einsum: operands could not be broadcast for subscript {letter!r}")
            sizes[letter] = max(sizes.get(letter, 1), n)
    dtype = np.result_type(*[dtype_probe(o) for o in operands]) if kwargs.get("dtype") is None else kwargs["dtype"]
    return MetaArray(tuple(sizes[letter] for letter in output), dtype)


@_rule(np.copyto)
def _copyto(func: Callable, dst: MetaArray, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    np.broadcast_to(np.empty(np.shape(shape_probe(src)), NO_BYTES), dst.shape)


@_rule(np.put_along_axis)
def _put_along_axis(func: Callable, arr: MetaArray, indices: Any, values: Any, axis: Any) -> None:
    np.take_along_axis(arr.probe(), shape_probe(indices), axis)


@_rule(np.may_share_memory, np.shares_memory)
def _may_share_memory(func: Callable, a: Any, b: Any, max_work: Any = None) -> bool:
    return a.storage is b.storage  # views share their base's token


@_rule(np.result_type)
def _result_type(func: Callable, *arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*[a.dtype if isinstance(a, MetaArray) else a for a in arrays_and_dtypes])


@_rule(np.shape)
def _shape(func: Callable, a: MetaArray) -> tuple:
    return a.shape


@_rule(np.ndim)
def _ndim(func: Callable, a: MetaArray) -> int:
    return a.ndim


@_rule(np.size)
def _size(func: Callable, a: MetaArray, axis: Any = None) -> int:
    return a.size if axis is None else a.shape[axis]


# ----------------------------------------------------------------------------- creation (like=)
@_rule(np.zeros, np.ones, np.empty)
def _filled(func: Callable, shape: Any, dtype: Any = float, order: str = "C", **kwargs: Any) -> MetaArray:
    return MetaArray.empty(shape, dtype)


@_rule(np.full)
def _full(func: Callable, shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", **kwargs: Any) -> MetaArray:
    return MetaArray.empty(shape, np.asarray(fill_value).dtype if dtype is None else dtype)


@_rule(np.zeros_like, np.ones_like, np.empty_like)
def _filled_like(func: Callable, a: MetaArray, dtype: Any = None, order: str = "K", subok: bool = True,
                 shape: Any = None, **kwargs: Any) -> MetaArray:
    return MetaArray.empty(a.shape if shape is None else shape, a.dtype if dtype is None else dtype)


@_rule(np.full_like)
def _full_like(func: Callable, a: MetaArray, fill_value: Any, dtype: Any = None, **kwargs: Any) -> MetaArray:
    return MetaArray.empty(a.shape, a.dtype if dtype is None else dtype)


@_rule(np.array, np.asarray, np.asanyarray)
def _array(func: Callable, value: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> MetaArray:
    if isinstance(value, MetaArray):
        return value if dtype is None else value.astype(dtype, copy=False)
    host = np.asarray(value, dtype=dtype)  # host data given with like=meta: only its shape is kept
    return MetaArray(host.shape, host.dtype)


@_rule(np.arange)
def _arange(func: Callable, start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, **kwargs: Any) -> MetaArray:
    if stop is None:
        start, stop = 0, start
    count = max(0, math.ceil((stop - start) / step))
    return MetaArray((count,), np.arange(start, start, step, dtype=dtype).dtype)


@_rule(np.eye)
def _eye(func: Callable, n: int, m: Any = None, k: int = 0, dtype: Any = float, **kwargs: Any) -> MetaArray:
    return MetaArray.empty((n, n if m is None else m), dtype)
