"""torch.nn.DataParallel on numdiff: one process drives one device.

PyTorch's DataParallel splits a batch over several GPUs of one process. With no GPU, or one,
it calls the wrapped module directly (moving the inputs to that GPU first), and that is what
this does. numdiff does not drive several GPUs from one process, so more than one device id
is refused, naming DistributedDataParallel (one rank per device, under mpiexec) instead. The
wrapper keeps PyTorch's ``module.`` prefix in `state_dict` keys, so checkpoints written from a
wrapped model load in both libraries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numdiff import cuda
from numdiff.nn.modules.module import Module


def _device_ids(op: str, device_ids: Sequence[Any] | None) -> list[int]:
    if device_ids is None:
        return [0] if cuda.is_available() else []
    ids = [int(getattr(d, "index", d) or 0) for d in device_ids]
    if len(ids) > 1:
        raise NotImplementedError(
            f"{op}: device_ids={list(device_ids)} asks one process to drive {len(ids)} devices; numdiff runs "
            "one device per process. Use numdiff.nn.parallel.DistributedDataParallel with one rank per device "
            "(python -m numdiff.distributed.run --nproc-per-node N train.py)"
        )
    if ids and not cuda.is_available():
        raise RuntimeError(f"{op}: device_ids={list(device_ids)} names a CUDA device, but CUDA is not available")
    return ids


def _to(value: Any, device: str) -> Any:
    if hasattr(value, "to") and hasattr(value, "device"):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    return value


class DataParallel(Module):
    """Wrap `module` as PyTorch's DataParallel does on a machine with at most one GPU.

    >>> import numdiff, numdiff.nn as nn
    >>> model = nn.DataParallel(nn.Linear(3, 2))
    >>> model(numdiff.randn(4, 3)).shape
    numdiff.Size([4, 2])
    >>> sorted(model.state_dict())
    ['module.bias', 'module.weight']
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = _device_ids("DataParallel", device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.device_ids:
            device = f"cuda:{self.device_ids[0]}"
            inputs, kwargs = _to(inputs, device), _to(kwargs, device)
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: dict[str, Any] | None = None) -> Any:
    """The functional form: run `module` on `inputs` as `DataParallel(module, device_ids)` would.

    >>> import numdiff, numdiff.nn as nn
    >>> nn.parallel.data_parallel(nn.Linear(3, 2), numdiff.randn(4, 3)).shape
    numdiff.Size([4, 2])
    """
    ids = _device_ids("data_parallel", device_ids)
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    kwargs = dict(module_kwargs or {})
    if ids:
        inputs, kwargs = _to(inputs, f"cuda:{ids[0]}"), _to(kwargs, f"cuda:{ids[0]}")
    return module(*inputs, **kwargs)
