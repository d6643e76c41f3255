"""Tensor's conversions: to NumPy and Python values (``numpy``, ``item``, ``float(t)``, ``f"{t:.3f}"``)
and to another dtype or device (``to``, ``float``, ``double``, ``cpu``, ``cuda``, ...).

numdiff.tensor binds these functions as Tensor methods in its class body; they are written here
so the Tensor file keeps to the array and its autograd state. Each read of the values into Python
(`numpy`, `item`, `tolist`, ``float``/``int``/``bool``/``index``) tells this thread's innermost
interpreter first (`_host_read`): numdiff.compile's tracer refuses a read that a replay could not
repeat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from numdiff import _dtype, _memory_format
from numdiff._device import CPU, to_device
from numdiff.autograd.transform_state import anywhere, transforms
from numdiff.backend import backend_for, to_host

if TYPE_CHECKING:
    from numdiff.tensor import Tensor


def _host_read(self: Tensor, what: str) -> None:
    """Tell this thread's innermost interpreter that `what` reads `self`'s values into Python."""
    if anywhere.levels:
        top = transforms.interpreter
        if top is not None:
            top.host_read(self, what)


def numpy(self: Tensor, *, force: bool = False) -> np.ndarray:
    """The data as a NumPy array (shared memory on the CPU); `force` detaches first and copies from
    a device, as PyTorch's."""
    _host_read(self, "Tensor.numpy()")
    if self._requires_grad and not force:
        raise RuntimeError(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
        )
    if self._data.dtype == _dtype.BFLOAT16_STORAGE:
        raise TypeError(
            "Got unsupported ScalarType BFloat16: NumPy has no bfloat16, so numpy() cannot share "
            "this tensor's memory; use t.float().numpy() for a float32 copy"
        )
    if self.device.type == "meta":
        raise TypeError("can't convert meta device type tensor to numpy: a meta tensor has no values")
    return backend_for(self._data).to_host(self._data)


def host_values(self: Tensor) -> np.ndarray:
    """The values on the host as a NumPy array (bfloat16 widened, exactly, to float32)."""
    data = to_host(self._data)
    if data.dtype == _dtype.BFLOAT16_STORAGE:
        return _dtype.cast_array(data, _dtype.float32)
    return data


def as_numpy_array(self: Tensor, dtype: Any = None, copy: Any = None) -> np.ndarray:
    """``np.asarray(t)``: the NumPy array of `numpy`, cast to `dtype` if one is given."""
    array = self.numpy()
    return array if dtype is None else array.astype(dtype)


def item(self: Tensor) -> float | int | bool:
    """The value of a one-element tensor as a Python number.

    >>> numdiff.tensor([2.5]).item()
    2.5
    """
    _host_read(self, "Tensor.item()")
    if self._data.size != 1:
        raise RuntimeError(
            f"a Tensor with {self._data.size} elements cannot be converted to a Python scalar "
            f"(shape {tuple(self.shape)})"
        )
    return self._host_values().reshape(()).item()


def tolist(self: Tensor) -> Any:
    """The values as nested Python lists (a Python number for a 0-d tensor)."""
    _host_read(self, "Tensor.tolist()")
    return self._host_values().tolist()


def format_tensor(self: Tensor, format_spec: str) -> str:
    """A 0-d tensor formats as its Python number (``f"{loss:.4f}"``); others, as in PyTorch, take
    only an empty spec (their repr)."""
    if self._data.ndim == 0:
        return format(self.item(), format_spec)
    return object.__format__(self, format_spec)


def to_python_float(self: Tensor) -> float:
    _host_read(self, "Tensor.__float__()")
    return float(self.item())


def to_python_int(self: Tensor) -> int:
    _host_read(self, "Tensor.__int__()")
    return int(self.item())


def to_python_bool(self: Tensor) -> bool:
    _host_read(self, "Tensor.__bool__()")
    if self._data.size != 1:
        raise RuntimeError(f"Boolean value of Tensor with {self._data.size} elements is ambiguous")
    return bool(self.item())


def to_index(self: Tensor) -> int:
    _host_read(self, "Tensor.__index__()")
    if self._data.dtype.kind not in "iu" or self._data.size != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(self.item())


def to(
    self: Tensor, *args: Any, dtype: Any = None, device: Any = None, copy: bool = False, non_blocking: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Convert dtype and/or device: ``t.to(numdiff.float64)``, ``t.to("cuda")``, ``t.to(other)``.

    `non_blocking` is accepted: copies complete before `to` returns (there is no pinned memory to
    overlap them with). `memory_format` lays the result out in that format (numdiff.channels_last)."""
    from numdiff.tensor import Tensor

    for arg in args:
        if isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        elif isinstance(arg, (str, type(CPU))):
            device = arg
        elif isinstance(arg, bool):
            continue  # PyTorch's positional non_blocking / copy flags: copies here always complete
        else:
            dtype = arg
    from numdiff.ops.conversion import to_device_op, to_dtype_op

    result = self
    if dtype is not None and _dtype.to_dtype(dtype) is not self.dtype:
        result = to_dtype_op(result, _dtype.to_dtype(dtype))
    if device is not None and to_device(device) != self.device:
        result = to_device_op(result, to_device(device))
    if memory_format is not None and memory_format is not _memory_format.preserve_format:
        result = result.contiguous(memory_format=memory_format)
    if copy and result is self:
        result = self.clone()
    return result


def dtype_shortcut(name: str, dtype: _dtype.dtype) -> Any:
    """The method ``t.<name>()``, which is ``t.to(dtype)`` (``t.float()``, ``t.long()``, ...)."""

    def method(self: Tensor) -> Tensor:
        return self.to(dtype)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = f"This tensor as {dtype!r} (itself if it already is)."
    return method


def type_or_convert(self: Tensor, dtype: Any = None) -> Any:
    """PyTorch's type string (``"torch.FloatTensor"``, kept so ported checks compare equal), or
    a conversion: ``t.type(numdiff.float64)``, ``t.type("torch.DoubleTensor")``."""
    if dtype is None:
        prefix = "torch.cuda." if self.is_cuda else "torch."
        return prefix + self.dtype.tensor_type
    return self.to(dtype=_dtype.to_dtype(dtype))


def cpu(self: Tensor, memory_format: Any = None) -> Tensor:
    return self.to("cpu")


def cuda(self: Tensor, device: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Tensor:
    return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))
