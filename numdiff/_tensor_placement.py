"""Tensor attributes about where a tensor lives and how it is laid out, as PyTorch programs query
them: ``is_xpu`` and the other ``is_<device>`` flags (numdiff has the CPU, CUDA and meta devices
only, so they are False), ``is_meta``, ``is_sparse``/``is_quantized`` (False: a Tensor is dense;
numdiff.sparse has the sparse types), ``pin_memory()``/``is_pinned()`` (no page-locked memory: a no-op and False), and
``share_memory_()``/``is_shared()`` through numdiff.multiprocessing."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from numdiff._shared_memory import in_shared_memory, move_to_shared_memory
from numdiff.tensor import Tensor

_ABSENT_DEVICES = ("xpu", "mps", "ipu", "hpu", "mtia", "vulkan", "mkldnn", "xla", "maia")
_ABSENT_LAYOUTS = ("sparse", "sparse_csr", "quantized", "nested")  # a dense tensor's; see numdiff.sparse


def _sparse() -> ModuleType:
    # numdiff.sparse (and its ops) load on the first sparse conversion or layout read, not at
    # `import numdiff`; numdiff.sparse builds on the Tensor methods attached from this module.
    return importlib.import_module("numdiff.sparse")


def _false(name: str) -> property:
    return property(lambda self: False, doc=f"Whether the tensor is {name}: never, in numdiff.")


def pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """This tensor: numdiff has no page-locked host memory to copy into (PyTorch returns a
    pinned copy; the values are the same)."""
    return self


def is_pinned(self: Tensor, device: Any = None) -> bool:
    """False: numdiff never pins host memory."""
    return False


def share_memory_(self: Tensor) -> Tensor:
    """Move this CPU tensor's storage into shared memory, in place, so that processes started
    afterwards (numdiff.multiprocessing) see each other's writes; a no-op when it is already shared."""
    move_to_shared_memory(self)
    return self


def is_shared(self: Tensor) -> bool:
    """Whether the storage lives in shared memory (after share_memory_)."""
    return in_shared_memory(self)


def to_sparse(self: Tensor, sparse_dims: int | None = None, *, layout: Any = None) -> Any:
    """The COO sparse form of this dense tensor (numdiff.sparse.to_sparse)."""
    return _sparse().to_sparse(self, sparse_dims, layout=layout)


def to_sparse_coo(self: Tensor) -> Any:
    return _sparse().to_sparse(self)


def to_sparse_csr(self: Tensor, dense_dim: int | None = None) -> Any:
    """The CSR sparse form of this 2-D dense tensor (numdiff.sparse.to_sparse_csr)."""
    return _sparse().to_sparse_csr(self, dense_dim)


def is_meta(self: Tensor) -> bool:
    """Whether the tensor is on the meta device (a shape and a dtype, no values)."""
    return self.device.type == "meta"


PLACEMENT_ATTRIBUTES: dict[str, Any] = {
    "layout": property(lambda self: _sparse().strided, doc="numdiff.strided: numdiff tensors are dense."),
    "to_sparse": to_sparse,
    "to_sparse_coo": to_sparse_coo,
    "to_sparse_csr": to_sparse_csr,
    "is_meta": property(is_meta, doc=is_meta.__doc__),
    "to_dense": lambda self, dtype=None: self if dtype is None else self.to(dtype),
    **{f"is_{name}": _false(f"on a {name} device") for name in _ABSENT_DEVICES},
    **{f"is_{name}": _false(name) for name in _ABSENT_LAYOUTS},
    "pin_memory": pin_memory,
    "is_pinned": is_pinned,
    "share_memory_": share_memory_,
    "is_shared": is_shared,
}
