"""Proxy: a stand-in for a Tensor during symbolic tracing; what is done to it becomes Nodes.

Operators (``x + y``, ``x[0]``), method calls (``x.relu()``), attribute reads (``x.shape``) and
numdiff functions (``numdiff.cat([x, y])``, through the ``__numdiff_function__`` protocol of
numdiff.overrides) each record a Node in the Proxy's tracer's Graph and return a new Proxy.
Using a Proxy where Python needs a concrete value (``if x:``, ``len(x)``, ``for v in x``) raises
TraceError: the value is not known while tracing.
"""

from __future__ import annotations

import builtins
import dis
import inspect
import operator
from collections.abc import Callable, Iterator
from typing import Any

from numdiff.fx.graph import Graph
from numdiff.fx.node import Node, Target, map_aggregate

__all__ = ["Attribute", "GraphAppendingTracer", "Proxy", "TraceError", "TracerBase"]


def __dir__() -> list[str]:
    return sorted(__all__)


class TraceError(ValueError):
    """Symbolic tracing met a value it cannot know: control flow on a traced value, its length, ..."""


class ProxyLenError(TraceError, RuntimeError):
    """``len()`` of a Proxy (a RuntimeError in torch.fx, a TraceError here too)."""


class TracerBase:
    """What a Proxy needs from its tracer: a Graph and a way to record Nodes in it."""

    graph: Graph
    record_stack_traces: bool = False

    def create_node(self, kind: str, target: Target, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Record a Node (override to tag or redirect every Node the tracer makes)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        """The Proxy that stands for `node`."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any = None, proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Record a Node for this call (its arguments through `create_arg`) and return its Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if self.record_stack_traces and not node.meta.get("stack_trace"):
            node.meta["stack_trace"] = _user_stack()
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Any:
        """An argument as a Graph stores it: Proxies become their Nodes, containers are rebuilt."""
        def leaf(value: Any) -> Any:
            if isinstance(value, Proxy):
                if value.tracer.graph is not self.graph:
                    raise TraceError(f"a Proxy of node {value.node.name} from another Graph was used while tracing")
                return value.node
            return value

        return map_aggregate(a, leaf)

    def to_bool(self, obj: Proxy) -> bool:
        """``bool(proxy)``: refused, the value is unknown while tracing."""
        raise TraceError(
            f"symbolically traced variables cannot be used as inputs to control flow: bool() of the traced "
            f"value {obj.node.name} ({obj.node.format_node()}) is unknown while tracing. Pass the value as a "
            "concrete_args entry, or move the condition into a leaf module or an fx.wrap-ed function."
        )

    def iter(self, obj: Proxy) -> Iterator[Any]:
        """``iter(proxy)``: refused, the number of elements is unknown while tracing."""
        raise TraceError(
            f"Proxy object cannot be iterated: the traced value {obj.node.name} has no known length while "
            "tracing. Index it (x[0], x[1]) or unpack a known number of values (a, b = x)."
        )

    def keys(self, obj: Proxy) -> Any:
        """``proxy.keys()`` for ``**proxy``: recorded as a method call."""
        return Attribute(obj, "keys")()

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """What reading attribute `attr` of a traced module gives (override to proxy it)."""
        return attr_val


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing Graph: for Proxies made by hand around its Nodes.

    >>> graph = numdiff.fx.Graph()
    >>> x = numdiff.fx.Proxy(graph.placeholder("x"), GraphAppendingTracer(graph))
    >>> (x + 1).node.op
    'call_function'
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.root = None
        self.tensor_attrs: dict[Any, str] = {}


class Proxy:
    """Stands for the value of `node` while tracing.

    >>> graph = numdiff.fx.Graph()
    >>> x = numdiff.fx.Proxy(graph.placeholder("x"))
    >>> numdiff.relu(x).node.target is numdiff.relu
    True
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if not isinstance(node, Node):
            raise TypeError(f"Proxy: expected a numdiff.fx Node, got {type(node).__name__}")
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, name: str) -> Attribute:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # copy, pickle and friends probing for protocols
        return Attribute(self, name)

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Any]:
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:  # ``a, b = proxy``: the bytecode says how many values are wanted
            for instruction in dis.get_instructions(caller.f_code):
                if instruction.offset == caller.f_lasti and instruction.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(instruction.argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise ProxyLenError(
            f"'len' is not supported in symbolic tracing by default: the length of {self.node.name} is unknown "
            "while tracing. Use x.size(0), or wrap the function that needs it with numdiff.fx.wrap."
        )

    def keys(self) -> Any:
        """``proxy.keys()``, recorded."""
        return self.tracer.keys(self)

    @classmethod
    def __numdiff_function__(cls, func: Callable[..., Any], types: tuple, args: tuple = (),
                             kwargs: dict | None = None) -> Proxy:
        tracers: dict[TracerBase, None] = {}
        map_aggregate((args, kwargs or {}), lambda v: tracers.setdefault(v.tracer, None) if isinstance(v, Proxy) else v)
        if len(tracers) > 1:
            raise TraceError(f"{getattr(func, '__name__', func)}: Proxies from {len(tracers)} different tracers "
                             "were mixed in one call")
        tracer = next(iter(tracers))
        return tracer.create_proxy("call_function", func, args, kwargs or {})

    __torch_function__ = __numdiff_function__


class Attribute(Proxy):
    """``proxy.name``: a method call when called, else a ``getattr`` Node made when first used."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        """The ``getattr(root, attr)`` Node, recorded on first use."""
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", builtins.getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


def _user_stack() -> str:
    """The innermost frames outside numdiff, as a traceback-like text."""
    lines = []
    for frame_info in inspect.stack()[2:]:
        if "/numdiff/" in frame_info.filename.replace("\\", "/"):
            continue
        lines.append(f'  File "{frame_info.filename}", line {frame_info.lineno}, in {frame_info.function}\n'
                     f"    {(frame_info.code_context or [''])[0].strip()}\n")
        if len(lines) == 3:
            break
    return "".join(reversed(lines))


def _binary(op: Callable[[Any, Any], Any]) -> tuple[Callable[..., Proxy], Callable[..., Proxy]]:
    def forward(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self, other), {})

    def reflected(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (other, self), {})

    return forward, reflected


def _unary(op: Callable[[Any], Any]) -> Callable[..., Proxy]:
    def apply(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self,), {})

    return apply


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and",
              "or", "xor"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    _forward, _reflected = _binary(_op)
    setattr(Proxy, f"__{_name}__", _forward)
    setattr(Proxy, f"__r{_name}__", _reflected)
for _name in ("lt", "le", "eq", "ne", "gt", "ge", "getitem"):
    setattr(Proxy, f"__{_name}__", _binary(getattr(operator, _name))[0])
for _name in ("neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _unary(getattr(operator, _name)))
Proxy.__hash__ = object.__hash__  # __eq__ records a Node, so the identity hash is kept explicitly
