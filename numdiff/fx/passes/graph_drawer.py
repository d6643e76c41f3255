"""FxGraphDrawer, as text: each Node with its op, target and inputs, one block per Node, and the
edges between them. PyTorch's draws through pydot and Graphviz; this one writes the same content
as plain text (``get_text``) or a Graphviz ``dot`` source (``get_dot_graph``) without them."""

from __future__ import annotations

from typing import Any

from numdiff.fx.graph_module import GraphModule
from numdiff.fx.node import Node

__all__ = ["FxGraphDrawer"]


def __dir__() -> list[str]:
    return sorted(__all__)


class FxGraphDrawer:
    """A drawing of `graph_module`'s Graph named `name`.

    >>> gm = numdiff.fx.symbolic_trace(numdiff.nn.Sequential(numdiff.nn.ReLU()))
    >>> print(FxGraphDrawer(gm, "net").get_text().splitlines()[0])
    net
    """

    def __init__(self, graph_module: GraphModule, name: str, **ignored: Any) -> None:
        if not isinstance(graph_module, GraphModule):
            raise TypeError(f"FxGraphDrawer: expected a GraphModule, got {type(graph_module).__name__}")
        self.graph_module = graph_module
        self.name = name

    def _label(self, node: Node) -> str:
        target = node._pretty_target()
        meta = node.meta.get("tensor_meta")
        shape = f" {tuple(meta.shape)} {meta.dtype}" if hasattr(meta, "shape") else ""
        return f"{node.name}: {node.op} {target}{shape}"

    def get_text(self) -> str:
        """One line per Node (name, op, target, shape if ShapeProp ran) and its inputs."""
        lines = [self.name]
        for node in self.graph_module.graph.nodes:
            inputs = ", ".join(n.name for n in node.all_input_nodes)
            lines.append(f"  {self._label(node)}" + (f"  <- {inputs}" if inputs else ""))
        return "\n".join(lines)

    def get_dot_graph(self) -> str:
        """The Graph as Graphviz ``dot`` source (render it with Graphviz, if installed)."""
        lines = [f'digraph "{self.name}" {{', "  node [shape=record];"]
        for node in self.graph_module.graph.nodes:
            label = self._label(node).replace('"', "'").replace("{", "(").replace("}", ")")
            lines.append(f'  "{node.name}" [label="{label}"];')
            lines.extend(f'  "{used.name}" -> "{node.name}";' for used in node.all_input_nodes)
        lines.append("}")
        return "\n".join(lines)
