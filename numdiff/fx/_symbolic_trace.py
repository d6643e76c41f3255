"""Tracer and symbolic_trace: run a module's forward on Proxies and record what it does.

The root's forward runs once with a Proxy per input. Submodule calls reach the tracer through
numdiff._module_tracing (Module.__call__ reads it): numdiff.nn's own modules are leaves, recorded
as one ``call_module`` Node each, and the user's modules are traced through. Parameters and
tensors the code reads become ``get_attr`` Nodes. Functions registered with `wrap` are
recorded as one ``call_function`` Node instead of being traced into.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any

from numdiff import _module_tracing
from numdiff.fx.graph import Graph
from numdiff.fx.graph_module import GraphModule
from numdiff.fx.node import Node, map_aggregate
from numdiff.fx.proxy import Proxy, TraceError, TracerBase
from numdiff.nn import Module, Sequential
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor

__all__ = ["Tracer", "symbolic_trace", "wrap"]

# (globals dict of the module that called wrap, function name): the functions recorded as leaves.
_WRAPPED: dict[tuple[int, str], tuple[dict[str, Any], str]] = {}


def __dir__() -> list[str]:
    return sorted(__all__)


def wrap(fn_or_name: str | Callable[..., Any]) -> str | Callable[..., Any]:
    """Record calls of a module-level function as one ``call_function`` Node instead of tracing
    into it. Call it at the top level of the module that defines (or imports) the function.

    >>> def my_norm(x):
    ...     return x / len(x)        # len() of a Proxy would fail if traced into
    >>> numdiff.fx.wrap(my_norm)     # doctest: +SKIP
    """
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap: call it at the top level of a module, where the function is a global")
    name = fn_or_name if isinstance(fn_or_name, str) else getattr(fn_or_name, "__name__", None)
    if not name or name == "<lambda>":
        raise ValueError(f"wrap: expected a named function or its name, got {fn_or_name!r}")
    _WRAPPED[(id(caller.f_globals), name)] = (caller.f_globals, name)
    return fn_or_name


def _leaf_call(original: Callable[..., Any], tracer_of: Callable[[], Tracer | None]) -> Callable[..., Any]:
    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        tracer = tracer_of()
        proxies: list[Proxy] = []
        map_aggregate((args, kwargs), lambda v: proxies.append(v) if isinstance(v, Proxy) else v)
        if tracer is None or not proxies:
            return original(*args, **kwargs)
        return proxies[0].tracer.create_proxy("call_function", original, args, kwargs)

    return call


@contextlib.contextmanager
def _wrapped_globals(tracer: Tracer, root_globals: dict[str, Any]) -> Iterator[None]:
    """The functions given to `wrap`, and the tracer's autowrap functions found among the globals
    of the traced code, stand in as leaf recorders for the length of one trace (restored after)."""
    saved: list[tuple[dict[str, Any], str, Any]] = []
    targets = [(g, n) for g, n in _WRAPPED.values()]
    for fn in tracer.autowrap_function_ids.values():
        for name, value in root_globals.items():
            if value is fn:
                targets.append((root_globals, name))
    for namespace, name in targets:
        if name in namespace and callable(namespace[name]):
            saved.append((namespace, name, namespace[name]))
            namespace[name] = _leaf_call(namespace[name], _module_tracing.current)
    try:
        yield
    finally:
        for namespace, name, value in reversed(saved):
            namespace[name] = value


class Tracer(TracerBase):
    """Records a module's or a function's forward as a Graph; subclass it to change what is a
    leaf (`is_leaf_module`), how modules are called (`call_module`) or how Nodes are made.

    >>> graph = numdiff.fx.Tracer().trace(numdiff.nn.Sequential(numdiff.nn.ReLU()))
    >>> [n.op for n in graph.nodes]
    ['placeholder', 'call_module', 'output']
    """

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        self.autowrap_function_ids = {id(getattr(m, n)): getattr(m, n) for m in autowrap_modules
                                      for n in dir(m) if not n.startswith("_") and callable(getattr(m, n))}
        self.autowrap_function_ids.update({id(f): f for f in autowrap_functions})
        self.param_shapes_constant = param_shapes_constant
        self.root: Module | None = None
        self.graph = Graph()
        self.tensor_attrs: dict[Any, str] = {}
        self.submodule_paths: dict[Module, str] | None = None

    # ------------------------------------------------------------------ modules
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """numdiff.nn's own modules (except Sequential) are leaves; the user's are traced through."""
        module = type(m).__module__ or ""
        return (module.startswith("numdiff.nn") or module.startswith("torch.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        """The qualified name of `mod` under the root (``layer1.0.conv1``); NameError if absent."""
        if self.submodule_paths is not None and mod in self.submodule_paths:
            return self.submodule_paths[mod]
        for name, module in (self.root.named_modules() if self.root is not None else ()):
            if module is mod:
                return name
        raise NameError(f"path_of_module: the module {type(mod).__name__} is not a submodule of the traced root")

    def call_module(self, m: Module, forward: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """A submodule call met while tracing: one Node for a leaf, else its forward traced through."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """The root's Parameter `attr_val` (qualified name `attr`) used while tracing: a ``get_attr``
        Proxy, one per name and trace. Override to read parameters differently."""
        if isinstance(attr_val, Parameter):
            if attr not in parameter_proxy_cache:
                parameter_proxy_cache[attr] = self.create_proxy("get_attr", attr, (), {})
            return parameter_proxy_cache[attr]
        return attr_val

    # ------------------------------------------------------------------ arguments
    def create_arg(self, a: Any) -> Any:
        """Proxies as their Nodes; the root's Parameters and buffers as ``get_attr`` Nodes; other
        Tensors are stored on the root as ``_tensor_constant<N>`` and read back the same way."""
        def leaf(value: Any) -> Any:
            if isinstance(value, Proxy):
                return value.node
            if isinstance(value, Tensor):
                return self._tensor_node(value)
            if isinstance(value, Module):
                return self.create_node("get_attr", self.path_of_module(value), (), {})
            return value

        return map_aggregate(a, leaf)

    def _tensor_node(self, value: Tensor) -> Node:
        name = self.tensor_attrs.get(value)
        if name is None and self.root is not None:  # the root's own parameters and buffers, by name
            for qualified_name, owned in (*self.root.named_parameters(), *self.root.named_buffers()):
                if owned is value:
                    name = self.tensor_attrs[value] = qualified_name
                    break
        if name is None:
            if self.root is None:
                raise TraceError("a Tensor constant was used while tracing with no root module to store it on")
            index = sum(1 for k in self.tensor_attrs.values() if k.startswith("_tensor_constant"))
            name = f"_tensor_constant{index}"
            setattr(self.root, name, value.detach())
            self.tensor_attrs[value] = name
        if isinstance(value, Parameter):
            read = self.getattr(name, value, self._parameter_proxies)
            if isinstance(read, Proxy):
                return read.node
        node = self._attribute_nodes.get(name)
        if node is None or node._erased:  # one get_attr Node per buffer or constant and trace
            node = self._attribute_nodes[name] = self.create_node("get_attr", name, (), {})
        return node

    def create_args_for_root(self, root_fn: Callable[..., Any], is_module: bool,
                             concrete_args: dict[str, Any] | None = None) -> tuple[Callable[..., Any], list[Any]]:
        """One placeholder Proxy per parameter of `root_fn` (a concrete_args entry is used as given)."""
        concrete_args = dict(concrete_args or {})
        signature = inspect.signature(root_fn)
        params = list(signature.parameters.values())[1 if is_module else 0:]
        values: list[Any] = []
        for param in params:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TraceError(f"symbolic_trace: {root_fn.__qualname__} takes *{param.name}; trace a function "
                                 "with named parameters, or give them through concrete_args")
            if param.name in concrete_args:  # still an input of the GraphModule, defaulting to the value
                value = concrete_args.pop(param.name)
                self.create_node("placeholder", param.name, (value,), {}, name=param.name)
                values.append(value)
                continue
            default = () if param.default is param.empty else (param.default,)
            values.append(self.create_proxy("placeholder", param.name, default, {}, name=param.name))
        if concrete_args:
            raise TraceError(f"symbolic_trace: concrete_args names {sorted(concrete_args)}, which are not "
                             f"parameters of {root_fn.__qualname__}")
        return root_fn, values

    # ------------------------------------------------------------------ tracing
    def trace(self, root: Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None) -> Graph:
        """Record `root` (a Module's forward, or a plain function) as a Graph."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            is_module = True
        elif callable(root):
            self.root = Module()
            fn = root
            is_module = False
        else:
            raise TypeError(f"symbolic_trace: expected a Module or a function, got {type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_attrs = {}
        self._parameter_proxies: dict[str, Any] = {}
        self._attribute_nodes: dict[str, Node] = {}
        fn_globals = getattr(fn, "__globals__", {})
        fn, args = self.create_args_for_root(fn, is_module, concrete_args)
        with _module_tracing.active(self), _wrapped_globals(self, fn_globals):
            result = fn(root, *args) if is_module else fn(*args)
        self.create_node("output", "output", (self.create_arg(result),), {}, name="output")
        self.submodule_paths = None
        return self.graph


def symbolic_trace(root: Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None) -> GraphModule:
    """A GraphModule recorded from `root` by the default Tracer.

    >>> class Net(numdiff.nn.Module):
    ...     def forward(self, x):
    ...         return numdiff.relu(x) + 1
    >>> print(numdiff.fx.symbolic_trace(Net()).code.strip().splitlines()[0])
    def forward(self, x):
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else getattr(root, "__name__", "function")
    return GraphModule(tracer.root, graph, name)

