"""Python source from a Graph: the ``forward`` a GraphModule runs, and the names it needs.

Each Node becomes one statement (``add = x + y``), operators are written infix, numdiff's own
functions by their public path (``numdiff.relu(x)``), anything else through a global the
generated code is executed with (``__main___sigmoid_lowp(x)``). A value is set to None after its
last use, so large intermediates are freed as early as when the module ran eagerly.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
from typing import Any

import numdiff
from numdiff.fx.node import INFIX, Node, map_arg

_RESERVED = set(keyword.kwlist) | set(dir(builtins)) | {"self", "numdiff", "inf", "nan", "NoneType"}


def snake_case(name: str) -> str:
    """``Conv2d`` -> ``conv2d``, ``BatchNorm2d`` -> ``batch_norm2d``: torch.fx's node names."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class Namespace:
    """Unique Python identifiers for Nodes and globals: ``add``, ``add_1``, ``add_2``, ..."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._next_suffix: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        """A fresh identifier from `candidate` (illegal characters become ``_``)."""
        name = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if name[0].isdigit():
            name = f"_{name}"
        if name not in self._used and name not in _RESERVED:
            self._used.add(name)
            return name
        match = re.fullmatch(r"(.*)_(\d+)", name)
        base = match.group(1) if match else name
        suffix = self._next_suffix.get(base, 1)
        while f"{base}_{suffix}" in self._used:
            suffix += 1
        self._next_suffix[base] = suffix + 1
        name = f"{base}_{suffix}"
        self._used.add(name)
        return name

    def reserve(self, name: str) -> None:
        """Mark `name` as taken."""
        self._used.add(name)

    def release(self, name: str) -> None:
        """Make `name` available again (its Node was erased)."""
        self._used.discard(name)


_PUBLIC_PATHS: dict[int, str] = {}


def _public_path(fn: Any) -> str | None:
    """``numdiff.relu`` or ``numdiff.nn.functional.relu`` when `fn` is that public function (under
    any of its names: numdiff.arctan is found although its __name__ is atan)."""
    if not _PUBLIC_PATHS:
        for path, namespace in (("numdiff.linalg", numdiff.linalg), ("numdiff.special", numdiff.special),
                                ("numdiff.nn.functional", numdiff.nn.functional), ("numdiff", numdiff)):
            for name in dir(namespace):
                value = getattr(namespace, name, None)
                if callable(value) and not isinstance(value, type) and not name.startswith("_"):
                    _PUBLIC_PATHS[id(value)] = f"{path}.{name}"
    name = getattr(fn, "__name__", None)
    if name is not None and getattr(numdiff, name, None) is fn:
        return f"numdiff.{name}"
    return _PUBLIC_PATHS.get(id(fn))


class PythonCode:
    """Generated source (`src`) and the `globals` it must run with."""

    def __init__(self, src: str, globals: dict[str, Any]) -> None:  # noqa: A002 - torch.fx's field name
        self.src = src
        self.globals = globals


class _Emitter:
    def __init__(self) -> None:
        self.globals: dict[str, Any] = {"numdiff": numdiff, "inf": math.inf, "nan": math.nan}
        self._global_names = Namespace()
        for name in self.globals:
            self._global_names.reserve(name)
        self._by_id: dict[int, str] = {}

    def add_global(self, hint: str, obj: Any) -> str:
        if id(obj) in self._by_id:
            return self._by_id[id(obj)]
        name = self._global_names.create_name(hint)
        self.globals[name] = obj
        self._by_id[id(obj)] = name
        return name

    def function_name(self, fn: Any) -> str:
        path = _public_path(fn)
        if path is not None:
            return path
        if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
            return fn.__name__
        module = getattr(fn, "__module__", None) or "fn"
        return self.add_global(f"{module}_{getattr(fn, '__qualname__', getattr(fn, '__name__', 'fn'))}", fn)

    def render(self, arg: Any) -> str:
        if isinstance(arg, Node):
            return arg.name
        if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
            inner = ", ".join(self.render(a) for a in arg)
            return f"({inner},)" if len(arg) == 1 else f"({inner})"
        if isinstance(arg, list):
            return "[" + ", ".join(self.render(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{self.render(k)}: {self.render(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({self.render(arg.start)}, {self.render(arg.stop)}, {self.render(arg.step)})"
        if arg is None or arg is Ellipsis or isinstance(arg, (bool, int, str, complex)):
            return repr(arg)
        if isinstance(arg, float):
            return repr(arg) if math.isfinite(arg) else ("-inf" if arg < 0 else "inf" if arg > 0 else "nan")
        if isinstance(arg, numdiff.dtype):
            return f"numdiff.{arg}".replace("numdiff.numdiff.", "numdiff.")
        return self.add_global(snake_case(type(arg).__name__), arg)

    def call(self, node: Node) -> str:
        args = [self.render(a) for a in node.args] + [f"{k} = {self.render(v)}" for k, v in node.kwargs.items()]
        if node.op == "call_method":
            receiver, rest = self.render(node.args[0]), args[1:]
            return f"{receiver}.{node.target}({', '.join(rest)})"
        if node.op == "call_module":
            return f"{_attribute_path(node.target)}({', '.join(args)})"
        if node.op == "get_attr":
            return _attribute_path(node.target)
        if node.target in INFIX and not node.kwargs and len(node.args) == INFIX[node.target].count("{}"):
            return INFIX[node.target].format(*(self.render(a) for a in node.args))
        if node.target is getattr and len(node.args) == 2 and isinstance(node.args[1], str) and not node.kwargs:
            if node.args[1].isidentifier() and not keyword.iskeyword(node.args[1]):
                return f"{self.render(node.args[0])}.{node.args[1]}"
        return f"{self.function_name(node.target)}({', '.join(args)})"


def _attribute_path(target: str) -> str:
    """``self.layer1.conv`` for a dotted `target`; a part that is not an identifier (Sequential's
    ``0``) is read with getattr: ``getattr(self.layer1, "0").conv``."""
    out = "self"
    for part in target.split("."):
        out = f"{out}.{part}" if part.isidentifier() and not keyword.iskeyword(part) else f"getattr({out}, {part!r})"
    return out


def python_code(nodes: list[Node], root_name: str = "self") -> PythonCode:
    """The ``forward`` function `nodes` (one Graph, in order) describe, and its globals."""
    emit = _Emitter()
    last_use: dict[Node, Node] = {}
    for node in nodes:
        map_arg((node.args, node.kwargs), lambda n, user=node: last_use.__setitem__(n, user))
    freed_after: dict[Node, list[str]] = {}
    for value, user in last_use.items():
        freed_after.setdefault(user, []).append(value.name)

    params: list[str] = []
    body: list[str] = []
    for node in nodes:
        if node.op == "placeholder":
            name = node.target if node.target.startswith("*") else node.name
            params.append(f"{name} = {emit.render(node.args[0])}" if node.args else name)
            continue
        if node.op == "output":
            body.append(f"return {emit.render(node.args[0]) if node.args else None}")
            continue
        line = f"{node.name} = {emit.call(node)}"
        freed = freed_after.get(node)
        if freed:
            line += ";  " + " = ".join(freed) + " = None"
        body.append(line)
    if not body or not body[-1].startswith("return"):
        body.append("return None")
    src = f"\n\ndef forward({', '.join([root_name, *params])}):\n" + "".join(f"    {line}\n" for line in body)
    return PythonCode(src, emit.globals)
