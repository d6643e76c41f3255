"""numdiff.multiprocessing: Python's multiprocessing, with tensors that processes share.

Everything of the standard module is here under the same names (``Process``, ``Queue``,
``set_start_method``, ``get_context``, ...). On top of it:

- ``t.share_memory_()`` (and ``module.share_memory()``) moves a CPU tensor's storage into a
  POSIX shared-memory segment, in place. Processes started afterwards see each other's writes,
  whatever the start method: a forked child inherits the mapping, and a tensor pickled to a
  spawned child (as a ``Process`` argument or through a ``Queue``) is sent as the segment's
  name and reopened there, not copied. That is what Hogwild training needs: every worker's
  optimizer steps update the one set of parameters.
- Tensors not in shared memory are pickled by value, as with ``pickle``.

Segments live until the process that created them exits. CUDA tensors are not moved
(``share_memory_`` is a no-op on them, as in PyTorch).

>>> model.share_memory()
>>> workers = [numdiff.multiprocessing.Process(target=train, args=(model,)) for _ in range(4)]
"""

from __future__ import annotations

import multiprocessing as _stdlib_multiprocessing
from multiprocessing import resource_tracker, shared_memory
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from numdiff._shared_memory import segment_of, segments
from numdiff.backend import CPU, backend_for
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor


def _attach(name: str) -> shared_memory.SharedMemory:
    segment = segments.get(name)
    if segment is None:
        segment = shared_memory.SharedMemory(name=name)
        # The creating process owns the segment; without this the tracker of a process that only
        # opened it would unlink it when that process exits.
        resource_tracker.unregister(segment._name, "shared_memory")
        segments[name] = segment
    return segment


def _rebuild_shared(name: str, offset: int, dtype: str, shape: tuple[int, ...], strides: tuple[int, ...],
                    requires_grad: bool, parameter: bool) -> Tensor:
    segment = _attach(name)
    data = np.ndarray(shape, np.dtype(dtype), buffer=segment.buf, offset=offset, strides=strides)
    if parameter:
        return Parameter(Tensor._wrap(data, None, None), requires_grad=requires_grad)
    t = Tensor._wrap(data, None, None)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t: Tensor) -> tuple[Any, tuple[Any, ...]]:
    where = segment_of(t._data) if backend_for(t._data) is CPU else None
    if where is None:
        return t.__reduce_ex__(4)
    name, offset = where
    array = t._data
    return _rebuild_shared, (name, offset, array.dtype.str, array.shape, array.strides, bool(t.requires_grad),
                             isinstance(t, Parameter))


ForkingPickler.register(Tensor, _reduce_tensor)
ForkingPickler.register(Parameter, _reduce_tensor)


def __getattr__(name: str) -> Any:
    """The standard multiprocessing module's names (Process, Queue, set_start_method, ...)."""
    return getattr(_stdlib_multiprocessing, name)
