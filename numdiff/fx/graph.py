"""Graph: an ordered list of Nodes, the IR that symbolic tracing records and passes rewrite.

The Nodes form a doubly linked ring around a sentinel, so inserting and erasing anywhere is O(1)
and iterating while erasing the current Node is safe. New Nodes go where the insertion point
says: at the end by default, or before/after a Node inside ``with graph.inserting_before(n)``.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from numdiff.fx._codegen import Namespace, PythonCode, python_code, snake_case
from numdiff.fx.node import Argument, Node, Target, map_arg

__all__ = ["Graph", "GraphLintError", "PythonCode"]


def __dir__() -> list[str]:
    return sorted(__all__)


class GraphLintError(RuntimeError):
    """A Graph is malformed: a Node used before it is defined, a dangling reference, two outputs."""


class _NodeList:
    """A live view of a Graph's Nodes: iterate (forwards or `reversed`), `len`, index."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph, self._reverse = graph, reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        node = root._prev if self._reverse else root._next
        while node is not root:
            following = node._prev if self._reverse else node._next  # read first: `node` may be erased
            if not node._erased:
                yield node
            node = following

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._reverse))

    def __getitem__(self, index: int) -> Node:
        return list(self)[index]

    def __repr__(self) -> str:
        return repr(list(self))


class Graph:
    """The operations of a program as Nodes, in execution order.

    >>> graph = numdiff.fx.Graph()
    >>> x = graph.placeholder("x")
    >>> graph.output(graph.call_function(numdiff.relu, (x,)))
    output
    >>> "relu" in graph.python_code("self").src
    True
    """

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._len = 0
        self._names = Namespace()
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self) -> _NodeList:
        """The Nodes, in order (a live view)."""
        return _NodeList(self)

    # ------------------------------------------------------------------ creating
    def create_node(self, op: str, target: Target, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any = None) -> Node:
        """A new Node at the insertion point; `name` defaults to one made from the target."""
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else dict(kwargs)
        candidate = name if name is not None else self._target_to_name(target)
        node = Node(self, self._names.create_name(candidate), op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    def _target_to_name(self, target: Target) -> str:
        if isinstance(target, str):
            return snake_case(target.lstrip("*").replace(".", "_"))
        name = getattr(target, "__name__", None) or type(target).__name__
        return snake_case(name.strip("_") or name)

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = inspect.Parameter.empty) -> Node:
        """An input named `name` (with a default when `default_value` is given)."""
        args = () if default_value is inspect.Parameter.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr, name=name.lstrip("*"))

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """A read of ``owning_module.<qualified_name>`` (a parameter, buffer or attribute)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(self, the_function: Callable[..., Any], args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """A call of a free function."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """A call of method `method_name` on ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """A call of the submodule ``owning_module.<module_name>``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """The graph's result."""
        return self.create_node("output", "output", (result,), type_expr=type_expr, name="output")

    # ------------------------------------------------------------------ placing
    @contextlib.contextmanager
    def inserting_before(self, n: Node | None = None) -> Iterator[None]:
        """New Nodes go just before `n` (before the first Node when `n` is None) inside the block."""
        target = n if n is not None else self._root._next
        previous, self._insert = self._insert, target.prepend
        try:
            yield
        finally:
            self._insert = previous

    @contextlib.contextmanager
    def inserting_after(self, n: Node | None = None) -> Iterator[None]:
        """New Nodes go after `n` (at the start when `n` is None), each after the one made before."""
        anchor = [n if n is not None else self._root]

        def insert(node: Node) -> None:
            anchor[0].append(node)
            anchor[0] = node

        previous, self._insert = self._insert, insert
        try:
            yield
        finally:
            self._insert = previous

    def erase_node(self, to_erase: Node) -> None:
        """Remove a Node that nothing reads any more."""
        if to_erase.graph is not self:
            raise RuntimeError(f"erase_node: {to_erase.name} belongs to another Graph")
        if to_erase._erased:
            raise RuntimeError(f"erase_node: {to_erase.name} was already erased")
        if to_erase.users:
            raise RuntimeError(f"erase_node: {to_erase.name} still has {len(to_erase.users)} users in the graph: "
                               f"{list(to_erase.users)}; replace_all_uses_with first")
        to_erase._set_inputs((), {})
        to_erase._unlink()
        to_erase._erased = True
        self._names.release(to_erase.name)
        self._len -= 1

    # ------------------------------------------------------------------ copying
    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda n: n) -> Node:
        """A copy of `node` (possibly from another Graph) here, its inputs mapped by `arg_transform`."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copy = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copy.meta = dict(node.meta)
        return copy

    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False) -> Any:
        """Copy every Node of `g` except its output into this Graph; `val_map` maps old to new.
        Returns what `g`'s output returned, mapped (or the output Node itself if asked)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                result = map_arg(node.args[0], lambda n: val_map[n])
                return (result, node) if return_output_node else result
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict) -> Graph:
        copy = Graph(tracer_cls=self._tracer_cls)
        result = copy.graph_copy(self, {}, return_output_node=True)
        if result is not None:
            value, old_output = result
            copy.output(value, old_output.type).meta = dict(old_output.meta)
        return copy

    def __getstate__(self) -> dict:
        index = {node: i for i, node in enumerate(self.nodes)}
        rows = [(n.name, n.op, n.target, map_arg(n.args, lambda a: _Ref(index[a])),
                 map_arg(n.kwargs, lambda a: _Ref(index[a])), n.type) for n in self.nodes]
        return {"rows": rows, "tracer_cls": self._tracer_cls}

    def __setstate__(self, state: dict) -> None:
        self.__init__(tracer_cls=state["tracer_cls"])
        made: list[Node] = []
        resolve = lambda a: made[a.index] if isinstance(a, _Ref) else a  # noqa: E731
        for name, op, target, args, kwargs, type_expr in state["rows"]:
            from_refs = (_map_refs(args, resolve), _map_refs(kwargs, resolve))
            made.append(self.create_node(op, target, from_refs[0], from_refs[1], name, type_expr))

    # ------------------------------------------------------------------ passes
    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase the Nodes whose values nothing reads (impure ones stay); True if any was erased."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the Graph is well formed; raises GraphLintError naming the first problem."""
        seen: set[Node] = set()
        outputs = 0
        for node in self.nodes:
            if node.graph is not self:
                raise GraphLintError(f"lint: node {node.name} says it belongs to another Graph")
            for used in node.all_input_nodes:
                if used._erased or used.graph is not self:
                    raise GraphLintError(f"lint: node {node.name} ({node.format_node()}) reads {used.name}, "
                                         "which is not in this Graph (erased or from another Graph)")
                if used not in seen:
                    raise GraphLintError(f"lint: node {node.name} ({node.format_node()}) reads {used.name} "
                                         "before it is defined; move it after its inputs")
                if node not in used.users:
                    raise GraphLintError(f"lint: {used.name} does not list its user {node.name}")
            if node.op == "call_function" and not callable(node.target):
                raise GraphLintError(f"lint: node {node.name}: call_function target {node.target!r} is not callable")
            if node.op in ("get_attr", "call_module") and self.owning_module is not None:
                _check_attribute(self.owning_module, node)
            outputs += node.op == "output"
            seen.add(node)
        if outputs > 1:
            raise GraphLintError(f"lint: the Graph has {outputs} output nodes; a Graph returns from one")

    # ------------------------------------------------------------------ printing
    def python_code(self, root_module: str = "self") -> PythonCode:
        """The Python source of this Graph's ``forward`` and the globals it runs with."""
        return python_code(list(self.nodes), root_module)

    _codegen = python_code

    def print_tabular(self) -> None:
        """Print one row per Node: opcode, name, target, args, kwargs."""
        rows = [[n.op, n.name, n._pretty_target() if n.op != "call_function" else repr(n.target), repr(n.args),
                 repr(n.kwargs)] for n in self.nodes]
        header = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header,
                 ["-" * w for w in widths], *rows]]
        builtins.print("\n".join(lines))

    def __str__(self) -> str:
        names: list[str] = []
        body = "\n".join(f"    {node.format_node(names)}" for node in self.nodes)
        return f"graph():\n{body}"

    def __repr__(self) -> str:
        return f"<numdiff.fx.Graph with {self._len} nodes>"


class _Ref:
    """A Node by its position, in a pickled Graph."""

    def __init__(self, index: int) -> None:
        self.index = index


def _map_refs(a: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(a, (tuple, list)):
        return type(a)(_map_refs(v, fn) for v in a)
    if isinstance(a, dict):
        return {k: _map_refs(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(fn(a.start), fn(a.stop), fn(a.step))
    return fn(a)


def _check_attribute(root: Any, node: Node) -> None:
    owner = root
    for part in node.target.split("."):
        if not hasattr(owner, part):
            raise GraphLintError(f"lint: node {node.name} ({node.op}) names {node.target!r}, but the owning module "
                                 f"has no attribute {part!r} there")
        owner = getattr(owner, part)
