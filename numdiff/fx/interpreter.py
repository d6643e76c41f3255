"""Interpreter: run a GraphModule Node by Node; Transformer: build a new GraphModule the same way.

Each Node kind has its own method (`placeholder`, `get_attr`, `call_function`, `call_method`,
`call_module`, `output`), so a subclass changes how one kind runs (to time it, record shapes,
swap functions) and inherits the rest. Values live in `env`, keyed by Node, and are dropped
after their last use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from numdiff.fx.graph import Graph
from numdiff.fx.graph_module import GraphModule
from numdiff.fx.node import Argument, Node, Target, map_aggregate, map_arg
from numdiff.fx.proxy import Proxy, TracerBase
from numdiff.nn import Module

__all__ = ["Interpreter", "Transformer"]


def __dir__() -> list[str]:
    return sorted(__all__)


def _fetch_attr(module: Module, target: str) -> Any:
    value: Any = module
    for i, part in enumerate(target.split(".")):
        if not hasattr(value, part):
            raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])!r}")
        value = getattr(value, part)
    return value


class Interpreter:
    """Runs `module`'s Graph one Node at a time.

    >>> gm = numdiff.fx.symbolic_trace(numdiff.nn.Sequential(numdiff.nn.ReLU()))
    >>> Interpreter(gm).run(numdiff.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """

    def __init__(self, module: Module, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            seen: set[Node] = set()
            for node in reversed(self.graph.nodes):
                for used in node.all_input_nodes:
                    if used not in seen:
                        seen.add(used)
                        self.user_to_last_uses.setdefault(node, []).append(used)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None, enable_io_processing: bool = True) -> Any:
        """Run the Graph on `args` and return what its output Node returns."""
        self.env = dict(initial_env or {})
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as error:
                if self.extra_traceback:
                    note = f"While executing {node.format_node()}"
                    if hasattr(error, "add_note"):
                        error.add_note(note)
                raise
            for dead in self.user_to_last_uses.get(node, ()):
                self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list[Any]) -> Any:
        """`run` on a list of inputs that it empties (the caller gives up its references)."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n: Node) -> Any:
        """Run one Node: fetch its inputs from `env`, call the method for its kind."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ------------------------------------------------------------------ per kind
    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The next input (a ``*args`` placeholder takes all the rest)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]  # the placeholder's default
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!") from None

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The module's attribute `target`."""
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``args[0].<target>(*args[1:], **kwargs)``."""
        receiver, *rest = args
        return getattr(receiver, target)(*rest, **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The submodule `target` called on the inputs."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The Graph's result."""
        return args[0]

    # ------------------------------------------------------------------ helpers
    def fetch_attr(self, target: str) -> Any:
        """``module.<target>`` for a dotted `target`."""
        return _fetch_attr(self.module, target)

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """`n`'s args and kwargs with each Node replaced by its value in `env`."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """Replace the Nodes in `args` by their values (a clear error if one has none yet)."""
        def value(node: Node) -> Any:
            if node not in self.env:
                raise RuntimeError(f"Node {n.name} referenced nonexistent value {node.name}! Run Graph.lint() "
                                   "to diagnose such issues")
            return self.env[node]

        return map_arg(args, value)


class Transformer(Interpreter):
    """An Interpreter that runs on Proxies, so that what each method returns is recorded into a new
    Graph; `transform()` returns it as a GraphModule. Override `call_function` and friends to rewrite.

    >>> class NegToRelu(Transformer):
    ...     def call_function(self, target, args, kwargs):
    ...         return super().call_function(numdiff.relu if target is numdiff.neg else target, args, kwargs)
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A placeholder of the new Graph, with the old one's default."""
        default = args[0] if args else _NO_DEFAULT
        node = self.new_graph.placeholder(target, default_value=default) if default is not _NO_DEFAULT \
            else self.new_graph.placeholder(target)
        return Proxy(node, self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A get_attr Node of the new Graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """A call_function Node of the new Graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """A call_method Node of the new Graph."""
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """A call_module Node of the new Graph."""
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the transformation and return the new GraphModule."""
        result = super().run()
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda v: v.node if isinstance(v, Proxy) else v))
        return GraphModule(self.module, self.new_graph)


_NO_DEFAULT = object()


class _TransformerTracer(TracerBase):
    def __init__(self, graph: Graph, root: Module) -> None:
        self.graph = graph
        self.root = root
        self.tensor_attrs: dict[Any, str] = {}
