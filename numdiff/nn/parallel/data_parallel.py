"""nn.DataParallel: PyTorch's single-process data parallelism, on the devices numdiff has.

Without a CUDA device (or with ``device_ids=[]``) it is the module itself, as in PyTorch. With
devices, the inputs go to ``device_ids[0]``, the module runs there on the whole batch, and the
outputs come back to `output_device`: numdiff does not replicate the module over several GPUs,
so the values are those of one replica (BatchNorm sees the whole batch instead of each slice).
"""

from __future__ import annotations

from typing import Any

from numdiff import cuda
from numdiff._device import device as Device  # noqa: N812 - the class, not an instance
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor


def _device_index(value: Any) -> int:
    if isinstance(value, int):
        return value
    return Device(value).index or 0


def _moved(value: Any, target: str) -> Any:
    if isinstance(value, Tensor):
        return value.to(target)
    if isinstance(value, (list, tuple)):
        moved = [_moved(v, target) for v in value]
        return type(value)(moved) if not hasattr(value, "_fields") else type(value)(*moved)
    if isinstance(value, dict):
        return {k: _moved(v, target) for k, v in value.items()}
    return value


class DataParallel(Module):
    """Run `module` on the batch, on ``device_ids[0]`` when there is a CUDA device.

    >>> net = numdiff.nn.DataParallel(numdiff.nn.Linear(4, 2))
    >>> net(numdiff.randn(8, 4)).shape
    numdiff.Size([8, 2])
    """

    def __init__(self, module: Module, device_ids: list | None = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel wraps an nn.Module, got {type(module).__name__}")
        self.module = module
        self.dim = dim
        if not cuda.is_available():
            self.device_ids: list[int] = []
            self.output_device = None
            return
        ids = list(range(cuda.device_count())) if device_ids is None else [_device_index(d) for d in device_ids]
        self.device_ids = ids
        self.output_device = None if not ids else _device_index(output_device if output_device is not None else ids[0])

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        target = f"cuda:{self.device_ids[0]}"
        for name, tensor in list(self.module.named_parameters()) + list(self.module.named_buffers()):
            if str(tensor.device) != target and not (target == "cuda:0" and str(tensor.device) == "cuda"):
                raise RuntimeError(
                    f"DataParallel: module must have its parameters and buffers on device {target} "
                    f"(device_ids[0]) but found {name} on device {tensor.device}"
                )
        output = self.module(*_moved(inputs, target), **_moved(kwargs, target))
        return _moved(output, f"cuda:{self.output_device}")
