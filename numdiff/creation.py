"""Tensor factories: tensor, from_numpy, zeros, ones, full, empty, arange, eye, rand, randn, ..."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._device import get_default_device, to_device
from numdiff._host_functions import random_function
from numdiff._random import Generator, batched_sample, different_levels, rng
from numdiff.tensor import Tensor


def as_array(data: Any, dtype: Any) -> np.ndarray:
    """A fresh NumPy array from Python data, arrays or tensors, with PyTorch's dtype defaults."""
    if isinstance(data, Tensor):
        array = np.array(data.detach().cpu().numpy())
    elif isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        array = np.array([as_array(x, None) for x in data])
    else:
        array = np.array(data)
    if dtype is not None:
        target = _dtype.to_dtype(dtype)
        return array if array.dtype == target.numpy else _dtype.cast_array(array, target)
    kind = array.dtype.kind
    if kind == "f" and not isinstance(data, (np.ndarray, np.floating, Tensor)):
        return array.astype(_dtype.get_default_dtype().numpy)  # float32 unless set_default_dtype
    if kind in "iu" and not isinstance(data, (np.ndarray, np.integer, Tensor)):
        return array.astype(np.int64)
    if kind in "US" or array.dtype == object:
        raise TypeError(f"tensor: could not build a numeric tensor from {type(data).__name__} data of dtype {array.dtype}")
    _dtype.from_numpy(array.dtype)  # refuses float16, uint8 etc. with the supported list
    return array


def _flat(data: Any):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _place(array: np.ndarray, device: Any, requires_grad: bool, dtype: Any = None) -> Tensor:
    if dtype is not None and _dtype.to_dtype(dtype) is _dtype.bfloat16:
        array = _dtype.cast_array(array, _dtype.bfloat16)  # made in float32 (see _float_dtype)
    target = get_default_device() if device is None else to_device(device)
    if target.type != "cpu":
        from numdiff.cuda import move_array

        array = move_array(array, target)
    t = Tensor._wrap(array, None, None)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of `data`.

    >>> numdiff.tensor([1., 2., 3.], requires_grad=True)
    tensor([1., 2., 3.], requires_grad=True)
    """
    if isinstance(data, Tensor):
        warnings.warn(
            "numdiff.tensor(t) copies a tensor into a new leaf cut off from t's graph, so no gradient "
            "will reach what t was computed from. To say so explicitly, use t.detach().clone() (add "
            ".requires_grad_() for a new trainable leaf); to keep the graph, use t itself or t.clone().",
            UserWarning,
            stacklevel=2,
        )
    return _place(as_array(data, dtype), device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """`data` itself if it already is a matching tensor, else a new tensor (sharing NumPy memory)."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if isinstance(data, np.ndarray) and dtype is None and to_device(device).type == "cpu":
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor that shares memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    _dtype.from_numpy(array.dtype)
    return Tensor._wrap(array, None, None)


def _shape(size: Sequence[Any]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    shape = tuple(int(s) for s in size)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in size {list(shape)}")
    return shape


def _float_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype to make values in; bfloat16 values are made in float32 and cast by _place."""
    if dtype is not None and _dtype.to_dtype(dtype) is _dtype.bfloat16:
        return _dtype.float32.numpy
    return _dtype.get_default_dtype().numpy if dtype is None else _dtype.to_dtype(dtype).numpy


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return _place(np.zeros(_shape(size), _float_dtype(dtype)), device, requires_grad, dtype)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _place(np.ones(_shape(size), _float_dtype(dtype)), device, requires_grad, dtype)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor with uninitialised values."""
    return _place(np.empty(_shape(size), _float_dtype(dtype)), device, requires_grad, dtype)


def full(size: Sequence[int], fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with `fill_value` (dtype inferred from it when not given)."""
    if dtype is None:
        dtype = as_array(fill_value, None).dtype
    return _place(np.full(_shape((size,)), fill_value, _float_dtype(dtype)), device, requires_grad, dtype)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Values from start (inclusive) to end (exclusive) in steps of `step`."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        dtype = _dtype.get_default_dtype() if is_float else _dtype.int64
    return _place(np.arange(start, end, step).astype(_float_dtype(dtype)), device, requires_grad, dtype)


def linspace(start: float, end: float, steps: int, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from start to end inclusive."""
    return _place(np.linspace(start, end, steps, dtype=_float_dtype(dtype)), device, requires_grad, dtype)


def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A 2-D identity matrix."""
    return _place(np.eye(n, m, dtype=_float_dtype(dtype)), device, requires_grad, dtype)


@random_function
def _sample(draw: Any, shape: tuple, generator: Generator | None, device: Any, requires_grad: bool, dtype: Any) -> Tensor:
    """``draw(numpy_generator, shape)`` placed as a tensor. Under vmap(randomness='different') the
    shape gets those levels' batch sizes in front and the tensor is batched at them: one
    independent draw per batch entry."""
    source = rng(generator)
    levels, batch = different_levels()
    return batched_sample(_place(draw(source, batch + shape), device, requires_grad, dtype), levels)


def rand(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    numpy_dtype = _float_dtype(dtype)
    return _sample(
        lambda g, shape: g.random(shape, dtype=np.float64).astype(numpy_dtype),
        _shape(size), generator, device, requires_grad, dtype,
    )


def randn(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    numpy_dtype = _float_dtype(dtype)
    return _sample(lambda g, shape: g.standard_normal(shape).astype(numpy_dtype), _shape(size), generator, device, requires_grad, dtype)


def randint(
    low: int,
    high: Any = None,
    size: Sequence[int] | None = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers uniform in [low, high), with PyTorch's two forms.

    >>> numdiff.randint(10, (2, 3)).shape, numdiff.randint(5, 10, (4,)).shape
    (numdiff.Size([2, 3]), numdiff.Size([4]))
    """
    if size is None:
        if not isinstance(high, (tuple, list)):
            raise TypeError(
                f"randint: missing the size argument; call randint(high, size) or randint(low, high, size), "
                f"got low={low!r}, high={high!r}"
            )
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint: size must be a tuple of ints, got {size!r}")
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    target = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    numpy_dtype = _float_dtype(target)
    return _sample(
        lambda g, shape: g.integers(low, high, size=shape).astype(numpy_dtype),
        _shape((size,)), generator, device, requires_grad, target,
    )


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None) -> Tensor:
    """A random permutation of 0..n-1."""
    numpy_dtype = np.int64 if dtype is None else _dtype.to_dtype(dtype).numpy

    def draw(g: np.random.Generator, shape: tuple) -> np.ndarray:
        if len(shape) == 1:
            return g.permutation(n).astype(numpy_dtype)
        return g.permuted(np.broadcast_to(np.arange(n), shape), axis=-1).astype(numpy_dtype)

    return _sample(draw, (n,), generator, device, False, None)


def _like(fill, input: Tensor, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    device = input.device if device is None else device
    return fill(tuple(input.shape), dtype=dtype, device=device, requires_grad=requires_grad)


def zeros_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """zeros with the shape (and by default dtype and device) of `input`."""
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """ones with the shape (and by default dtype and device) of `input`."""
    return _like(ones, input, dtype, device, requires_grad)


def empty_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """empty with the shape (and by default dtype and device) of `input`."""
    return _like(empty, input, dtype, device, requires_grad)


def full_like(input: Tensor, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """full with the shape (and by default dtype and device) of `input`."""
    dtype = input.dtype if dtype is None else dtype
    return full(tuple(input.shape), fill_value, dtype=dtype, device=device or input.device, requires_grad=requires_grad)


def rand_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """rand with the shape (and by default dtype and device) of `input`."""
    return _like(rand, input, dtype, device, requires_grad)


def randn_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """randn with the shape (and by default dtype and device) of `input`."""
    return _like(randn, input, dtype, device, requires_grad)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *, dtype: Any = None, device: Any = None) -> Tensor:
    """randint with the shape (and by default dtype and device) of `input`: ``randint_like(x, high)``
    or ``randint_like(x, low, high)``."""
    if high is None:
        low, high = 0, low
    dtype = input.dtype if dtype is None else dtype
    return randint(low, high, tuple(input.shape), dtype=dtype, device=device or input.device)


def _triangle_indices(op: str, select: Any, row: int, col: int, offset: int, dtype: Any, device: Any) -> Tensor:
    for name, value in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{op}: {name} must be an int, got {value!r}")
    if row < 0 or col < 0:
        raise ValueError(f"{op}: row and col must be at least 0, got {row} and {col}")
    rows, cols = select(row, offset, col)
    target = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    return _place(np.stack([rows, cols]).astype(target.numpy), device, False, target)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, N) row and column indices of the lower triangle of a row x col matrix, row by row."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, N) row and column indices of the upper triangle of a row x col matrix, row by row."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)
