"""Snapshots of the Python state a traced function can reach, compared on every call.

`StateWalk.snap(value)` turns a value into a nested tuple that is equal for equal state:
numbers and strings by type and value, lists, tuples, dicts and sets by their items, NumPy
arrays by their bytes, plain objects (a config, ``cfg.inner.s``) by their attributes at any
depth, and tensors and Modules by identity (a tensor's data is read afresh on every call, its
host reads are guarded by the tracer; a Module's state is guarded by guards.py). User
functions met on the way (a helper the function calls, a hook in a list) are collected, so that
their own free names are guarded too. A walk that meets more than `limit` objects raises
`UnguardableStateError`, as does an iterator or generator (its next value is not in its state):
the compiled function then runs eagerly, since a guard it cannot afford would be one it cannot trust.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

from numdiff.backend import backend_for
from numdiff.tensor import Tensor

SCALAR_TYPES = (bool, int, float, complex, str, bytes, type(None))
# Code from these packages (and the standard library) is not the user's state: its functions and
# classes are guarded by identity, not walked.
_LIBRARY_ROOTS = frozenset(sys.stdlib_module_names) | {
    "numdiff", "numpy", "scipy", "numba", "llvmlite", "torch", "mpi4py", "pytest", "_pytest", "hypothesis",
}


class UnguardableStateError(RuntimeError):
    """The state a function reaches cannot be compared on every call (too large, an iterator)."""


def is_library(module_name: str | None) -> bool:
    """True for a module of the standard library or of numdiff and the packages it builds on."""
    return not module_name or module_name.split(".")[0] in _LIBRARY_ROOTS


def is_user_function(value: Any) -> bool:
    """True for a plain Python function defined outside numdiff, its dependencies and the stdlib."""
    return type(value) is types.FunctionType and not is_library(value.__globals__.get("__name__"))


def is_user_class(value: Any) -> bool:
    """True for a class defined outside numdiff, its dependencies and the standard library."""
    return isinstance(value, type) and not is_library(getattr(value, "__module__", None))


def _array_bytes(value: Any) -> tuple | None:
    """(dtype, shape, bytes) of a NumPy or device array, None for anything else: a class too,
    whose ``__array_interface__`` is the descriptor its instances read (``np.float64`` reached
    through a module's globals once broke the guard's snapshot with an unbound ``tobytes``)."""
    if isinstance(value, type):
        return None
    if getattr(value, "__array_interface__", None) is not None:
        return ("array", str(value.dtype), value.shape, value.tobytes())
    if getattr(value, "__cuda_array_interface__", None) is not None:
        return ("array", str(value.dtype), value.shape, backend_for(value).to_host(value).tobytes())
    return None


class StateWalk:
    """One walk over reachable state; `functions`, `modules` and `tensors` collect what it met."""

    def __init__(self, module_type: type, limit: int = 20000) -> None:
        self.module_type = module_type
        self.limit = limit
        self.count = 0
        self.visiting: set = set()
        self.functions: list = []
        self.modules: list = []
        self.tensors: list = []
        self.keep: list = []  # objects guarded by id() must outlive the guard

    def snap(self, value: Any) -> Any:
        self.count += 1
        if self.count > self.limit:
            raise UnguardableStateError(f"it reaches more than {self.limit} Python objects")
        kind = type(value)
        if kind in SCALAR_TYPES:
            return (kind, value)
        if isinstance(value, Tensor):
            self.tensors.append(value)
            return self._identity(value)
        if isinstance(value, self.module_type):
            self.modules.append(value)
            return self._identity(value)
        array = _array_bytes(value)
        if array is not None:
            return array
        if id(value) in self.visiting:  # a cycle: the object is being snapshotted further up
            return ("cycle", id(value))
        self.visiting.add(id(value))
        try:
            return self._compound(value, kind)
        finally:
            self.visiting.discard(id(value))

    def _identity(self, value: Any) -> tuple:
        self.keep.append(value)
        return ("id", id(value))

    def _compound(self, value: Any, kind: type) -> Any:
        if hasattr(kind, "__next__"):
            raise UnguardableStateError(f"it reads an iterator ({kind.__name__}), whose next value no guard can know")
        if kind in (list, tuple) or isinstance(value, (list, tuple)):
            return (kind, tuple(map(self.snap, value)))
        if isinstance(value, dict):
            return (kind, tuple((self.snap(k), self.snap(v)) for k, v in value.items()))
        if isinstance(value, (set, frozenset)):
            return (kind, frozenset(map(self.snap, value)))
        if kind is types.FunctionType:
            if is_user_function(value):
                self.functions.append(value)
            return self._identity(value)
        if kind is types.MethodType:
            return (kind, self.snap(value.__self__), self.snap(value.__func__))
        if kind is functools.partial:
            return (kind, self.snap(value.func), self.snap(value.args), self.snap(value.keywords))
        if isinstance(value, type):
            if is_user_class(value):
                return (kind, id(value), self._class_state(value))
            return self._identity(value)
        if isinstance(value, types.ModuleType) or kind is types.CellType:  # numdiff is a ModuleType subclass
            return self._identity(value)
        guarded_state = getattr(kind, "_compile_guarded_state", None)
        if guarded_state is not None:  # an optimizer: what its replayed step does not read afresh
            return (kind, id(value), self.snap(guarded_state(value)))
        if is_user_class(kind) or hasattr(value, "__dict__") and not callable(value):
            return (kind, id(value), self._attributes(value), self._class_state(kind))
        return self._identity(value)

    def _attributes(self, value: Any) -> tuple:
        state = getattr(value, "__dict__", None)
        parts = [self.snap(state)] if isinstance(state, dict) else []
        for cls in type(value).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if isinstance(name, str) and name not in ("__dict__", "__weakref__"):
                    parts.append((name, self.snap(getattr(value, name, None))))
        self.keep.append(value)
        return tuple(parts)

    def _class_state(self, cls: type) -> tuple:
        """A user class's own attributes (read through ``self.factor``); its methods' free names."""
        parts = []
        for klass in cls.__mro__:
            if not is_user_class(klass):
                continue
            for name, item in vars(klass).items():
                if name.startswith("__") and name.endswith("__") and type(item) is not types.FunctionType:
                    continue  # __module__, __doc__, __dict__; but __call__'s globals count
                if isinstance(item, (staticmethod, classmethod)):
                    item = item.__func__
                if type(item) is types.FunctionType:
                    if is_user_function(item):
                        self.functions.append(item)
                    continue
                if isinstance(item, property):
                    for accessor in (item.fget, item.fset):
                        if is_user_function(accessor):
                            self.functions.append(accessor)
                    continue
                parts.append((name, self.snap(item)))
        return tuple(parts)
