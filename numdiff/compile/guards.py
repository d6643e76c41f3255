"""Guards on the Python state a trace was made under: what the function's free names held.

A trace bakes in what Python decided while it ran: which tensor a closure variable named, the number
a global held (``x * scale``), which function a global name called, and, for each Module the
function reaches, its training flag, its Parameters, buffers, submodules and hooks, and its plain
attributes (``eps``, ``negative_slope``, a user's ``temperature``). A later call made under
different Python state must retrace, not replay the old graph. Looked at: the function's closure
cells, the globals its code names and its arguments (a bound method's and a compiled Module's own
module tree too; the numeric attributes and tensors of plain objects among them, such as a config);
state reached only through other functions, or mutated inside lists and dicts, is not seen.
"""

from __future__ import annotations

import dis
import types
from operator import getitem, is_
from typing import Any

from numdiff.nn import Module
from numdiff.tensor import Tensor

_SCALAR_TYPES = (bool, int, float, complex, str, type(None))
_MODULE_TABLES = ("_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks")


def _is_scalar(value: Any) -> bool:
    if type(value) is tuple:
        return all(type(item) in _SCALAR_TYPES for item in value)
    return type(value) in _SCALAR_TYPES


def _free_names(fn: Any) -> list:
    """(holder, name, value) for each closure cell (name None) and each global the code names."""
    function = getattr(fn, "__func__", fn)  # a bound method's function
    code = getattr(function, "__code__", None)
    if code is None:
        return []
    found = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            found.append((cell, None, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    globals_ = getattr(function, "__globals__", {})
    for name in sorted(_global_loads(code)):
        if name in globals_:
            found.append((globals_, name, globals_[name]))
    return found


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


def _is_plain_object(value: Any) -> bool:
    """An instance with attributes a function may read (a config object), not code or a tensor."""
    return hasattr(value, "__dict__") and not isinstance(
        value, (type, types.ModuleType, types.FunctionType, types.MethodType, Tensor)
    )


def _read(holder: Any, name: str | None) -> Any:
    return holder.cell_contents if name is None else holder.get(name)


class _ModuleState:
    """Each module's plain attributes by value, and its plain tensor attributes (``self.mask``, not
    a buffer), its tables (Parameters, buffers, submodules, hooks) and their entries by identity.

    Everything is listed once, as (dict, key) pairs, so that a call checks them all in a few
    C-level passes (``map`` over ``operator.getitem``/``is_``): 2-3 us for a ten-module network,
    against 13 us for a Python loop building a tuple per module, and ~750 us for its compiled
    call. A table that gains or loses an entry changes length; a deleted attribute or entry
    raises KeyError: both fail the guard.
    """

    def __init__(self, modules: list) -> None:
        plain, objects, self.tables = [], [], []
        for module in modules:
            state = module.__dict__
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

    >>> scale = 2.0
    >>> guard = PythonGuard(lambda x: x * scale)
    >>> guard.holds()
    True
    """

    def __init__(self, fn: Any, arguments: tuple = ()) -> None:
        self.references: list = []  # (holder, name, object): everything else, by identity
        self.values: list = []  # (holder, name, value): numbers, strings, None, by value
        roots = [fn] if isinstance(fn, Module) else []
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, Module):
            roots.append(owner)
        # Arguments are keyed by identity (or value); the Modules and objects among them are
        # also guarded on their state, as the ones reached through free names are.
        named = _free_names(fn) + [(None, None, value) for value in arguments]
        for holder, name, value in named:
            if isinstance(value, Module):
                roots.append(value)
            elif _is_plain_object(value):
                state = value.__dict__
                self.values.extend((state, key, item) for key, item in state.items() if _is_scalar(item))
                # A tensor attribute is read afresh, but rebinding it must retrace (cfg.w = other).
                self.references.extend((state, key, item) for key, item in state.items() if isinstance(item, Tensor))
            if holder is None:
                continue
            if _is_scalar(value):
                self.values.append((holder, name, value))
            else:  # a tensor, a Module, a helper function redefined in a notebook, ...
                self.references.append((holder, name, value))
        unique = {}
        for root in roots:
            for module in root.modules():
                unique[id(module)] = module
        self.modules = list(unique.values())
        self.module_state = _ModuleState(self.modules) if unique else None

    def outside_tensors(self) -> list:
        """The tensors the function can reach without arguments: free names, Parameters, buffers."""
        found = [value for _, _, value in self.references if isinstance(value, Tensor)]
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
        return self.module_state is None or self.module_state.holds()
