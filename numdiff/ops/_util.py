"""Argument handling shared by the op modules: scalars to tensors, promotion, devices, dims."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._ground.args import is_int
from numdiff._scalar_convert import checked_array, wrapped_int
from numdiff.amp import computes_in_float32
from numdiff.autograd.transform_state import vmap_active
from numdiff.backend import backend_for, is_host, is_numpy
from numdiff.overrides import ForeignOperandError, is_overridable
from numdiff.tensor import Tensor


def half_computed_in_float32(input: Tensor, compute: Any, op: str = "") -> Tensor:
    """``compute(input)``, in float32 and rounded once when `input` is float16, as PyTorch's CPU
    build reduces half: in float16 a sum of squares or exps, or the count a mean divides by,
    overflows past 65504 (the mean of 100,000 ones was NaN, its softmax 0). bfloat16 likewise:
    rounded once at the end, not after each op of the composition. Where autocast runs `op` in
    float32 on `input`'s device (numdiff.amp.FLOAT32), the float32 result is not rounded back."""
    kind = input._data.dtype
    if kind != np.float16 and kind != _dtype.BFLOAT16_STORAGE:
        return compute(input)
    result = compute(input.float())
    return result if op and computes_in_float32(op, input) else result.to(input.dtype)


class DeviceMismatchError(RuntimeError):
    """An op received tensors on different devices."""


def scalar_like(value: Any, like: Tensor, op: str = "index_put", *, float_range: bool = False) -> Tensor:
    """A Python number as a 0-d tensor of `like`'s dtype and device, written by PyTorch's checked
    rule: 300 into uint8 or 1e20 into int32 is an error naming `op`, 1.5 into bfloat16 is rounded
    to its bits (see numdiff._scalar_convert; `float_range`: refuse finite floats past the dtype's
    largest too, as fill_ does)."""
    if isinstance(value, Tensor) or not isinstance(value, (int, float, np.number, np.bool_)):
        raise TypeError(f"{op}: expected a number, got {type(value).__name__}")
    data = like._data
    target = _dtype.from_numpy(data.dtype)
    array = checked_array(op, value, target, float_range=float_range)
    return Tensor._wrap(backend_for(data).from_host(array, data), None, None)


def check_integer_scalar_fits(op: str, value: Any, tensor: Tensor) -> None:
    """Refuse a Python int that an integer `tensor`'s dtype cannot hold, where PyTorch writes the
    number in that dtype (where, clamp) instead of wrapping it as arithmetic does."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and tensor._data.dtype.kind in "iu":
        checked_array(op, value, _dtype.from_numpy(tensor._data.dtype))


def _scalar_operand(op: str, value: Any, tensor: Tensor) -> tuple[Any, Tensor]:
    """A Python number joins a tensor without widening its dtype; ints meet floats in the default
    float dtype (float32 unless set_default_dtype changed it), as in PyTorch. An int is wrapped
    into an integer tensor's dtype as PyTorch's kernels cast it (int8 + 300 adds 44)."""
    kind = tensor._data.dtype.kind
    if isinstance(value, (bool, np.bool_)):
        return bool(value), tensor
    if isinstance(value, (int, np.integer)):
        if kind == "b":
            tensor = tensor.long()
        if kind in "iub":
            return wrapped_int(op, int(value), tensor._data.dtype), tensor
        return int(value), tensor
    if isinstance(value, (float, np.floating)):
        return float(value), (tensor if kind in "fV" else as_default_float(tensor))  # V: bfloat16
    raise TypeError(f"{op}: unsupported operand type {type(value).__name__} with a Tensor")


def float_operand(original: Any, converted: Any) -> Any:
    """`converted` (an operand `operands` made of `original`) in the default float dtype, taken from
    `original`'s own values where `operands` cast an integer tensor into the other's dtype: PyTorch
    converts each operand from its own dtype (a 0-d int64 -4 beside a uint8 tensor is -4.0, not 252.0)."""
    if not isinstance(converted, Tensor):
        return float(original) if isinstance(original, (int, float, np.number)) else float(converted)
    if isinstance(original, Tensor) and original.dtype is not converted.dtype and not getattr(original, "is_sparse", False):
        return as_default_float(original)
    return as_default_float(converted)


def as_default_float(tensor: Tensor) -> Tensor:
    """An integer or bool tensor in the default float dtype, where an op needs floats: PyTorch's
    int / int, sqrt(int), int + 2.5 are float64 after set_default_dtype(float64), not float32."""
    return tensor.to(_dtype.get_default_dtype())


_PLAIN_NUMBERS = frozenset({float, int, bool})


def operands(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    """Operands for a broadcasting op: tensors of one dtype and device, or a tensor and a number.

    Python numbers stay numbers (the array maths takes them directly, and they get no gradient).
    A sparse operand joins as its dense form: dense (op) sparse is dense, as in PyTorch.
    """
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):  # the common case skips these
        # A Python number (x * 0.5) joins as it is: only other operands need a look.
        if not isinstance(a, Tensor) and type(a) not in _PLAIN_NUMBERS:
            a = _joining(op, a)
        if not isinstance(b, Tensor) and type(b) not in _PLAIN_NUMBERS:
            b = _joining(op, b)
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
    if type(da) is not type(db) or (not is_host(da) and da.device != db.device):
        check_same_device(op, a, b)  # host vs device, or two GPUs (cuda:0 vs cuda:1)
    if da.shape != db.shape and da.ndim and db.ndim:
        _check_broadcastable(op, da.shape, db.shape)
    return a, b


def _joining(op: str, value: Any) -> Any:
    """A non-Tensor operand as it joins a tensor: a NumPy array as a tensor (its dtype counts), a
    sparse tensor as its dense form (dense (op) sparse is dense), anything else as it is."""
    if is_numpy(value):
        return _from_numpy(op, value)
    if is_overridable(value):  # a Proxy or other tensor-like: the public function hands the call to it
        raise ForeignOperandError(op, value)
    if getattr(value, "is_sparse", False) is True or getattr(value, "is_sparse_csr", False) is True:
        return value.to_dense()
    return value


def _from_numpy(op: str, array: np.ndarray) -> Tensor:
    try:
        kind = _dtype.from_numpy(array.dtype)
    except TypeError:
        raise TypeError(f"{op}: a NumPy operand of dtype {array.dtype} has no numdiff dtype") from None
    return Tensor._wrap(np.ascontiguousarray(array, dtype=kind.numpy), None, None)


_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2}  # V: bfloat16


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
    """``compute(*operands)`` for batched operands, run on whole batches (see numdiff._batched)."""
    from numdiff._batched import nondifferentiable

    return nondifferentiable(compute, *operands)


def data_of(x: Any) -> Any:
    """The array of a tensor operand to compute on (bfloat16 widened, exactly, to float32: NumPy
    has no bfloat16 arithmetic), or a Python number as it is."""
    if not isinstance(x, Tensor):
        return x
    data = x._data
    return _dtype.cast_array(data, _dtype.float32) if data.dtype == _dtype.BFLOAT16_STORAGE else data


def _check_broadcastable(op: str, sa: tuple, sb: tuple) -> None:
    for x, y in zip(reversed(sa), reversed(sb)):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"{op}: shapes {tuple(sa)} and {tuple(sb)} cannot be broadcast together")


def check_same_device(op: str, *tensors: Tensor) -> None:
    for t in tensors:
        if not is_host(t._data):
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


def inverse_permutation(order: Sequence[int]) -> tuple[int, ...]:
    """The permutation that undoes `order` (a permutation of range(n)), as Python ints: what
    np.argsort gives, without its cost on a handful of dims (a view op's hot path).

    >>> inverse_permutation((2, 0, 1))
    (1, 2, 0)
    """
    inverse = [0] * len(order)
    for position, dim in enumerate(order):
        inverse[dim] = position
    return tuple(inverse)


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """A dim in [-ndim, ndim) as a non-negative index (0-d tensors accept 0 and -1)."""
    if type(dim) is not int:
        if not is_int(dim):  # None, a float, a bool: say so instead of failing a comparison
            raise TypeError(f"{op}: dim must be an int, got {dim!r} ({type(dim).__name__})")
        dim = int(dim)
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(
            f"{op}: dimension {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected to be in range [{-bound}, {bound - 1}])"
        )
    return dim % bound


def int_sequence(op: str, name: str, values: Any) -> tuple[int, ...]:
    """`values` (a sequence of ints, NumPy ints or one-element integer tensors) as a tuple of Python
    ints; anything else is a TypeError naming `op` and `name` instead of int()'s or iteration's own."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{op}: {name} must be a sequence of ints, got {values!r} ({type(values).__name__})")
    values = tuple(values)
    for v in values:
        if not is_int(v):
            raise TypeError(f"{op}: {name} must be ints, got {v!r} ({type(v).__name__}) in {values!r}")
    return tuple(int(v) for v in values)


def normalize_dims(op: str, dim: Any, ndim: int) -> tuple[int, ...]:
    """`dim` (None, an int or a sequence) as a sorted tuple of distinct non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if type(dim) is tuple and ndim:
        # The usual sequence (a broadcast gradient's axes): distinct in-range ints, no checks to
        # run; anything else leaves the loop for the checking path below and its errors.
        dims = []
        for d in dim:
            if type(d) is not int or not -ndim <= d < ndim:
                break
            dims.append(d % ndim)
        else:
            if len(set(dims)) == len(dims):
                dims.sort()
                return tuple(dims)
    if isinstance(dim, (int, np.integer)):
        dims = (normalize_dim(op, int(dim), ndim),)
    else:
        dims = tuple(normalize_dim(op, d, ndim) for d in int_sequence(op, "dim", dim))
        if len(set(dims)) != len(dims):
            raise ValueError(f"{op}: dim {tuple(dim)} names a dimension more than once")
    if ndim == 0:
        return ()
    return tuple(sorted(dims))


def ensure_tensor(op: str, value: Any, name: str = "input") -> Tensor:
    if not isinstance(value, Tensor):
        if is_overridable(value):  # a Proxy: the function that checks it hands the call over
            raise ForeignOperandError(op, value)
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, not {type(value).__name__}")
    return value
