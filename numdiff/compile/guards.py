"""Guards on the Python state a trace was made under: everything the function can reach.

A trace bakes in what Python decided while it ran: which tensor a closure variable named, the number
a global held (``x * scale``), an entry of a list or dict, a config's nested attribute
(``cfg.inner.s``), a NumPy array's values, which function a global name called and what that
helper's own globals held, and, for each Module the function reaches, its training flag, its
Parameters, buffers, submodules and hooks, its plain attributes (``eps``, a list of weights) and
its class's attributes (``self.factor`` defined on the class). A later call made under different
Python state must retrace, not replay the old graph.

Looked at: the function's closure cells, defaults and the globals its code names, its arguments,
and from there every user function, class, container and object reached (python_state.py
snapshots them), a bound method's object and a compiled Module's own module tree. Numbers and
strings are compared by value, containers and objects by their contents, tensors and Modules by
identity (a tensor's data is read afresh; a host read of its value, ``.item()``, is guarded by the
tracer). Code of numdiff, NumPy and the standard library is not walked.
"""

from __future__ import annotations

import dis
import types
from operator import getitem, is_
from typing import Any

from numdiff.compile.python_state import (
    SCALAR_TYPES,
    StateWalk,
    UnguardableStateError,
    is_library,
    is_user_class,
)
from numdiff.tensor import Tensor

_MODULE_TABLES = ("_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks")
# Module bookkeeping that no forward reads.
_MODULE_IGNORED = frozenset({"_non_persistent_buffers_set"})
_MISSING = object()


def _is_scalar(value: Any) -> bool:
    if type(value) is tuple:
        return all(type(item) in SCALAR_TYPES for item in value)
    return type(value) in SCALAR_TYPES


def _free_names(function: types.FunctionType) -> list:
    """(holder, name) of each closure cell (name None), default and global the code names, and of
    each attribute it reads of a user's module (``settings.scale``, ``config.model.depth``)."""
    found: list = [(cell, None) for cell in function.__closure__ or ()]
    found.extend((function, name) for name in ("__defaults__", "__kwdefaults__"))
    globals_ = function.__globals__
    found.extend((globals_, name) for name in sorted(_global_loads(function.__code__)) if name in globals_)
    for chain in sorted(_attribute_chains(function.__code__)):
        holder = globals_.get(chain[0])
        for name in chain[1:]:
            if not isinstance(holder, types.ModuleType) or is_library(holder.__name__):
                break
            found.append((vars(holder), name))
            holder = vars(holder).get(name)
    return found


def _attribute_chains(code: types.CodeType) -> set:
    """(global, attribute, ...) for each ``name.attr.attr`` the code (or nested code) reads."""
    chains, chain = set(), None
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and chain is not None:
            chain.append(ins.argval)
            continue
        if chain is not None and len(chain) > 1:
            chains.add(tuple(chain))
        chain = [ins.argval] if ins.opname == "LOAD_GLOBAL" else None
    if chain is not None and len(chain) > 1:
        chains.add(tuple(chain))
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            chains |= _attribute_chains(constant)
    return chains


def _global_loads(code: types.CodeType) -> set:
    """Names the code (and its nested lambdas and comprehensions) loads as globals.

    Not ``co_names``, which also lists attribute names: a global ``data`` rebound every step
    must not retrace a function that only reads ``p.data``.
    """
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _global_loads(constant)
    return names


def _read(holder: Any, name: str | None) -> Any:
    if name is None:
        try:
            return holder.cell_contents
        except ValueError:  # an empty cell
            return _MISSING
    if isinstance(holder, (dict, types.MappingProxyType)):
        return holder.get(name, _MISSING)
    return getattr(holder, name, _MISSING)


class _ModuleState:
    """Each module's plain attributes by value, and its plain tensor attributes (``self.mask``, not
    a buffer), its tables (Parameters, buffers, submodules, hooks) and their entries by identity.

    Everything is listed once, as (dict, key) pairs, so that a call checks them all in a few
    C-level passes (``map`` over ``operator.getitem``/``is_``): 2-3 us for a ten-module network,
    against 13 us for a Python loop building a tuple per module, and ~750 us for its compiled
    call. A table that gains or loses an entry changes length; a deleted attribute or entry
    raises KeyError: both fail the guard. Attributes of other kinds (a list of weights, a config
    object) are compared by PythonGuard's snapshots.
    """

    def __init__(self, modules: list) -> None:
        plain, objects, self.tables = [], [], []
        for module in modules:
            state = module.__dict__
            self.tables.append(state)  # an attribute added later (getattr(self, "boost", 1.0))
            for name, value in state.items():
                if name in _MODULE_TABLES or isinstance(value, Tensor):
                    objects.append((state, name))
                elif _is_scalar(value):
                    plain.append((state, name))
            for name in _MODULE_TABLES:
                table = state.get(name)
                if isinstance(table, dict):
                    self.tables.append(table)
                    objects.extend((table, key) for key in table)
        self.plain_dicts, self.plain_keys = [d for d, _ in plain], [k for _, k in plain]
        self.object_dicts, self.object_keys = [d for d, _ in objects], [k for _, k in objects]
        self.plain_values = self._plain()
        self.objects = list(map(getitem, self.object_dicts, self.object_keys))
        self.lengths = list(map(len, self.tables))

    def _plain(self) -> list:
        return list(map(getitem, self.plain_dicts, self.plain_keys))

    def holds(self) -> bool:
        try:
            return (
                list(map(len, self.tables)) == self.lengths
                and all(map(is_, map(getitem, self.object_dicts, self.object_keys), self.objects))
                and self._plain() == self.plain_values
            )
        except KeyError:  # an attribute or entry was deleted
            return False


class PythonGuard:
    """A snapshot of the Python state `fn` reads; `holds()` says whether it is unchanged.

    `unguardable` is set (to the reason) when the state is too large to compare on every call.

    >>> scale = 2.0
    >>> guard = PythonGuard(lambda x: x * scale)
    >>> guard.holds()
    True
    """

    def __init__(self, fn: Any, arguments: tuple = ()) -> None:
        from numdiff.nn import Module  # numdiff.nn imports numdiff.compile's tracer

        self.module_type = Module
        self.unguardable: str | None = None
        self.references: list = []  # (holder, name, object): tensors, Modules, functions, by identity
        self.values: list = []  # (holder, name, value): numbers, strings, None, by value
        self.deep: list = []  # (holder, name, snapshot): containers, arrays, objects, by contents
        self.modules: list = []
        self.module_state: _ModuleState | None = None
        self._walk = StateWalk(Module)
        try:
            self._collect(fn, arguments)
        except UnguardableStateError as error:
            self.unguardable = str(error)

    def _collect(self, fn: Any, arguments: tuple) -> None:
        """Guard the roots, then, round by round, the free names of each user function and the
        attributes of each Module (and its class) the previous round reached."""
        walk = self._walk
        entries: list = [(None, None, value) for value in (fn, *arguments)]
        seen_functions: set = set()
        modules: dict = {}
        while entries:
            for holder, name, value in entries:
                self._guard(holder, name, value)
            entries = []
            for function in walk.functions:
                if id(function) not in seen_functions:
                    seen_functions.add(id(function))
                    entries.extend((holder, name, _read(holder, name)) for holder, name in _free_names(function))
            walk.functions = []
            for root in walk.modules:
                for module in root.modules():
                    if id(module) not in modules:
                        modules[id(module)] = module
                        entries.extend(self._module_entries(module))
            walk.modules = []
        self.modules = list(modules.values())
        self.module_state = _ModuleState(self.modules) if self.modules else None

    def _module_entries(self, module: Any) -> list:
        """A module's attributes that its fast guard (_ModuleState) does not compare, and its
        class when that is a user's (class attributes read through self, the methods' globals)."""
        state = module.__dict__
        entries = [(state, name, value) for name, value in state.items()
                   if name not in _MODULE_TABLES and name not in _MODULE_IGNORED
                   and not isinstance(value, Tensor) and not _is_scalar(value)]
        if is_user_class(type(module)):
            entries.append((None, None, type(module)))
        # A forward hook's own free names (``lambda m, i, out: out * SCALE``).
        for name in ("_forward_hooks", "_forward_pre_hooks"):
            entries.extend((None, None, hook) for hook in (state.get(name) or {}).values())
        return entries

    def _guard(self, holder: Any, name: Any, value: Any) -> None:
        """Guard what (holder, name) holds; a root (holder None) only has its contents walked."""
        if holder is None:
            if isinstance(value, type):
                self._guard_class(value)
            elif type(value) is types.FunctionType:
                self._walk.functions.append(value)
            elif type(value) is types.MethodType:
                self._walk.functions.append(value.__func__)
                self._guard(None, None, value.__self__)
            elif isinstance(value, self.module_type):
                self._walk.snap(value)
            elif not _is_scalar(value) and not isinstance(value, Tensor):  # an argument's contents (a config object, a list)
                self._guard(types.SimpleNamespace(root=value), "root", value)
            return
        if _is_scalar(value):
            self.values.append((holder, name, value))
            return
        snapshot = self._walk.snap(value)
        if snapshot[0] == "id":
            self.references.append((holder, name, value))
        else:
            self.deep.append((holder, name, snapshot))

    def _guard_class(self, cls: type) -> None:
        """A user class's own attributes (read through ``self.factor``) and its methods' free names."""
        for klass in cls.__mro__:
            if not is_user_class(klass):
                continue
            table = vars(klass)
            for name, item in table.items():
                if name.startswith("__") and name.endswith("__") and type(item) is not types.FunctionType:
                    continue  # __module__, __doc__, __dict__; but __call__'s globals count
                self._guard(table, name, item)  # a method replaced on the class retraces
                if isinstance(item, (staticmethod, classmethod)):
                    self._walk.snap(item.__func__)
                elif isinstance(item, property):
                    self._walk.snap((item.fget, item.fset))

    def outside_tensors(self) -> list:
        """The tensors the function can reach without arguments: free names, Parameters, buffers."""
        found = list(self._walk.tensors)
        for module in self.modules:
            found.extend(t for t in module._parameters.values() if t is not None)
            found.extend(t for t in module._buffers.values() if t is not None)
        return found

    def holds(self) -> bool:
        for holder, name, expected in self.references:
            if _read(holder, name) is not expected:
                return False
        for holder, name, expected in self.values:
            current = _read(holder, name)
            if current is not expected and (type(current) is not type(expected) or current != expected):
                return False
        if self.module_state is not None and not self.module_state.holds():
            return False
        if self.deep:
            walk = StateWalk(self.module_type)
            try:
                return all(walk.snap(_read(holder, name)) == expected for holder, name, expected in self.deep)
            except UnguardableStateError:
                return False
        return True
