"""numdiff.save's encoder: an object as the JSON node tree of numdiff's checkpoint index, with the
arrays to store beside it (numdiff.serialization describes the format and reads it back)."""

from __future__ import annotations

import io
import pickle
from collections import OrderedDict
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._device import device
from numdiff.backend import backend_for, is_numpy
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Size, Tensor

_ARRAY_KINDS = "biufc"


def _c_order(array: np.ndarray) -> np.ndarray:
    """`array`, or a C-ordered copy of it (np.ascontiguousarray would turn 0-d into 1-d)."""
    return array if array.flags.c_contiguous else array.copy(order="C")


class Encoder:
    """Turns an object into a JSON-able node tree, collecting arrays to store."""

    def __init__(self, pickle_module: Any = pickle, pickle_protocol: int = 4) -> None:
        self.pickle_module, self.pickle_protocol = pickle_module, pickle_protocol
        self.arrays: dict[str, np.ndarray] = {}
        self._names: dict[int, str] = {}
        self._keep_alive: list[Any] = []  # ids stay unique only while the objects live
        self._open: set[int] = set()  # ids of the containers being encoded, outermost to current

    def _store(self, obj: Any, array: np.ndarray) -> tuple[str, bool]:
        name = self._names.get(id(obj))
        if name is not None:
            return name, False
        name = f"a{len(self.arrays)}"
        self._names[id(obj)] = name
        self._keep_alive.append(obj)
        self.arrays[name] = array
        return name, True

    def encode(self, obj: Any, where: str) -> list[Any]:
        if obj is None:
            return ["none"]
        if isinstance(obj, (bool, np.bool_)):
            return ["bool", bool(obj)]
        if isinstance(obj, (int, np.integer)):
            return ["int", int(obj)]
        if isinstance(obj, (float, np.floating)):
            return ["float", repr(float(obj))]
        if isinstance(obj, str):
            return ["str", obj]
        if isinstance(obj, Tensor):
            return self._tensor(obj, where)
        if is_numpy(obj):
            if obj.dtype.kind not in _ARRAY_KINDS:
                raise TypeError(f"numdiff.save: cannot save a NumPy array of dtype {obj.dtype} at {where}")
            name, _ = self._store(obj, _c_order(obj))
            return ["ndarray", name]
        if isinstance(obj, _dtype.dtype):
            return ["dtype", obj.name]
        if isinstance(obj, device):
            return ["device", str(obj)]
        if isinstance(obj, Size):
            return ["size", [int(n) for n in obj]]
        if type(obj) in (list, tuple) or isinstance(obj, dict):
            if id(obj) in self._open:
                raise TypeError(f"numdiff.save: the {type(obj).__name__} at {where} contains itself; "
                                "a checkpoint holds trees of containers, not cycles")
            self._open.add(id(obj))
            try:
                return self._container(obj, where)
            finally:
                self._open.discard(id(obj))
        return self._pickled(obj, where)

    def _pickled(self, obj: Any, where: str) -> list[Any]:
        """Any other object (a whole module, an optimizer, a user's class): a pickle member whose
        tensors, arrays, dtypes, devices and sizes are nodes of this index (persistent ids), so
        they are stored and checked as in a state dict. Loading it needs the allow-list."""
        buffer = io.BytesIO()
        pickler = self.pickle_module.Pickler(buffer, protocol=self.pickle_protocol)
        pickler.persistent_id = lambda value: self._persistent_node(value, where)
        try:
            pickler.dump(obj)
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            raise TypeError(f"numdiff.save: cannot save the {type(obj).__name__} at {where}: {err}") from err
        name, _ = self._store(buffer, np.frombuffer(buffer.getvalue(), dtype=np.uint8))
        return ["pickle", name]

    def _persistent_node(self, value: Any, where: str) -> list[Any] | None:
        numeric_array = is_numpy(value) and value.dtype.kind in _ARRAY_KINDS
        if isinstance(value, (Tensor, _dtype.dtype, device, Size)) or numeric_array:
            return self.encode(value, where)
        return None

    def _container(self, obj: Any, where: str) -> list[Any]:
        if type(obj) in (list, tuple):
            kind = "list" if isinstance(obj, list) else "tuple"
            return [kind, [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]]
        if type(obj) in (dict, OrderedDict):
            kind = "odict" if isinstance(obj, OrderedDict) else "dict"
            items = []
            for key, value in obj.items():
                if isinstance(key, (Tensor, list, dict)) or is_numpy(key):
                    raise TypeError(
                        f"numdiff.save: dict key of type {type(key).__name__} at {where} is not supported"
                    )
                items.append([self.encode(key, where), self.encode(value, f"{where}[{key!r}]")])
            return [kind, items]
        return self._container(dict(obj), where)  # dict subclasses such as Counter save as plain dicts

    def _tensor(self, t: Tensor, where: str) -> list[Any]:
        data = t._data
        host = _c_order(backend_for(data).to_host(data))
        if host.dtype == _dtype.BFLOAT16_STORAGE:
            host = host.view(np.uint16)  # bfloat16's bit patterns, as a numeric member load can check
        name, _ = self._store(t, host)

        meta = {
            "array": name,
            "dtype": t.dtype.name,
            "shape": list(t.shape),
            "device": str(t.device),
            "requires_grad": bool(t.requires_grad),
            "parameter": isinstance(t, Parameter),
        }
        return ["tensor", meta]
