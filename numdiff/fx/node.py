"""Node: one operation of an fx Graph, with its inputs (args, kwargs) and its users.

A Node is one of six kinds (`op`): ``placeholder`` (an input of the graph), ``get_attr`` (a
parameter, buffer or attribute read from the owning module), ``call_function`` (a free function
such as ``numdiff.add`` or ``operator.add``), ``call_method`` (a Tensor method, by name),
``call_module`` (a submodule, by its qualified name) and ``output`` (the graph's result).

The args and kwargs may nest Nodes inside tuples, lists, dicts and slices; each Node keeps the
set of Nodes it reads (`all_input_nodes`) and of those that read it (`users`) up to date when its
arguments change, so rewrites can ask who depends on what.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["Argument", "Node", "Target", "map_aggregate", "map_arg"]

OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")

Target = Any  # a str (placeholder, get_attr, call_method, call_module, output) or a callable
Argument = Any  # a Node, a number, a str, a dtype, ... or tuples, lists, dicts and slices of them


def __dir__() -> list[str]:
    return sorted(__all__)


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply `fn` to every leaf of `a`, rebuilding the tuples, lists, dicts and slices around them.

    >>> map_aggregate((1, [2, 3]), lambda v: v * 10)
    (10, [20, 30])
    """
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(elem, fn) for elem in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped  # a namedtuple keeps its type
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {key: map_aggregate(value, fn) for key, value in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply `fn` to every Node inside `a` (other leaves are kept).

    >>> map_arg((1, "x"), lambda node: node)
    (1, 'x')
    """
    if not callable(fn):
        raise TypeError(f"map_arg: fn must be callable, got {type(fn).__name__}")
    return map_aggregate(a, lambda v: fn(v) if isinstance(v, Node) else v)


def _collect_nodes(args: Argument, kwargs: Argument) -> dict[Node, None]:
    found: dict[Node, None] = {}
    map_arg((args, kwargs), lambda n: found.setdefault(n, None))
    return found


# Python operators that codegen writes infix (``a + b``) and format_node names by their symbol.
INFIX = {
    operator.add: "{} + {}", operator.sub: "{} - {}", operator.mul: "{} * {}", operator.truediv: "{} / {}",
    operator.floordiv: "{} // {}", operator.mod: "{} % {}", operator.pow: "{} ** {}",
    operator.matmul: "{} @ {}", operator.lshift: "{} << {}", operator.rshift: "{} >> {}",
    operator.and_: "{} & {}", operator.or_: "{} | {}", operator.xor: "{} ^ {}",
    operator.lt: "{} < {}", operator.le: "{} <= {}", operator.eq: "{} == {}", operator.ne: "{} != {}",
    operator.gt: "{} > {}", operator.ge: "{} >= {}",
    operator.neg: "-{}", operator.pos: "+{}", operator.invert: "~{}", operator.getitem: "{}[{}]",
}


class Node:
    """One operation in a Graph: `op`, `target`, `args`, `kwargs`, its `name` and its `users`.

    Nodes are made by a Graph (``graph.call_function(numdiff.relu, (x,))``), never directly.

    >>> graph = numdiff.fx.Graph()
    >>> x = graph.placeholder("x")
    >>> y = graph.call_function(numdiff.relu, (x,))
    >>> list(x.users)
    [relu]
    """

    def __init__(self, graph: Any, name: str, op: str, target: Target, args: tuple, kwargs: dict,
                 return_type: Any = None) -> None:
        if op not in OPS:
            raise ValueError(f"Node: op must be one of {OPS[:-1]}, got {op!r}")
        if op in ("placeholder", "get_attr", "call_method", "call_module", "output") and not isinstance(target, str):
            raise ValueError(f"Node: the target of a {op} node must be a str, got {type(target).__name__}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node: the target of a call_function node must be callable, got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._prev = self
        self._next = self
        self._erased = False
        self._set_inputs(tuple(args), dict(kwargs))

    # ------------------------------------------------------------------ inputs
    def _set_inputs(self, args: tuple, kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        self._input_nodes = _collect_nodes(args, kwargs)
        for new in self._input_nodes:
            if new.graph is not self.graph:
                raise ValueError(f"Node {self.name}: its input {new.name} belongs to another Graph")
            new.users.setdefault(self, None)

    @property
    def args(self) -> tuple:
        """The positional arguments (Nodes stand for the values they compute)."""
        return self._args

    @args.setter
    def args(self, value: tuple) -> None:
        self._set_inputs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict) -> None:
        self._set_inputs(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list[Node]:
        """The Nodes this one reads, in the order they appear in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Replace positional argument `idx` with `arg`."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set keyword argument `key` to `arg`."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Read `new_input` wherever this Node read `old_input`."""
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._set_inputs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this Node read `replace_with` instead; returns the users changed.

        >>> # after: node.replace_all_uses_with(new_node); graph.erase_node(node)
        """
        if propagate_meta:
            for key, value in self.meta.items():
                replace_with.meta.setdefault(key, value)
        changed = [user for user in list(self.users) if delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    # ------------------------------------------------------------------ order
    @property
    def next(self) -> Node:
        """The Node after this one in the graph (the graph's root sentinel after the last)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The Node before this one."""
        return self._prev

    def _unlink(self) -> None:
        self._prev._next, self._next._prev = self._next, self._prev
        self._prev = self._next = self

    def prepend(self, x: Node) -> None:
        """Move Node `x` to just before this one."""
        if x is self:
            return
        x._unlink()
        x._prev, x._next = self._prev, self
        self._prev._next = x
        self._prev = x

    def append(self, x: Node) -> None:
        """Move Node `x` to just after this one."""
        self._next.prepend(x)

    # ------------------------------------------------------------------ printing
    def _pretty_target(self) -> str:
        if self.op != "call_function":
            return str(self.target)
        return getattr(self.target, "__qualname__", None) or getattr(self.target, "__name__", repr(self.target))

    def format_node(self, placeholder_names: list[str] | None = None, maybe_return_typename: list[str] | None = None) -> str:
        """This Node as one line of the graph's printout (``%add : [num_users=1] = call_function[...]``)."""
        def show(a: Argument) -> str:
            return repr(map_arg(a, lambda n: _Named(f"%{n.name}")))

        if self.op == "placeholder":
            if placeholder_names is not None:
                placeholder_names.append(self.name)
            default = f" = {self.args[0]!r}" if self.args else ""
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : [num_users={len(self.users)}] = get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {show(self.args[0]) if self.args else None}"
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={self._pretty_target()}]"
                f"(args = {show(self.args)}, kwargs = {show(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name

    @property
    def stack_trace(self) -> str | None:
        """Where in the user's source this Node was traced, if the tracer recorded it."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self) -> bool:
        """Whether dead-code elimination must keep this Node although nothing reads it."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return bool(getattr(self.target, "_fx_impure", False)) or self.target in _IMPURE_FUNCTIONS
        if self.op == "call_method":
            return isinstance(self.target, str) and self.target.endswith("_") and not self.target.endswith("__")
        return False


class _Named:
    """A name that reprs as itself, for printing Nodes inside containers."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


_IMPURE_FUNCTIONS = {builtins.print, operator.setitem}
