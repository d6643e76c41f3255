"""One optimizer step of one parameter group as one fused kernel call (SGD, Adam, AdamW, RMSprop,
Adagrad): the parameters' flat arrays, float16/bfloat16 widened to float32, and the empty
array that stands for a state buffer an option turns off."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.backend import is_host
from numdiff.tensor import Tensor

_EMPTY: dict[Any, np.ndarray] = {}


def unused_buffer(flat_param: Any) -> Any:
    """An empty array of the parameter's type and dtype, for a state buffer an option turns off.

    On the CPU it is a separate array, not ``flat_param[:0]``: an empty view shares the parameter's
    address, so the kernel's runtime overlap check (which cannot know the buffer is never touched)
    fails and LLVM runs the scalar copy of the loop (Adam over 400k float32: 2.0 ms against 0.9).
    """
    if is_host(flat_param):
        empty = _EMPTY.get(flat_param.dtype)
        if empty is None:
            empty = _EMPTY[flat_param.dtype] = np.empty(0, flat_param.dtype)
        return empty
    return flat_param[:0]


_NARROW_FLOATS = (np.dtype(np.float16), _dtype.BFLOAT16_STORAGE)


class GroupUpdate:
    """One step of one parameter group as a single fused kernel call (numdiff.kernels.optim_foreach).

    :meth:`param` hands out each parameter's data as a flat contiguous array (a copy for a
    non-contiguous parameter); :meth:`add` queues its arrays; :meth:`run` updates them all, writes
    the copies back and bumps every parameter's version counter, as any in-place op does.
    """

    def __init__(self, name: str, flags: tuple[bool, ...]) -> None:
        from numdiff.kernels.optim_foreach import ForeachUpdate

        self._update = ForeachUpdate(name, flags)
        self._params: list[tuple[Tensor, Any]] = []
        self._narrow: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = []

    def param(self, param: Tensor) -> Any:
        data = param._data
        flat = (data if data.flags.c_contiguous else data.copy()).reshape(-1)
        self._params.append((param, flat))
        return flat

    def add(self, arrays: tuple[Any, ...], hyper: tuple[float, ...]) -> None:
        if arrays[0].dtype in _NARROW_FLOATS:
            # float16 and bfloat16 parameters (the kernels take float32/float64): the step runs on
            # float32 copies of the parameter, gradient and state, which run() rounds back, as
            # PyTorch's CPU optimizers compute half types in float.
            wide = tuple(_dtype.cast_array(a, _dtype.float32) for a in arrays)
            self._narrow.append((arrays, wide))
            arrays = wide
        self._update.add(arrays, hyper)

    def run(self) -> None:
        self._update.run()
        for narrow, wide in self._narrow:
            for index, (target, source) in enumerate(zip(narrow, wide)):
                if index != 1 and target.size:  # index 1 is the gradient, which is only read
                    target[...] = _dtype.cast_array(source, _dtype.from_numpy(target.dtype))
        for param, flat in self._params:
            data = param._data
            if not data.flags.c_contiguous:
                data[...] = flat.reshape(data.shape)
            param._version_counter[0] += 1
