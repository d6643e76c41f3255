"""GraphModule: a Module whose forward is Python generated from a Graph.

It copies from its root what the Graph reads (submodules for ``call_module``, parameters,
buffers and attributes for ``get_attr``), so it is a self-contained Module: trainable,
state_dict-able, picklable. After editing ``gm.graph``, ``gm.recompile()`` regenerates forward.
"""

from __future__ import annotations

import copy
import linecache
from typing import Any

from numdiff.fx.graph import Graph
from numdiff.nn import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor

__all__ = ["GraphModule"]


def __dir__() -> list[str]:
    return sorted(__all__)


def _copy_attr(from_module: Any, to_module: Module, target: str) -> None:
    """Copy ``from_module.<target>`` (dotted) onto `to_module`, making plain Modules for the path."""
    *prefix, field = target.split(".")
    for item in prefix:
        source = getattr(from_module, item)
        child = getattr(to_module, item, None)
        if child is None:
            child = Module()
            setattr(to_module, item, child)
        from_module, to_module = source, child
    value = getattr(from_module, field)
    if isinstance(value, Tensor) and not isinstance(value, Parameter) and isinstance(from_module, Module) \
            and field in from_module._buffers:
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


_sources = 0


class GraphModule(Module):
    """A Module running `graph`; `root` (a Module, or a dict from qualified names to values)
    supplies what the Graph's ``get_attr`` and ``call_module`` Nodes read.

    >>> graph = numdiff.fx.Graph()
    >>> x = graph.placeholder("x")
    >>> _ = graph.output(graph.call_function(numdiff.neg, (x,)))
    >>> GraphModule(numdiff.nn.Module(), graph)(numdiff.tensor([1.0]))
    tensor([-1.])
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # Each instance gets its own class, so the generated forward can live on the class (as a
        # method, like a hand-written one) without one GraphModule's forward replacing another's.
        if cls.__dict__.get("_generated", False):
            cls = cls.__bases__[0]
        return super().__new__(type(cls.__name__, (cls,), {"_generated": True}))

    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = type(self).__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"GraphModule: node {node.name} reads {node.target!r}, which the root "
                                           f"dict does not have (it has {sorted(root)})")
                    _copy_attr(_DictRoot(root), self, node.target)
        else:
            raise TypeError(f"GraphModule: root must be a Module or a dict, got {type(root).__name__}")
        self.graph = graph
        self.meta: dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        """The Graph this module runs; assigning one recompiles forward."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, graph: Graph) -> None:
        if not isinstance(graph, Graph):
            raise TypeError(f"GraphModule.graph must be a numdiff.fx.Graph, got {type(graph).__name__}")
        object.__setattr__(self, "_graph", graph)
        graph.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated forward."""
        return self.__dict__["_code"]

    def recompile(self) -> Any:
        """Regenerate forward from the (possibly edited) Graph; returns the PythonCode."""
        global _sources
        python_code = self.graph.python_code("self")
        _sources += 1
        filename = f"<numdiff.fx generated {_sources}>"
        linecache.cache[filename] = (len(python_code.src), None, python_code.src.splitlines(True), filename)
        namespace = dict(python_code.globals)
        exec(compile(python_code.src, filename, "exec"), namespace)  # noqa: S102 - source generated from the Graph
        object.__setattr__(self, "_code", python_code.src)
        type(self).forward = namespace["forward"]
        return python_code

    def __reduce__(self) -> tuple:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild, (type(self).__bases__[0], type(self).__name__, state, self.graph))

    def __deepcopy__(self, memo: dict) -> GraphModule:
        rebuilt = _rebuild(type(self).__bases__[0], type(self).__name__,
                           copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}, memo),
                           copy.deepcopy(self.graph, memo))
        return rebuilt

    def __copy__(self) -> GraphModule:
        rebuilt = GraphModule(self, self.graph, type(self).__name__)
        rebuilt.meta = dict(self.meta)
        return rebuilt

    def print_readable(self, print_output: bool = True) -> str:
        """The generated forward inside a class statement; printed unless `print_output` is False."""
        text = f"class {type(self).__name__}(numdiff.nn.Module):" + "".join(
            f"\n    {line}" if line else "\n" for line in self.code.strip("\n").splitlines())
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return f"{super().__repr__()}\n\n\n{self.code}"


class _DictRoot:
    """A dict of qualified names as attributes, for building a GraphModule from a dict."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        prefix = name + "."
        nested = {k[len(prefix):]: v for k, v in self._values.items() if k.startswith(prefix)}
        if nested:
            return _DictRoot(nested)
        raise AttributeError(name)


def _rebuild(cls: type, class_name: str, state: dict[str, Any], graph: Graph) -> GraphModule:
    module = object.__new__(type(class_name, (cls,), {"_generated": True}))
    module.__dict__.update(state)
    module.graph = graph
    return module
