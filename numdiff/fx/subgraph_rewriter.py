"""replace_pattern: find every match of a pattern function's graph in a GraphModule and put the
replacement function's graph in its place.

Both functions are traced with symbolic_trace. A match maps the pattern's placeholders to any
Nodes of the target (the same Node each time a placeholder recurs) and each other pattern Node
to a target Node of the same op and target whose arguments match in turn. The matched Nodes,
apart from the one whose value the pattern returns, must be used only inside the match, so
removing them changes nothing else. Matches do not overlap; they are replaced in graph order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from numdiff.fx._symbolic_trace import symbolic_trace
from numdiff.fx.graph_module import GraphModule
from numdiff.fx.node import Node

__all__ = ["Match", "replace_pattern"]


def __dir__() -> list[str]:
    return sorted(__all__)


class Match(NamedTuple):
    """One replaced match: the target Node that was the pattern's result, and the map from
    pattern Nodes to the target Nodes they matched."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _traced(fn: Callable[..., Any] | GraphModule) -> GraphModule:
    return fn if isinstance(fn, GraphModule) else symbolic_trace(fn)


def _returned_node(gm: GraphModule, role: str) -> Node:
    output = next(n for n in gm.graph.nodes if n.op == "output")
    result = output.args[0]
    if not isinstance(result, Node):
        raise ValueError(f"replace_pattern: the {role} must return one traced value, got {result!r}")
    return result


def _match_args(p: Any, g: Any, mapping: dict[Node, Node]) -> bool:
    if isinstance(p, Node):
        return isinstance(g, Node) and _match_node(p, g, mapping)
    if isinstance(p, (tuple, list)):
        return isinstance(g, (tuple, list)) and len(p) == len(g) and all(_match_args(a, b, mapping) for a, b in zip(p, g))
    if isinstance(p, dict):
        return isinstance(g, dict) and p.keys() == g.keys() and all(_match_args(p[k], g[k], mapping) for k in p)
    return type(p) is type(g) and p == g


def _match_node(p: Node, g: Node, mapping: dict[Node, Node]) -> bool:
    if p in mapping:
        return mapping[p] is g
    if p.op == "placeholder":
        mapping[p] = g
        return True
    if p.op != g.op or p.target != g.target or len(p.args) != len(g.args):
        return False
    trial = dict(mapping)
    trial[p] = g
    if not (_match_args(p.args, g.args, trial) and _match_args(p.kwargs, g.kwargs, trial)):
        return False
    mapping.update(trial)
    return True


def replace_pattern(gm: GraphModule, pattern: Callable[..., Any] | GraphModule,
                    replacement: Callable[..., Any] | GraphModule) -> list[Match]:
    """Replace each non-overlapping match of `pattern` in `gm` with `replacement` (two functions
    taking the same inputs), recompile `gm` and return the matches.

    >>> def pattern(x):
    ...     return numdiff.neg(numdiff.neg(x))
    >>> def replacement(x):
    ...     return x
    """
    if not isinstance(gm, GraphModule):
        raise TypeError(f"replace_pattern: expected a GraphModule, got {type(gm).__name__}")
    pattern_gm, replacement_gm = _traced(pattern), _traced(replacement)
    anchor = _returned_node(pattern_gm, "pattern")
    pattern_inputs = [n for n in pattern_gm.graph.nodes if n.op == "placeholder"]
    replacement_inputs = [n for n in replacement_gm.graph.nodes if n.op == "placeholder"]
    if len(pattern_inputs) != len(replacement_inputs):
        raise ValueError(f"replace_pattern: the pattern takes {len(pattern_inputs)} inputs but the replacement "
                         f"takes {len(replacement_inputs)}; they must take the same inputs")
    graph = gm.graph
    matches: list[Match] = []
    claimed: set[Node] = set()
    for node in list(graph.nodes):
        if node in claimed or node._erased:
            continue
        mapping: dict[Node, Node] = {}
        if not _match_node(anchor, node, mapping):
            continue
        inner = {g for p, g in mapping.items() if p.op != "placeholder"}
        if inner & claimed or any(user not in inner for g in inner - {node} for user in g.users):
            continue
        claimed |= inner
        matches.append(Match(node, mapping))
    for match in matches:
        values = {r: match.nodes_map.get(p, p) for p, r in zip(pattern_inputs, replacement_inputs)}
        with graph.inserting_before(match.anchor):
            result = graph.graph_copy(replacement_gm.graph, values)
        for attr in (n.target for n in replacement_gm.graph.nodes if n.op in ("get_attr", "call_module")):
            if not hasattr(gm, attr.split(".")[0]):
                setattr(gm, attr.split(".")[0], getattr(replacement_gm, attr.split(".")[0]))
        match.anchor.replace_all_uses_with(result)
        inner = [g for p, g in match.nodes_map.items() if p.op != "placeholder"]
        for g in sorted(inner, key=_position(graph), reverse=True):
            graph.erase_node(g)
    gm.recompile()
    return matches


def _position(graph: Any) -> Callable[[Node], int]:
    order = {n: i for i, n in enumerate(graph.nodes)}
    return lambda n: order[n]
