"""NumPy ufuncs on MetaArrays (NEP 13): ``np.exp(x)``, ``a + b``, ``a @ b``, ``np.add.at(...)``:
the result's shape (broadcast, or matmul's) and dtype (NumPy's own, asked on empty stand-ins).
The operand helpers here serve numdiff.meta._numpy's function rules too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.meta.array import MetaArray


class DeviceMixError(TypeError):
    """A NumPy call mixed a meta array with host data (an array that is not a 0-d constant)."""


# ----------------------------------------------------------------------------- operands
def check_operands(name: str, values: Any) -> None:
    """Refuse data of another device: any array with elements but a meta one (numbers, 0-d
    constants, dtypes and options pass)."""
    for v in values:
        if isinstance(v, (list, tuple)):
            check_operands(name, v)
        elif not isinstance(v, (MetaArray, np.dtype, type)) and isinstance(getattr(v, "ndim", 0), int) and getattr(v, "ndim", 0) > 0:
            described = f"shape {v.shape}" if hasattr(v, "shape") else type(v).__name__
            raise DeviceMixError(
                f"np.{name}: got host data ({type(v).__name__}, {described}) together with a meta array; "
                "move it with .to('meta') first (a meta tensor meets only meta tensors and scalars)"
            )


def dtype_probe(value: Any, size: int = 0) -> Any:
    """A host stand-in with `value`'s dtype behaviour: `size` elements along each dimension."""
    if isinstance(value, MetaArray):
        return np.zeros((size,) * max(value.ndim, 1), value.dtype)
    return value


def shape_probe(value: Any) -> Any:
    """`value` with every meta array replaced by a stand-in of no memory (inside lists and tuples too):
    zero-byte items, or for integer and bool arrays (which NumPy may take as indices) one shared
    element broadcast."""
    if isinstance(value, MetaArray):
        if value.dtype.kind in "iub":
            return np.broadcast_to(np.zeros((), np.bool_ if value.dtype.kind == "b" else np.intp), value.shape)
        return value.probe()
    if isinstance(value, (list, tuple)):
        return type(value)(shape_probe(v) for v in value)
    return value


def meta_arrays(values: Any) -> list[MetaArray]:
    found = []
    for v in values:
        if isinstance(v, MetaArray):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found += meta_arrays(v)
    return found


# ----------------------------------------------------------------------------- ufuncs
def matmul_shape(a: tuple, b: tuple) -> tuple:
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
    check_operands(name, inputs if method != "at" else inputs[:1] + inputs[2:])  # at's index may be host data
    outs = _outputs(kwargs.pop("out", None))
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("casting", None)
    if method == "at":
        inputs[0].probe()[shape_probe(inputs[1])]  # the index's check; nothing is added
        return None
    if method in ("reduce", "accumulate"):
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        probe = np.ones((1,) * max(inputs[0].ndim, 1), inputs[0].dtype)
        result_dtype = getattr(func, method)(probe, axis=0, dtype=dtype).dtype
        if method == "accumulate":
            return MetaArray(inputs[0].shape, result_dtype)
        return MetaArray(reduced_shape(inputs[0], axis, keepdims), result_dtype)
    if method == "outer":
        result_dtype = func(*[dtype_probe(v) for v in inputs]).dtype if dtype is None else np.dtype(dtype)
        return MetaArray(tuple(np.shape(shape_probe(inputs[0]))) + tuple(np.shape(shape_probe(inputs[1]))), result_dtype)
    if method != "__call__":
        raise TypeError(f"np.{name}.{method} is not supported on meta arrays")
    if kwargs:
        raise TypeError(f"np.{name}: arguments {sorted(kwargs)} are not supported on meta arrays")
    shapes = [tuple(np.shape(shape_probe(v))) for v in inputs]
    if func is np.matmul:
        shape = matmul_shape(*shapes)
        result = func(*[dtype_probe(v, 1) for v in inputs])
    elif func.signature is not None:
        raise TypeError(f"np.{name} (a generalized ufunc) is not supported on meta arrays")
    else:
        shape = tuple(np.broadcast_shapes(*shapes))
        result = func(*[dtype_probe(v) for v in inputs])
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


def normalized_axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted({one_axis(a, ndim) for a in axes}))


def one_axis(axis: Any, ndim: int) -> int:
    bound = max(ndim, 1)
    if not -bound <= axis < bound:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % bound


def reduced_shape(a: MetaArray, axis: Any, keepdims: bool) -> tuple:
    axes = normalized_axes(axis, a.ndim) if a.ndim else ()
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(a.shape))
    return tuple(n for d, n in enumerate(a.shape) if d not in axes)
