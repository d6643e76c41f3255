"""Loading a checkpoint that PyTorch wrote (``torch.save``'s zip format), without torch.

The zip holds ``<archive>/data.pkl``, a pickle whose tensors are persistent ids
``("storage", StorageType, key, location, numel)`` naming the raw member ``<archive>/data/<key>``,
rebuilt by ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)``. Here the
pickle runs under `RestrictedUnpickler`: PyTorch's rebuild functions, storage types, dtypes and
``torch.device`` resolve to numdiff's own stand-ins, plain types and the `safe_globals`
allow-list resolve as usual, and anything else is refused (``weights_only=True``, the default)
or, with ``weights_only=False``, imported with ``torch.`` read as ``numdiff.``.

Every storage is checked before use: its member holds exactly ``numel`` elements of its type, and
each tensor's offset, sizes and strides stay inside its storage. Tensors are copied out of their
storage (views that shared one in PyTorch load as separate tensors).
"""

from __future__ import annotations

import importlib
import io
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._checkpoint_archive import CheckpointArchive, CheckpointError
from numdiff._device import device
from numdiff._safe_unpickle import RestrictedUnpickler, allowed_globals
from numdiff.tensor import Tensor

_STORAGE_DTYPES = {
    "DoubleStorage": _dtype.float64, "FloatStorage": _dtype.float32, "HalfStorage": _dtype.float16,
    "BFloat16Storage": _dtype.bfloat16, "LongStorage": _dtype.int64, "IntStorage": _dtype.int32,
    "ShortStorage": _dtype.int16, "CharStorage": _dtype.int8, "ByteStorage": _dtype.uint8,
    "BoolStorage": _dtype.bool_, "UntypedStorage": _dtype.uint8,
}  # fmt: skip
_TORCH_DTYPES = {
    **{d.name: d for d in _dtype.ALL_DTYPES}, **_dtype.ALIAS_NAMES, "bool": _dtype.bool_,
}


def is_torch_archive(archive: CheckpointArchive) -> bool:
    """Whether the zip is PyTorch's format (one ``<archive>/data.pkl`` member)."""
    return any(name.endswith("data.pkl") and name.count("/") == 1 for name in archive.member_names())


class _StorageType:
    """What a pickle's ``torch.FloatStorage`` (etc.) global resolves to: the element dtype."""

    def __init__(self, dtype: _dtype.dtype) -> None:
        self.dtype = dtype


class _Storage:
    """One loaded storage: its flat host array and the device PyTorch saved it on."""

    def __init__(self, array: np.ndarray, location: str) -> None:
        self.array, self.location = array, location


class _TorchArchiveLoader:
    def __init__(self, archive: CheckpointArchive, target_device: Callable[[Any], device], weights_only: bool) -> None:
        self.archive, self.target_device, self.weights_only = archive, target_device, weights_only
        pickle_name = next(n for n in archive.member_names() if n.endswith("data.pkl") and n.count("/") == 1)
        self.prefix = pickle_name[: -len("data.pkl")]
        self.pickle_name = pickle_name
        self.little_endian = True
        if self.prefix + "byteorder" in archive.member_names():
            order = archive.read_raw(self.prefix + "byteorder").tobytes()
            if order not in (b"little", b"big"):
                raise archive.fail(f"unknown byte order {order[:20]!r}", self.prefix + "byteorder")
            self.little_endian = order == b"little"
        self.storages: dict[str, _Storage] = {}
        self.allowed = allowed_globals()
        self.own = {
            ("torch._utils", "_rebuild_tensor_v2"): self._rebuild_tensor,
            ("torch._utils", "_rebuild_tensor"): self._rebuild_tensor,
            ("torch._utils", "_rebuild_parameter"): self._rebuild_parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): self._rebuild_parameter,
            ("torch", "device"): device,
            ("torch", "Size"): tuple,
        }

    def resolve(self, module: str, name: str) -> Any:
        found = self.own.get((module, name)) or self.allowed.get((module, name))
        if found is not None:
            return found
        if module in ("torch", "torch.storage") and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        if module == "torch" and name in _TORCH_DTYPES:
            return _TORCH_DTYPES[name]
        if not self.weights_only and (module == "torch" or module.startswith("torch.")):
            return getattr(importlib.import_module("numdiff" + module[len("torch"):]), name)
        return None

    def persistent(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise self.archive.fail(f"unknown persistent id {pid!r:.80}", self.pickle_name)
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, _StorageType) or not isinstance(key, str) or type(numel) is not int:
            raise self.archive.fail(f"malformed storage reference {pid!r:.80}", self.pickle_name)
        if key not in self.storages:
            numpy_dtype = storage_type.dtype.numpy
            read_as = np.dtype(np.uint16) if storage_type.dtype is _dtype.bfloat16 else numpy_dtype
            read_as = read_as.newbyteorder("<" if self.little_endian else ">")
            array = self.archive.read_raw(f"{self.prefix}data/{key}", read_as)
            if storage_type.dtype is not _dtype.uint8 and array.size != numel:
                raise self.archive.fail(f"storage {key} holds {array.size} elements, its reference says {numel}")
            array = array.astype(read_as.newbyteorder("="), copy=False)
            self.storages[key] = _Storage(array.view(numpy_dtype), str(location))
        return self.storages[key]

    def _rebuild_tensor(self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                        backward_hooks: Any = None, metadata: Any = None) -> Tensor:
        if not isinstance(storage, _Storage):
            raise self.archive.fail("a tensor is rebuilt from something that is not a storage", self.pickle_name)
        shape, steps = tuple(size), tuple(stride)
        if not all(type(v) is int and v >= 0 for v in (offset, *shape, *steps)) or len(shape) != len(steps):
            raise self.archive.fail(f"bad tensor geometry offset={offset!r} size={size!r} stride={stride!r}")
        last = offset + sum((n - 1) * s for n, s in zip(shape, steps)) if all(shape) else offset - 1
        if last >= storage.array.size:
            raise self.archive.fail(
                f"a tensor of size {shape} and stride {steps} at offset {offset} reaches past its storage "
                f"of {storage.array.size} elements"
            )
        flat = storage.array
        item = flat.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(flat[offset:], shape, tuple(s * item for s in steps), writeable=False)
        data = np.array(view)  # an own, C-ordered copy
        target = self.target_device(storage.location)
        if target.type != "cpu":
            from numdiff.cuda import move_array

            data = move_array(data, target)
        t = Tensor._wrap(data, None, None)
        if requires_grad is True and t.is_floating_point():
            t.requires_grad_(True)
        return t

    def _rebuild_parameter(self, data: Tensor, requires_grad: Any, backward_hooks: Any, state: Any = None) -> Tensor:
        from numdiff.nn.parameter import Parameter

        return Parameter(data.detach(), requires_grad=requires_grad is True and data.is_floating_point())

    def load(self) -> Any:
        raw = self.archive.read_raw(self.pickle_name).tobytes()
        unpickler = RestrictedUnpickler(io.BytesIO(raw), self.archive.source, self.resolve, self.persistent,
                                        self.weights_only)
        try:
            return unpickler.load()
        except (pickle.UnpicklingError, CheckpointError):
            raise
        except (EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError, RecursionError) as err:
            raise self.archive.fail(f"its pickle does not load: {type(err).__name__}: {err}", self.pickle_name) from None


def load_torch_archive(archive: CheckpointArchive, target_device: Callable[[Any], device], weights_only: bool) -> Any:
    """The object of a PyTorch zip checkpoint (see the module docstring)."""
    return _TorchArchiveLoader(archive, target_device, weights_only).load()

