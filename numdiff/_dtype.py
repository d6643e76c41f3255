"""numdiff's dtypes: thin named wrappers over NumPy dtypes, printed the way PyTorch prints them.

bfloat16 has no NumPy dtype, so numdiff stores it as its bit pattern: 2-byte opaque items
(NumPy's ``V2``), the upper half of the float32 with the same value. Converting to bfloat16
rounds a float32 to nearest-even on the 16 dropped bits (NaN becomes 0x7FC0), as PyTorch does;
converting back shifts the bits up, which is exact. Shape, indexing and copy ops move the bits;
an op that computes on values runs on the float32 values and rounds its result once to
bfloat16 (Function.apply's fallback, and data_of for the ops that compute on arrays directly).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from numdiff.backend import holds_values, is_host, like_host, to_host

BFLOAT16_STORAGE = np.dtype("V2")


class dtype:  # noqa: N801 - lowercase to match PyTorch's `torch.dtype`
    """A tensor element type, e.g. ``numdiff.float32``."""

    __slots__ = ("name", "numpy", "is_floating_point", "is_signed", "tensor_type")

    def __init__(self, name: str, numpy_dtype: Any, is_floating_point: builtins.bool, tensor_type: str) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = is_floating_point
        self.is_signed = is_floating_point or self.numpy.kind == "i"
        self.tensor_type = tensor_type

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def is_complex(self) -> builtins.bool:
        return False

    def __repr__(self) -> str:
        return f"numdiff.{self.name}"

    def __reduce__(self) -> str:
        return self.name


float32 = dtype("float32", np.float32, True, "FloatTensor")
float64 = dtype("float64", np.float64, True, "DoubleTensor")
float16 = dtype("float16", np.float16, True, "HalfTensor")
bfloat16 = dtype("bfloat16", BFLOAT16_STORAGE, True, "BFloat16Tensor")
int8 = dtype("int8", np.int8, False, "CharTensor")
uint8 = dtype("uint8", np.uint8, False, "ByteTensor")
int16 = dtype("int16", np.int16, False, "ShortTensor")
int32 = dtype("int32", np.int32, False, "IntTensor")
int64 = dtype("int64", np.int64, False, "LongTensor")
bool_ = dtype("bool", np.bool_, False, "BoolTensor")

ALL_DTYPES = (float32, float64, float16, bfloat16, int8, uint8, int16, int32, int64, bool_)
# PyTorch's second names for the same dtypes: torch.float is torch.float32, and so on.
ALIAS_NAMES = {
    "float": float32, "double": float64, "half": float16, "short": int16, "int": int32, "long": int64,
}
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES}
_BY_TENSOR_TYPE = {f"torch.{d.tensor_type}": d for d in ALL_DTYPES}
_ALIASES: dict[Any, dtype] = {
    builtins.float: float32,
    builtins.int: int64,
    builtins.bool: bool_,
    **ALIAS_NAMES,
    **{d.name: d for d in ALL_DTYPES},
    **_BY_TENSOR_TYPE,
}


_default_float = [float32]


def get_default_dtype() -> dtype:
    """The dtype of tensors made from Python floats and of float factories (float32 at start)."""
    return _default_float[0]


def set_default_dtype(d: Any) -> None:
    """Make `d` (float32, float64 or float16) the default floating dtype, as ``torch.set_default_dtype``.

    >>> numdiff.set_default_dtype(numdiff.float64); numdiff.tensor([1.5]).dtype
    numdiff.float64
    """
    if not isinstance(d, dtype):
        raise TypeError(f"set_default_dtype: expected a numdiff dtype such as numdiff.float64, got {d!r}")
    if d not in (float32, float64, float16):
        raise TypeError(
            f"set_default_dtype: only float32, float64 and float16 can be the default, got {d!r}"
            + (" (bfloat16 tensors are made with dtype=numdiff.bfloat16 or .bfloat16())" if d is bfloat16 else "")
        )
    _default_float[0] = d
    _ALIASES[builtins.float] = d


def to_dtype(value: object) -> dtype:
    """Resolve a numdiff dtype, NumPy dtype, Python type or name to a numdiff dtype."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, type) and isinstance(getattr(value, "dtype", None), dtype):
        return value.dtype  # a legacy tensor type: t.type(numdiff.LongTensor)
    if isinstance(value, str) and value.startswith(("torch.", "numdiff.")):  # "torch.FloatTensor"
        if value in _BY_TENSOR_TYPE:
            return _BY_TENSOR_TYPE[value]
        value = value.partition(".")[2]
    try:
        if value in _ALIASES:
            return _ALIASES[value]
    except TypeError:  # unhashable
        pass
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a numdiff dtype") from None
    return from_numpy(np_dtype)


def from_numpy(np_dtype: np.dtype) -> dtype:
    """The numdiff dtype of a NumPy dtype; uint32, complex64 etc. are refused with the supported list."""
    # What arrays carry first, with no isinstance test (a metaclass check that cost six times
    # the lookup): a key equal to a NumPy dtype is converted to that dtype, as np.dtype would.
    try:
        found = _BY_NUMPY.get(np_dtype)
    except TypeError:  # unhashable: np.dtype below says whether it names a dtype
        found = None
    if found is not None:
        return found
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        names = ", ".join(d.name for d in ALL_DTYPES)
        raise TypeError(f"numdiff does not support NumPy dtype {np_dtype}; supported: {names}") from None


def promote(a: dtype, b: dtype) -> dtype:
    """PyTorch's type promotion between two tensor dtypes (bool < integers < floating).

    >>> promote(int8, uint8), promote(float16, bfloat16)
    (numdiff.int16, numdiff.float32)
    """
    if a is b:
        return a
    if a is bool_ or b is bool_:
        return b if a is bool_ else a
    if a.is_floating_point != b.is_floating_point:
        return a if a.is_floating_point else b
    if a.is_floating_point:
        if {a, b} == {float16, bfloat16}:
            return float32  # neither holds the other's values
        return a if a.itemsize >= b.itemsize else b
    if a.is_signed != b.is_signed:  # uint8 with a signed integer: the signed one, at least int16
        signed = a if a.is_signed else b
        return int16 if signed is int8 else signed
    return a if a.itemsize >= b.itemsize else b


def float32_to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """uint16 bfloat16 bit patterns of float32 values, rounded to nearest-even (NaN -> 0x7FC0)."""
    values = np.asarray(values, dtype=np.float32)
    # ascontiguousarray makes a 0-d array 1-d: the shape is put back at the end.
    bits = np.ascontiguousarray(values).view(np.uint32).astype(np.uint64)
    round_up_bias = ((bits >> 16) & 1) + 0x7FFF
    rounded = ((bits + round_up_bias) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded.reshape(values.shape))


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """The exact float32 values of uint16 bfloat16 bit patterns."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def cast_array(array: np.ndarray, target: dtype) -> np.ndarray:
    """`array` converted to `target` (a new array), going through float32 for bfloat16 either way."""
    bfloat16_involved = array.dtype == BFLOAT16_STORAGE or target is bfloat16
    if bfloat16_involved and not holds_values(array):  # a meta array: the dtype changes, nothing else
        return array.astype(BFLOAT16_STORAGE if target is bfloat16 else target.numpy)
    if bfloat16_involved and not is_host(array):
        # A device array: the bit arithmetic runs on the host, and the result goes back.
        return like_host(cast_array(to_host(array), target), array)
    if array.dtype == BFLOAT16_STORAGE:
        array = bfloat16_bits_to_float32(np.ascontiguousarray(array).view(np.uint16).reshape(array.shape))
    with np.errstate(over="ignore", invalid="ignore"):  # out-of-range values become inf, as in PyTorch
        if target is bfloat16:
            return float32_to_bfloat16_bits(array.astype(np.float32)).view(BFLOAT16_STORAGE)
        return array.astype(target.numpy)


_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2}  # V: bfloat16's storage is a floating dtype


def can_store(source: np.dtype, target: np.dtype) -> builtins.bool:
    """Whether an op's result of dtype `source` may be written in place into `target`: PyTorch
    allows it within a category or downwards (float into int is refused: int_tensor.add_(0.5))."""
    return _KIND_ORDER[source.kind] <= _KIND_ORDER[target.kind]
