"""Module's dtype and device conversions (``to``, ``float``, ``cuda``, ``to_empty``...), kept apart
from the registration and calling machinery in module.py: they change with numdiff's devices and
dtypes, not with how layers are registered."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from numdiff import _dtype
from numdiff._device import device as device_type
from numdiff._device import to_device
from numdiff.autograd.grad_mode import no_grad
from numdiff.creation import empty
from numdiff.tensor import Tensor

if TYPE_CHECKING:
    from numdiff.nn.modules.module import Module


class ModulePlacement:
    """The conversions every Module has; methods walk ``self.modules()``, so they apply to the tree."""

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Convert every parameter, gradient and buffer with `fn`, keeping Parameter objects."""
        for module in self.modules():
            for param in module._parameters.values():
                if param is None:
                    continue
                with no_grad():
                    param.data = fn(param.detach())
                    if param._grad is not None:
                        grad = fn(param._grad.detach())
                        if grad._data is not param._grad._data:
                            param._grad = grad
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    with no_grad():
                        module._buffers[name] = fn(buffer)
        return self

    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
           memory_format: Any = None) -> Module:
        """Move and/or cast parameters and buffers in place: ``m.to(numdiff.float64)``, ``m.to("cuda")``.

        A dtype applies to floating point tensors only (integer buffers keep theirs). `non_blocking`
        is accepted as in Tensor.to; `memory_format` (channels_last) lays out the 4-D (5-D for
        channels_last_3d) parameters and buffers so, as PyTorch's.
        """
        for arg in args:
            if isinstance(arg, Tensor):
                dtype, device = arg.dtype, arg.device
            elif isinstance(arg, (str, device_type)):
                device = arg
            elif isinstance(arg, bool):
                continue  # PyTorch's positional non_blocking flag
            else:
                dtype = arg
        if dtype is not None:
            dtype = _dtype.to_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(f"Module.to only accepts floating point dtypes, but got desired dtype={dtype!r}")
        target = to_device(device) if device is not None else None

        layout = memory_format if memory_format is not None and getattr(memory_format, "rank", None) else None

        def convert(t: Tensor) -> Tensor:
            converted = t.to(dtype=dtype if t.is_floating_point() else None, device=target)
            if layout is not None and converted.ndim == layout.rank:  # 4-D weights for channels_last
                converted = converted.contiguous(memory_format=layout)
            return converted

        return self._apply(convert)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Give every parameter and buffer new, uninitialised storage on `device` (shapes and dtypes
        kept): how a model built on the meta device gets memory before its weights are loaded.

        >>> numdiff.nn.Linear(3, 2, device="meta").to_empty(device="cpu").weight.device
        device(type='cpu')
        """
        target = to_device(device)
        modules = self.modules() if recurse else (self,)
        for module in modules:
            for param in module._parameters.values():
                if param is not None:
                    param.data = empty(tuple(param.shape), dtype=param.dtype, device=target)
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    module._buffers[name] = empty(tuple(buffer.shape), dtype=buffer.dtype, device=target)
        return self

    def float(self) -> Module:
        return self.to(_dtype.float32)

    def double(self) -> Module:
        return self.to(_dtype.float64)

    def half(self) -> Module:
        return self.to(_dtype.float16)

    def bfloat16(self) -> Module:
        return self.to(_dtype.bfloat16)

    def share_memory(self) -> Module:
        """Move every parameter and buffer into shared memory (``Tensor.share_memory_``), for
        processes of numdiff.multiprocessing to train one model together (Hogwild)."""
        for t in (*self.parameters(), *self.buffers()):
            t.share_memory_()
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device: int | str | None = None, non_blocking: bool = False) -> Module:
        return self.to(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))
