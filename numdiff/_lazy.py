"""Modules that load when first used, so that `import numdiff` stays cheap.

Numba (with LLVM), SciPy's LAPACK and numdiff's kernel modules take most of a cold import, yet a
script that only builds tensors never calls a kernel. A module named here is bound at module level
like any import, but its code runs on the first attribute access::

    conv = lazy_module("numdiff.kernels.conv")   # nothing imported yet
    conv.conv2d_forward(...)                      # imports numdiff.kernels.conv, then calls

After that first access the object is an ordinary module (its class is swapped back), so later
accesses cost what a plain module's do. A module that is already imported is returned as it is.
Unlike the standard library's ``importlib.util.LazyLoader`` (before Python 3.12), the first access
holds a lock: a second thread waits for the module's code to finish instead of reading a
half-run module.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
from types import ModuleType

__all__ = ["lazy_module"]

_LOAD_LOCK = threading.RLock()
_running: set[int] = set()  # ids of lazy modules whose code is running now (in the lock's thread)


class _LazyModule(ModuleType):
    """A module whose code runs on its first attribute access; then it becomes a plain module."""

    def __getattribute__(self, attr: str) -> object:
        with _LOAD_LOCK:
            if type(self) is _LazyModule and id(self) not in _running:
                _running.add(id(self))
                try:
                    object.__getattribute__(self, "__spec__").loader.exec_module(self)
                    self.__class__ = ModuleType
                finally:
                    _running.discard(id(self))
        return ModuleType.__getattribute__(self, attr)


def lazy_module(name: str) -> ModuleType:
    """The module `name`, executed on its first attribute access instead of now.

    A parent package that is not imported yet is made lazy the same way (``multiprocessing`` for
    ``multiprocessing.shared_memory``), with the child bound as its attribute, as an import would.
    A name that does not exist raises ModuleNotFoundError here, not at first use.

    >>> linalg = lazy_module("scipy.linalg")
    >>> linalg.__name__
    'scipy.linalg'
    """
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    parent_name, _, child = name.rpartition(".")
    parent = lazy_module(parent_name) if parent_name else None
    if parent is None:
        spec = importlib.util.find_spec(name)
    else:  # the parent's __spec__ is read without running it (a lazy module runs on other attributes)
        locations = object.__getattribute__(parent, "__spec__").submodule_search_locations
        spec = importlib.machinery.PathFinder.find_spec(name, locations) if locations is not None else None
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"lazy_module: no module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _LazyModule
    sys.modules[name] = module
    if parent is not None:
        setattr(parent, child, module)  # as the import system binds a submodule on its package
    return module
