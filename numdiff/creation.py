"""Tensor factories: tensor, from_numpy, zeros, ones, full, empty, arange, eye, rand, randn, ..."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff import _dtype, _dtype_info, _memory_format
from numdiff._device import get_default_device, to_device
from numdiff._ground.args import is_int
from numdiff._host_functions import random_function
from numdiff._python_data import as_array, number_dtype
from numdiff._random import Generator, batched_sample, different_levels, rng
from numdiff._scalar_convert import ScalarOverflowError, checked_array
from numdiff._spaced_values import spaced_values
from numdiff.backend import is_numpy, move_array
from numdiff.meta.array import MetaArray
from numdiff.tensor import Tensor


def _place(array: np.ndarray, device: Any, requires_grad: bool, dtype: Any = None) -> Tensor:
    if dtype is not None and _dtype.to_dtype(dtype) is _dtype.bfloat16:
        array = _dtype.cast_array(array, _dtype.bfloat16)  # made in float32 (see _float_dtype)
    target = get_default_device() if device is None else to_device(device)
    if target.type != "cpu":
        array = move_array(array, target)
    t = Tensor._wrap(array, None, None)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _on_meta(device: Any) -> bool:
    return (get_default_device() if device is None else to_device(device)).type == "meta"


def _meta(shape: tuple[int, ...], dtype: Any, requires_grad: bool) -> Tensor:
    """A meta tensor: made without making its values on the host first (they would be dropped)."""
    target = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    t = Tensor._wrap(MetaArray(shape, target.numpy), None, None)
    return t.requires_grad_(True) if requires_grad else t


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
    if is_numpy(data) and dtype is None and to_device(device).type == "cpu":
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor that shares memory with a NumPy array."""
    if not is_numpy(array):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    _dtype.from_numpy(array.dtype)
    return Tensor._wrap(array, None, None)


def _sizes(sizes: tuple[Any, ...], size: Any) -> tuple[Any, ...]:
    """The shape given positionally (``zeros(2, 3)``, ``zeros((2, 3))``) or as ``size=(2, 3)``."""
    if size is None:
        return sizes
    if sizes:
        raise TypeError(f"got the shape both positionally {sizes} and as size={size!r}; give it once")
    return (size,)


def _shape(size: Sequence[Any], op: str) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    if not all(is_int(s) for s in size):
        raise TypeError(f"{op}: size must be a sequence of ints, got {tuple(size)!r}")
    shape = tuple(int(s) for s in size)
    if any(s < 0 for s in shape):
        raise ValueError(f"{op}: negative dimension in size {list(shape)}")
    return shape


def _float_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype to make values in; bfloat16 values are made in float32 and cast by _place."""
    if dtype is not None and _dtype.to_dtype(dtype) is _dtype.bfloat16:
        return _dtype.float32.numpy
    return _dtype.get_default_dtype().numpy if dtype is None else _dtype.to_dtype(dtype).numpy


def zeros(*sizes: Any, size: Any = None, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros."""
    shape = _shape(_sizes(sizes, size), "zeros")
    if _on_meta(device):
        return _meta(shape, dtype, requires_grad)
    return _place(np.zeros(shape, _float_dtype(dtype)), device, requires_grad, dtype)


def ones(*sizes: Any, size: Any = None, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor of ones."""
    shape = _shape(_sizes(sizes, size), "ones")
    if _on_meta(device):
        return _meta(shape, dtype, requires_grad)
    return _place(np.ones(shape, _float_dtype(dtype)), device, requires_grad, dtype)


def empty(*sizes: Any, size: Any = None, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None, pin_memory: bool = False, memory_format: Any = None) -> Tensor:
    """A tensor with uninitialised values (laid out in `memory_format`, row-major by default)."""
    shape = _shape(_sizes(sizes, size), "empty")
    if _on_meta(device):
        return _meta(shape, dtype, requires_grad)
    fmt = _memory_format.checked(memory_format, "empty")
    if fmt is _memory_format.preserve_format:
        raise RuntimeError("empty: memory_format=preserve_format needs a tensor to preserve; use empty_like")
    if fmt is not _memory_format.contiguous_format:
        _memory_format.check_rank(fmt, len(shape), "empty")
        stored = np.empty(tuple(shape[d] for d in fmt.order), _float_dtype(dtype))
        array = stored.transpose(np.argsort(fmt.order))
        return _place(array, device, requires_grad, dtype)
    return _place(np.empty(shape, _float_dtype(dtype)), device, requires_grad, dtype)


def full(size: Sequence[int], fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with `fill_value` (dtype inferred from it when not given); a value that
    does not fit the dtype (300 into uint8) is refused, as in PyTorch."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    target = number_dtype("full", fill_value) if dtype is None else _dtype.to_dtype(dtype)
    value = checked_array("full", fill_value, target, float_range=True)
    if _on_meta(device):
        return _meta(_shape((size,), "full"), _dtype.from_numpy(value.dtype), requires_grad)
    return _place(np.full(_shape((size,), "full"), value, value.dtype), device, requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Values from start (inclusive) to end (exclusive) in steps of `step`; made in int64 or
    float64 and cast (wrapping into a smaller integer dtype, as PyTorch's arange does)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    for name, bound in (("start", start), ("end", end), ("step", step)):
        if isinstance(bound, Tensor):
            bound = bound.item()
        if isinstance(bound, (int, np.integer)) and not -(1 << 63) <= int(bound) < (1 << 63):
            raise ScalarOverflowError(f"arange: {name}={bound} cannot be converted to type int64 without overflow")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        dtype = _dtype.get_default_dtype() if is_float else _dtype.int64
    target = _dtype.to_dtype(dtype)
    if target is _dtype.bool_:
        raise TypeError("arange: not implemented for bool (as in PyTorch); use arange(...) != 0 or .bool()")
    if not target.is_floating_point:  # PyTorch truncates the bounds first: arange(0, 3.7, 1.5, dtype=int64) is [0, 1, 2]
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise ValueError("arange: step must be nonzero (it is truncated to an int for an integer dtype)")
    return _place(np.arange(start, end, step).astype(_float_dtype(dtype)), device, requires_grad, dtype)


def inclusive_range(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Values from start to end *inclusive* in steps of `step`, float by default; deprecated in
    PyTorch (which warns) in favour of arange.

    >>> numdiff.range(1, 3)
    tensor([1., 2., 3.])
    """
    warnings.warn("numdiff.range is deprecated and will be removed in a future release because its behavior "
                  "is inconsistent with Python's range builtin. Instead, use numdiff.arange, which produces "
                  "values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("range: step must be nonzero")
    count = int(np.floor((end - start) / step)) + 1
    values = start + step * np.arange(max(count, 0), dtype=np.float64)
    dtype = _dtype.get_default_dtype() if dtype is None else dtype
    return _place(values.astype(_float_dtype(dtype)), device, requires_grad, dtype)


def _check_steps(op: str, steps: Any) -> None:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"{op}: steps must be a non-negative int, got {steps!r}")


def linspace(start: float, end: float, steps: int, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from start to end inclusive."""
    _check_steps("linspace", steps)
    if dtype is not None:
        for bound in (start, end):  # PyTorch writes the bounds in the dtype first: 300 into uint8 is an error
            checked_array("linspace", bound, _dtype.to_dtype(dtype))
    return _place(spaced_values(start, end, steps, _float_dtype(dtype)), device, requires_grad, dtype)


def logspace(start: float, end: float, steps: int, base: float = 10.0, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """`steps` values from base ** start to base ** end, evenly spaced in the exponent.

    >>> numdiff.logspace(0, 2, 3)
    tensor([  1.,  10., 100.])
    """
    _check_steps("logspace", steps)
    exponents = np.linspace(start, end, steps, dtype=np.float64)
    return _place(np.power(float(base), exponents).astype(_float_dtype(dtype)), device, requires_grad, dtype)


def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A 2-D identity matrix."""
    for name, value in (("n", n), ("m", m)):
        if (value is not None or name == "n") and not is_int(value):
            raise TypeError(f"eye: {name} must be an int, got {value!r} ({type(value).__name__})")
    return _place(np.eye(n, m, dtype=_float_dtype(dtype)), device, requires_grad, dtype)


def _floating_only(op: str, dtype: Any) -> None:
    """rand and randn draw floats: an integer or bool dtype is refused, as in PyTorch (its values
    would be all zeros, or truncated normals)."""
    if dtype is not None and not _dtype.to_dtype(dtype).is_floating_point:
        raise TypeError(f"{op}: expected a floating point dtype, got {_dtype.to_dtype(dtype)!r}; use randint for integers")


@random_function
def _sample(draw: Any, shape: tuple, generator: Generator | None, device: Any, requires_grad: bool, dtype: Any) -> Tensor:
    """``draw(numpy_generator, shape)`` placed as a tensor. Under vmap(randomness='different') the
    shape gets those levels' batch sizes in front and the tensor is batched at them: one
    independent draw per batch entry."""
    if _on_meta(device):  # nothing is drawn: PyTorch's meta tensors leave the generator where it was
        return _meta(shape, dtype, requires_grad)
    source = rng(generator)
    levels, batch = different_levels()
    return batched_sample(_place(draw(source, batch + shape), device, requires_grad, dtype), levels)


def rand(*sizes: Any, size: Any = None, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    _floating_only("rand", dtype)
    numpy_dtype = _float_dtype(dtype)
    return _sample(
        lambda g, shape: g.random(shape, dtype=np.float64).astype(numpy_dtype),
        _shape(_sizes(sizes, size), "rand"), generator, device, requires_grad, dtype,
    )


def randn(*sizes: Any, size: Any = None, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Standard normal samples."""
    _floating_only("randn", dtype)
    numpy_dtype = _float_dtype(dtype)
    return _sample(lambda g, shape: g.standard_normal(shape).astype(numpy_dtype), _shape(_sizes(sizes, size), "randn"), generator, device, requires_grad, dtype)


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
    for name, bound in (("low", low), ("high", high)):
        if not -(1 << 63) <= bound < (1 << 63):
            raise ScalarOverflowError(f"randint: {name}={bound} does not fit int64")
    target = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    if not target.is_floating_point:
        low_limit, high_limit = (0, 1) if target is _dtype.bool_ else (_dtype_info.iinfo(target).min, _dtype_info.iinfo(target).max)
        if low < low_limit:
            raise ValueError(f"randint: low={low} is out of bounds for {target.name} (at least {low_limit})")
        if high - 1 > high_limit:
            raise ValueError(f"randint: high - 1 = {high - 1} is out of bounds for {target.name} (at most {high_limit})")
    numpy_dtype = _float_dtype(target)
    return _sample(
        lambda g, shape: g.integers(low, high, size=shape).astype(numpy_dtype),
        _shape((size,), "randint"), generator, device, requires_grad, target,
    )


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A random permutation of 0..n-1."""
    numpy_dtype = np.int64 if dtype is None else _dtype.to_dtype(dtype).numpy

    def draw(g: np.random.Generator, shape: tuple) -> np.ndarray:
        if len(shape) == 1:
            return g.permutation(n).astype(numpy_dtype)
        return g.permuted(np.broadcast_to(np.arange(n), shape), axis=-1).astype(numpy_dtype)

    return _sample(draw, (n,), generator, device, requires_grad, None)


def _like(fill, input: Tensor, dtype: Any, device: Any, requires_grad: bool, memory_format: Any = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    device = input.device if device is None else device
    result = fill(tuple(input.shape), dtype=dtype, device=device, requires_grad=requires_grad)
    if memory_format is None or memory_format is _memory_format.preserve_format:
        # Only a 4-D or 5-D host tensor that is not row-major can have a layout to preserve.
        if input.ndim not in (4, 5) or result.device.type != "cpu" or input._data.flags.c_contiguous:
            return result
        fmt = _memory_format.layout_of(tuple(input.shape), input.stride())
    else:
        fmt = _memory_format.checked(memory_format, "memory_format")
    if fmt is _memory_format.contiguous_format or result.device.type != "cpu":
        return result  # device arrays are stored row-major
    _memory_format.check_rank(fmt, result.ndim, "memory_format")
    laid_out = np.ascontiguousarray(result._data.transpose(fmt.order)).transpose(np.argsort(fmt.order))
    return _place(laid_out, result.device, requires_grad, result.dtype)


def zeros_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False, *, layout: Any = None, memory_format: Any = None) -> Tensor:
    """zeros with the shape (and by default dtype, device and memory layout) of `input`."""
    return _like(zeros, input, dtype, device, requires_grad, memory_format)


def ones_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False, *, layout: Any = None, memory_format: Any = None) -> Tensor:
    """ones with the shape (and by default dtype, device and memory layout) of `input`."""
    return _like(ones, input, dtype, device, requires_grad, memory_format)


def empty_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False, *, layout: Any = None, memory_format: Any = None) -> Tensor:
    """empty with the shape (and by default dtype, device and memory layout) of `input`."""
    return _like(empty, input, dtype, device, requires_grad, memory_format)


def full_like(input: Tensor, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """full with the shape (and by default dtype and device) of `input`."""
    dtype = input.dtype if dtype is None else dtype
    return full(tuple(input.shape), fill_value, dtype=dtype, device=device or input.device, requires_grad=requires_grad)


def rand_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False, *, generator: Generator | None = None, layout: Any = None, memory_format: Any = None) -> Tensor:
    """rand with the shape (and by default dtype and device) of `input`."""
    return rand(tuple(input.shape), generator=generator, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randn_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False, *, generator: Generator | None = None, layout: Any = None, memory_format: Any = None) -> Tensor:
    """randn with the shape (and by default dtype and device) of `input`."""
    return randn(tuple(input.shape), generator=generator, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None, memory_format: Any = None) -> Tensor:
    """randint with the shape (and by default dtype and device) of `input`: ``randint_like(x, high)``
    or ``randint_like(x, low, high)``."""
    if high is None:
        low, high = 0, low
    dtype = input.dtype if dtype is None else dtype
    return randint(low, high, tuple(input.shape), generator=generator, dtype=dtype, device=device or input.device, requires_grad=requires_grad)


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
