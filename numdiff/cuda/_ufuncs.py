"""NumPy ufuncs on CudaArrays (NEP 13): ``np.exp(x)``, ``a + b``, ``np.add.at(out, key, values)``.

Result dtypes follow NumPy exactly: the ufunc itself is asked, on empty host stand-ins, what it
would return. Python numbers and 0-d host arrays join as constants on the device; any other host
array is refused, so no data silently crosses between host and device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels.elementwise import SCALAR_FUNCTIONS, launch_map


class DeviceMixError(TypeError):
    """A NumPy call mixed arrays of different devices (host and CUDA, or two GPUs)."""


def _is_host_constant(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.generic)) or (
        isinstance(value, np.ndarray) and value.ndim == 0
    )


def check_operands(name: str, values: tuple) -> CudaArray:
    """The first CudaArray among `values`, after checking every operand can join it on its device."""
    arrays = [v for v in values if isinstance(v, CudaArray)]
    first = arrays[0]
    for v in values:
        if isinstance(v, CudaArray):
            if v.device != first.device:
                raise DeviceMixError(
                    f"np.{name}: arrays are on {first.device} and {v.device}; move them to one device first"
                )
        elif not _is_host_constant(v):
            described = f"shape {v.shape}" if hasattr(v, "shape") else type(v).__name__
            raise DeviceMixError(
                f"np.{name}: got a host value ({type(v).__name__}, {described}) together with an "
                f"array on {first.device}; move it with .to('{first.device}') first"
            )
    return first


def probe(value: Any) -> Any:
    """A host stand-in with the dtype behaviour of `value` (Python numbers stay weakly typed)."""
    if isinstance(value, CudaArray):
        return np.empty((0,) * max(value.ndim, 1), dtype=value.dtype)
    return value


def as_device(value: Any, dtype: np.dtype, like: CudaArray) -> CudaArray:
    """`value` as a CudaArray: arrays pass through, host constants are uploaded in `dtype`."""
    if isinstance(value, CudaArray):
        return value
    return like.from_host(np.asarray(value, dtype=dtype))


def constant_dtype(arrays: list, constants: list) -> np.dtype:
    """The dtype a host constant takes next to these device arrays (NumPy's promotion, NEP 50)."""
    return np.result_type(*[a.dtype for a in arrays], *constants)


def elementwise(name: str, values: tuple, out_dtype: np.dtype, out: CudaArray | None = None) -> CudaArray:
    """Run the scalar function `name` over broadcast `values` into `out` (allocated if None)."""
    like = check_operands(name, values)
    arrays = [v for v in values if isinstance(v, CudaArray)]
    constants = [v for v in values if not isinstance(v, CudaArray)]
    cdtype = constant_dtype(arrays, constants) if constants else None
    operands = tuple(as_device(v, cdtype, like) for v in values)
    shape = tuple(np.broadcast_shapes(*[v.shape for v in operands]))
    if out is None:
        out = CudaArray.empty(shape, out_dtype, like.device)
    elif np.broadcast_shapes(shape, out.shape) != out.shape:
        raise ValueError(f"np.{name}: result of shape {shape} does not fit the output of shape {out.shape}")
    launch_map(name, out, operands)
    return out


def dispatch(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    name = ufunc.__name__
    if method == "at":
        return _ufunc_at(ufunc, inputs)
    if method != "__call__":
        raise TypeError(f"np.{name}.{method} is not supported on CUDA arrays")
    out = kwargs.pop("out", None)
    if out is not None:
        out = out[0] if isinstance(out, tuple) else out
        if not isinstance(out, CudaArray):
            raise DeviceMixError(f"np.{name}: out= must be a CUDA array here, got {type(out).__name__}")
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("casting", None)
    if kwargs:
        raise TypeError(f"np.{name}: arguments {sorted(kwargs)} are not supported on CUDA arrays")
    check_operands(name, inputs)
    result_dtype = ufunc(*[probe(v) for v in inputs]).dtype if dtype is None else np.dtype(dtype)
    if name == "invert" and result_dtype == np.bool_:
        name = "logical_not"  # ~ on bool is logical not (on integers it is bitwise)
    if name == "sign" and result_dtype == np.bool_:
        raise TypeError("np.sign is not defined for bool arrays")
    if name not in SCALAR_FUNCTIONS:
        raise TypeError(f"np.{name} has no CUDA kernel in numdiff")
    if out is not None:
        # An input that aliases `out` with another layout (x += x.T) is read from a copy.
        inputs = tuple(
            v.copy()
            if isinstance(v, CudaArray)
            and v._buffer is out._buffer
            and (v.shape, v._strides, v._offset) != (out.shape, out._strides, out._offset)
            else v
            for v in inputs
        )
    return elementwise(name, inputs, result_dtype, out)


def _ufunc_at(ufunc: np.ufunc, inputs: tuple) -> None:
    from numdiff.cuda import _indexing

    if ufunc is not np.add or len(inputs) != 3 or not isinstance(inputs[0], CudaArray):
        raise TypeError(f"np.{ufunc.__name__}.at is not supported on CUDA arrays (np.add.at is)")
    target, key, values = inputs
    _indexing.scatter(target, key, values, accumulate=True)
