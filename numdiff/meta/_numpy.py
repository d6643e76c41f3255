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

from numdiff.meta.array import NO_BYTES, MetaArray


class DeviceMixError(TypeError):
    """A NumPy call mixed a meta array with host data (an array that is not a 0-d constant)."""


RULES: dict[Callable, Callable] = {}


def _rule(*functions: Callable) -> Callable:
    def register(impl: Callable) -> Callable:
        for f in functions:
            RULES[f] = impl
        return impl

    return register


# ----------------------------------------------------------------------------- operands
def _check_operands(name: str, values: Any) -> None:
    """Refuse data of another device: any array with elements but a meta one (numbers, 0-d
    constants, dtypes and options pass)."""
    for v in values:
        if isinstance(v, (list, tuple)):
            _check_operands(name, v)
        elif not isinstance(v, (MetaArray, np.dtype, type)) and isinstance(getattr(v, "ndim", 0), int) and getattr(v, "ndim", 0) > 0:
            described = f"shape {v.shape}" if hasattr(v, "shape") else type(v).__name__
            raise DeviceMixError(
                f"np.{name}: got host data ({type(v).__name__}, {described}) together with a meta array; "
                "move it with .to('meta') first (a meta tensor meets only meta tensors and scalars)"
            )


def _dtype_probe(value: Any, size: int = 0) -> Any:
    """A host stand-in with `value`'s dtype behaviour: `size` elements along each dimension."""
    if isinstance(value, MetaArray):
        return np.zeros((size,) * max(value.ndim, 1), value.dtype)
    return value


def _shape_probe(value: Any) -> Any:
    """`value` with every meta array replaced by a stand-in of no memory (inside lists and tuples too):
    zero-byte items, or for integer and bool arrays (which NumPy may take as indices) one shared
    element broadcast."""
    if isinstance(value, MetaArray):
        if value.dtype.kind in "iub":
            return np.broadcast_to(np.zeros((), np.bool_ if value.dtype.kind == "b" else np.intp), value.shape)
        return value.probe()
    if isinstance(value, (list, tuple)):
        return type(value)(_shape_probe(v) for v in value)
    return value


def _meta_arrays(values: Any) -> list[MetaArray]:
    found = []
    for v in values:
        if isinstance(v, MetaArray):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found += _meta_arrays(v)
    return found


# ----------------------------------------------------------------------------- ufuncs
def _matmul_shape(a: tuple, b: tuple) -> tuple:
    if not a or not b:
        raise ValueError("matmul: input operand does not have enough dimensions (a 0-d operand)")
    a2, b2 = (1,) + a if len(a) == 1 else a, b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {b2[-2]} is different from {a2[-1]})")
    shape = tuple(np.broadcast_shapes(a2[:-2], b2[:-2])) + (a2[-2], b2[-1])
    if len(b) == 1:
        shape = shape[:-1]
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    return shape


def _outputs(out: Any) -> tuple:
    if out is None:
        return ()
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if o is not None and not isinstance(o, MetaArray):
            raise DeviceMixError(f"out= must be a meta array here, got {type(o).__name__}")
    return outs


def ufunc(func: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``func.method(*inputs, **kwargs)`` on meta arrays: the result's shape and dtype."""
    name = func.__name__
    _check_operands(name, inputs)
    outs = _outputs(kwargs.pop("out", None))
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("casting", None)
    if method == "at":
        inputs[0].probe()[_shape_probe(inputs[1])]  # the index's check; nothing is added
        return None
    if method in ("reduce", "accumulate"):
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        probe = np.ones((1,) * max(inputs[0].ndim, 1), inputs[0].dtype)
        result_dtype = getattr(func, method)(probe, axis=0, dtype=dtype).dtype
        if method == "accumulate":
            return MetaArray(inputs[0].shape, result_dtype)
        return MetaArray(_reduced_shape(inputs[0], axis, keepdims), result_dtype)
    if method == "outer":
        result_dtype = func(*[_dtype_probe(v) for v in inputs]).dtype if dtype is None else np.dtype(dtype)
        return MetaArray(tuple(np.shape(_shape_probe(inputs[0]))) + tuple(np.shape(_shape_probe(inputs[1]))), result_dtype)
    if method != "__call__":
        raise TypeError(f"np.{name}.{method} is not supported on meta arrays")
    if kwargs:
        raise TypeError(f"np.{name}: arguments {sorted(kwargs)} are not supported on meta arrays")
    shapes = [tuple(np.shape(_shape_probe(v))) for v in inputs]
    if func is np.matmul:
        shape = _matmul_shape(*shapes)
        result = func(*[_dtype_probe(v, 1) for v in inputs])
    elif func.signature is not None:
        raise TypeError(f"np.{name} (a generalized ufunc) is not supported on meta arrays")
    else:
        shape = tuple(np.broadcast_shapes(*shapes))
        result = func(*[_dtype_probe(v) for v in inputs])
    dtypes = [r.dtype for r in (result if isinstance(result, tuple) else (result,))]
    if dtype is not None:
        dtypes = [np.dtype(dtype)] * len(dtypes)
    if outs:
        for o in outs:
            if o is not None and tuple(np.broadcast_shapes(shape, o.shape)) != o.shape:
                raise ValueError(f"np.{name}: result of shape {shape} does not fit the output of shape {o.shape}")
        return outs if len(outs) > 1 else outs[0]
    made = tuple(MetaArray(shape, d) for d in dtypes)
    return made if len(made) > 1 else made[0]


# ----------------------------------------------------------------------------- functions
def function(func: Callable, args: tuple, kwargs: dict) -> Any:
    """NumPy's `func` on meta arrays, by its rule in :data:`RULES`."""
    rule = RULES.get(func)
    if rule is None:
        raise TypeError(f"np.{func.__name__} is not supported on meta arrays by numdiff (no shape rule for it)")
    _check_operands(func.__name__, list(args) + list(kwargs.values()))
    return rule(func, *args, **kwargs)


def _axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted({_one_axis(a, ndim) for a in axes}))


def _one_axis(axis: Any, ndim: int) -> int:
    bound = max(ndim, 1)
    if not -bound <= axis < bound:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % bound


def _reduced_shape(a: MetaArray, axis: Any, keepdims: bool) -> tuple:
    axes = _axes(axis, a.ndim) if a.ndim else ()
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(a.shape))
    return tuple(n for d, n in enumerate(a.shape) if d not in axes)


@_rule(np.sum, np.prod, np.max, np.amax, np.min, np.amin, np.all, np.any, np.mean, np.var, np.std, np.nansum,
       np.nanmean, np.argmax, np.argmin, np.count_nonzero, np.median, np.ptp)
def _reduction(func: Callable, a: MetaArray, axis: Any = None, *args: Any, keepdims: bool = False, **kwargs: Any) -> MetaArray:
    if a.size == 0 and func in (np.max, np.amax, np.min, np.amin, np.argmax, np.argmin, np.ptp) and (
        axis is None or any(a.shape[d] == 0 for d in _axes(axis, a.ndim))
    ):
        raise ValueError(f"zero-size array to reduction operation {func.__name__} which has no identity")
    probe = np.ones((1,) * a.ndim, a.dtype)
    dtype = np.asarray(func(probe, axis, *args, **kwargs)).dtype
    return MetaArray(_reduced_shape(a, axis, keepdims), dtype)


@_rule(np.cumsum, np.cumprod)
def _scan(func: Callable, a: MetaArray, axis: Any = None, dtype: Any = None, **kwargs: Any) -> MetaArray:
    result_dtype = func(np.ones(1, a.dtype), dtype=dtype).dtype
    if axis is None:
        return MetaArray((a.size,), result_dtype)
    _one_axis(axis, a.ndim)
    return MetaArray(a.shape, result_dtype)


@_rule(np.where)
def _where(func: Callable, condition: Any, *values: Any) -> Any:
    if not values:
        raise MetaShapeError("np.where(condition) (nonzero)")
    shape = tuple(np.broadcast_shapes(*[np.shape(_shape_probe(v)) for v in (condition, *values)]))
    dtype = np.where(np.empty(0, np.bool_), *[_dtype_probe(v) for v in values]).dtype
    return MetaArray(shape, dtype)


class MetaShapeError(NotImplementedError):
    """The result's shape depends on values a meta array does not have (nonzero, unique, masks)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} cannot run on meta tensors: its result's shape depends on the values, "
                         "which a meta tensor does not have")


@_rule(np.nonzero, np.argwhere, np.flatnonzero, np.unique, np.compress, np.extract)
def _value_dependent(func: Callable, *args: Any, **kwargs: Any) -> Any:
    raise MetaShapeError(f"np.{func.__name__}")


_JOINING = (np.concatenate, np.stack, np.hstack, np.vstack, np.append, np.insert)


def _result_dtype(func: Callable, args: tuple, kwargs: dict) -> np.dtype:
    """Joining functions promote their arrays' dtypes; the rest keep the first array's (an index
    array's dtype does not reach take_along_axis's result)."""
    dtype = kwargs.get("dtype")
    if dtype is not None:
        return np.dtype(dtype)
    arrays = _meta_arrays(args)
    return np.result_type(*[a.dtype for a in arrays]) if func in _JOINING else arrays[0].dtype


@_rule(np.concatenate, np.stack, np.hstack, np.vstack, np.take_along_axis, np.expand_dims, np.squeeze, np.tile,
       np.repeat, np.roll, np.flip, np.rot90, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.split, np.array_split,
       np.broadcast_arrays, np.moveaxis, np.diagonal, np.ravel, np.take, np.delete, np.insert, np.append, np.pad,
       np.tril, np.triu, np.sort, np.flipud, np.fliplr, np.ascontiguousarray, np.copy, np.clip, np.round,
       np.around, np.nan_to_num, np.diff)
def _structural(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """Shape from NumPy on zero-byte stand-ins (or, for value-changing functions of one array, the
    input's shape); dtype that of the arrays."""
    dtype = _result_dtype(func, args, kwargs)
    if func in (np.pad, np.tril, np.triu, np.sort, np.ascontiguousarray, np.copy, np.clip, np.round, np.around,
                np.nan_to_num, np.diff, np.insert, np.append):
        result = _probe_result(func, args, kwargs, dtype)
    else:
        result = func(*_shape_probe(args), **{k: v for k, v in kwargs.items() if k != "dtype"})
    return _as_meta(result, dtype)


def _probe_result(func: Callable, args: tuple, kwargs: dict, dtype: np.dtype) -> Any:
    """Functions that write values (pad's constant, tril's zeros) cannot run on zero-byte stand-ins:
    they run on stand-ins of one byte per element, broadcast from a single element (no memory in
    proportion to the input; the result is as big as NumPy makes it, so only its shape is kept)."""
    def small(value: Any) -> Any:
        if isinstance(value, MetaArray):
            return np.broadcast_to(np.zeros((), np.bool_), value.shape)
        if isinstance(value, (list, tuple)):
            return type(value)(small(v) for v in value)
        return value

    kwargs = {k: (False if k == "constant_values" else v) for k, v in kwargs.items() if k not in ("dtype", "out")}
    return np.empty(np.shape(func(*small(args), **kwargs)), NO_BYTES) if func is not np.clip else small(args)[0]


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
    dtype = np.dot(_dtype_probe(a, 1), _dtype_probe(b, 1)).dtype
    a_shape, b_shape = np.shape(_shape_probe(a)), np.shape(_shape_probe(b))
    if not a_shape or not b_shape:
        return MetaArray(a_shape or b_shape, dtype)
    if len(b_shape) <= 2:
        return MetaArray(_matmul_shape(a_shape, b_shape), dtype)
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
        for letter, n in zip(letters, np.shape(_shape_probe(operand))):
            if sizes.get(letter, 1) not in (1, n) and n != 1:
                raise ValueError(f"einsum: operands could not be broadcast for subscript {letter!r}")
            sizes[letter] = max(sizes.get(letter, 1), n)
    dtype = np.result_type(*[_dtype_probe(o) for o in operands]) if kwargs.get("dtype") is None else kwargs["dtype"]
    return MetaArray(tuple(sizes[letter] for letter in output), dtype)


@_rule(np.copyto)
def _copyto(func: Callable, dst: MetaArray, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    np.broadcast_to(np.empty(np.shape(_shape_probe(src)), NO_BYTES), dst.shape)


@_rule(np.put_along_axis)
def _put_along_axis(func: Callable, arr: MetaArray, indices: Any, values: Any, axis: Any) -> None:
    np.take_along_axis(arr.probe(), _shape_probe(indices), axis)


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
