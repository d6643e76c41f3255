"""Argument handling shared by the op modules: scalars to tensors, promotion, devices, dims."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.autograd.transform_state import vmap_active
from numdiff.backend import backend_for
from numdiff.tensor import Tensor


def half_computed_in_float32(input: Tensor, compute: Any) -> Tensor:
    """``compute(input)``, in float32 and rounded once when `input` is float16, as PyTorch's CPU
    build reduces half: in float16 a sum of squares or exps, or the count a mean divides by,
    overflows past 65504 (the mean of 100,000 ones was NaN, its softmax 0)."""
    if input._data.dtype != np.float16:
        return compute(input)
    return compute(input.float()).half()


class DeviceMismatchError(RuntimeError):
    """An op received tensors on different devices."""


def scalar_like(value: Any, like: Tensor) -> Tensor:
    """A Python number as a 0-d tensor that joins `like` without changing its dtype class."""
    data = like._data
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        dtype = data.dtype if data.dtype.kind != "b" or isinstance(value, bool) else np.int64
    elif isinstance(value, (float, np.floating)):
        dtype = data.dtype if data.dtype.kind == "f" else _dtype.get_default_dtype().numpy
    else:
        raise TypeError(f"unsupported operand type {type(value).__name__} with a Tensor")
    array = backend_for(data).from_host(np.asarray(value, dtype=dtype), data)
    return Tensor._wrap(array, None, None)


def _scalar_operand(op: str, value: Any, tensor: Tensor) -> tuple[Any, Tensor]:
    """A Python number joins a tensor without widening its dtype; ints meet floats in the default
    float dtype (float32 unless set_default_dtype changed it), as in PyTorch."""
    kind = tensor._data.dtype.kind
    if kind == "V":  # bfloat16 would otherwise pass as float32 below
        _dtype.check_computable(op, tensor._data)
    if isinstance(value, (bool, np.bool_)):
        return bool(value), tensor
    if isinstance(value, (int, np.integer)):
        return int(value), (tensor.long() if kind == "b" else tensor)
    if isinstance(value, (float, np.floating)):
        return float(value), (tensor if kind == "f" else as_default_float(tensor))
    raise TypeError(f"{op}: unsupported operand type {type(value).__name__} with a Tensor")


def as_default_float(tensor: Tensor) -> Tensor:
    """An integer or bool tensor in the default float dtype, where an op needs floats: PyTorch's
    int / int, sqrt(int), int + 2.5 are float64 after set_default_dtype(float64), not float32."""
    return tensor.to(_dtype.get_default_dtype())


def operands(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    """Operands for a broadcasting op: tensors of one dtype and device, or a tensor and a number.

    Python numbers stay numbers (the array maths takes them directly, and they get no gradient).
    """
    if not isinstance(b, Tensor):
        if not isinstance(a, Tensor):
            raise TypeError(f"{op}: expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")
        b, a = _scalar_operand(op, b, a)
        return a, b
    if not isinstance(a, Tensor):
        a, b = _scalar_operand(op, a, b)
        return a, b
    da, db = a._data, b._data
    if da.dtype is not db.dtype and da.dtype != db.dtype:
        target = _result_dtype(da, db)
        a, b = a.to(target), b.to(target)
        da, db = a._data, b._data
    if type(da) is not type(db) or (type(da) is not np.ndarray and da.device != db.device):
        check_same_device(op, a, b)  # host vs device, or two GPUs (cuda:0 vs cuda:1)
    if da.shape != db.shape and da.ndim and db.ndim:
        _check_broadcastable(op, da.shape, db.shape)
    return a, b


_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2}


def _result_dtype(da: Any, db: Any) -> _dtype.dtype:
    """PyTorch's promotion: a 0-d tensor widens a dimensioned one only if of a higher category
    (bool < integer < floating), so float32[3] * float64[] stays float32, as in PyTorch."""
    a, b = _dtype.from_numpy(da.dtype), _dtype.from_numpy(db.dtype)
    if (da.ndim == 0) != (db.ndim == 0):
        zero_dim, dimensioned = (a, b) if da.ndim == 0 else (b, a)
        if _CATEGORY[zero_dim.numpy.kind] <= _CATEGORY[dimensioned.numpy.kind]:
            return dimensioned
        return zero_dim
    return _dtype.promote(a, b)


def as_result(value: Any) -> Any:
    """An array result for Tensor._wrap: a NumPy scalar (a 0-d result) becomes a 0-d array, and a
    device array (numdiff.cuda's) passes as it is, since np.asarray would copy it to the host."""
    return np.asarray(value) if isinstance(value, np.generic) else value


def vmapped(*operands: Any) -> bool:
    """Whether an operand is batched by numdiff.func.vmap. Ops that compute on arrays outside
    Function.apply (comparisons, logical ops, argmax, rounding division) then go through
    `batch_nondifferentiable` instead of reading one example's data."""
    return vmap_active() and any(isinstance(t, Tensor) and type(t) is not Tensor for t in operands)


def batch_nondifferentiable(compute: Any, *operands: Any) -> Tensor:
    """``compute(*operands)`` for batched operands, run on whole batches (see numdiff.func._batched)."""
    from numdiff.func._batched import nondifferentiable

    return nondifferentiable(compute, *operands)


def data_of(x: Any) -> Any:
    """The array of a tensor operand, or a Python number as it is."""
    return x._data if isinstance(x, Tensor) else x


def _check_broadcastable(op: str, sa: tuple, sb: tuple) -> None:
    for x, y in zip(reversed(sa), reversed(sb)):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"{op}: shapes {tuple(sa)} and {tuple(sb)} cannot be broadcast together")


def check_same_device(op: str, *tensors: Tensor) -> None:
    for t in tensors:
        if type(t._data) is not np.ndarray:
            break
    else:
        return  # all on the CPU
    devices = {str(t.device) for t in tensors}
    if len(devices) > 1:
        raise DeviceMismatchError(
            f"{op}: expected all tensors to be on the same device, but found tensors on "
            f"{' and '.join(sorted(devices))}; move them with .to(device) first"
        )


def broadcast_shape(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " and ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"{op}: shapes {listed} cannot be broadcast together") from None


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """A dim in [-ndim, ndim) as a non-negative index (0-d tensors accept 0 and -1)."""
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(
            f"{op}: dimension {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected to be in range [{-bound}, {bound - 1}])"
        )
    return dim % bound


def normalize_dims(op: str, dim: Any, ndim: int) -> tuple[int, ...]:
    """`dim` (None, an int or a sequence) as a sorted tuple of distinct non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dims = (normalize_dim(op, int(dim), ndim),)
    else:
        dims = tuple(normalize_dim(op, int(d), ndim) for d in dim)
        if len(set(dims)) != len(dims):
            raise ValueError(f"{op}: dim {tuple(dim)} names a dimension more than once")
    if ndim == 0:
        return ()
    return tuple(sorted(dims))


def ensure_tensor(op: str, value: Any, name: str = "input") -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, not {type(value).__name__}")
    return value
