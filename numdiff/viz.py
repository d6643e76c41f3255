"""Draw a tensor's backward graph as SVG (shown inline by Jupyter) or as Graphviz DOT text.

The picture follows the data forward: leaves at the top, the op nodes that recorded each step,
and the output at the bottom. Each arrow is one edge of ``grad_fn.next_functions`` drawn the
other way round, so backward walks the arrows from the bottom up. Layout is a small layered
(Sugiyama-style) layout written here, so no Graphviz binary is needed:

numdiff/_graph_layout.py (layers by longest path, dummy points on long edges, barycenter
ordering, boxes pulled towards their neighbours).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from numdiff._graph_layout import CHAR_W, LINE_H, MARGIN, PAD_X, PAD_Y, Box, layout
from numdiff.autograd.node import AccumulateGrad, _SavedOutput
from numdiff.tensor import Tensor

__all__ = ["GraphDrawing", "draw_graph"]

# Node bookkeeping that a reader of the graph does not need to see.
_HIDDEN_ATTRS = frozenset({"materialize_grads", "needs_input_grad"})

_FILL = {
    "leaf": "#cfe2ff",
    "op": "#eeeeee",
    "retained": "#ffe0a8",
    "output": "#c9efc9",
    "constant": "#ffffff",
}
_LEGEND = (
    ("leaf", "leaf (requires_grad)"),
    ("op", "op node (grad_fn)"),
    ("retained", "retains grad"),
    ("output", "output"),
)


@dataclass
class GraphDrawing:
    """A drawn backward graph: ``.svg`` (also ``.source``) and ``.dot`` text; Jupyter shows the SVG.

    >>> w = numdiff.ones(3, requires_grad=True)
    >>> drawing = draw_graph((w * 2).sum())
    >>> drawing.save("graph.svg")
    """

    svg: str
    dot: str
    labels: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        return self.svg

    def _repr_svg_(self) -> str:
        return self.svg

    def save(self, path: str | Path) -> Path:
        """Write the SVG, or the DOT text when the file name ends in ``.dot`` or ``.gv``."""
        path = Path(path)
        text = self.dot if path.suffix in (".dot", ".gv") else self.svg
        path.write_text(text, encoding="utf-8")
        return path

    def __repr__(self) -> str:
        return f"<GraphDrawing of {len(self.labels)} nodes: {', '.join(self.labels[:6])}...>"


def draw_graph(
    tensor: Tensor,
    params: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None = None,
    show_saved: bool = False,
) -> GraphDrawing:
    """Draw the backward graph that ends at `tensor`.

    `params` names leaves (a dict or ``model.named_parameters()``); `show_saved` lists what each
    op saved for backward (shapes, or "freed" once a backward released it) and its attributes.

    >>> x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    >>> h = x * 3; h.retain_grad()
    >>> draw_graph(h.exp().sum(), params={"x": x})  # an SVG in Jupyter

    A compiled function or module (numdiff.compile) draws its latest traced forward graph.
    """
    from numdiff.compile.drawing import graph_boxes, traced_graph

    graph = None if isinstance(tensor, Tensor) else traced_graph(tensor)
    if graph is not None:
        boxes, edges = graph_boxes(graph)
    elif not isinstance(tensor, Tensor):
        raise TypeError(f"draw_graph expects a numdiff Tensor, got {type(tensor).__name__}")
    else:
        boxes, edges = _build(tensor, _leaf_names(params), show_saved)
    paths, width, height = layout(boxes, edges, min_width=_legend_width())
    labels = [box.lines[0] for box in boxes.values() if box.kind != "dummy"]
    svg = _to_svg(boxes, paths, edges, width, height)
    dot = _to_dot(boxes, edges)
    return GraphDrawing(svg=svg, dot=dot, labels=labels)


# --------------------------------------------------------------------------- graph to boxes


def _leaf_names(params: Any) -> dict[int, str]:
    if params is None:
        return {}
    items = params.items() if isinstance(params, Mapping) else params
    return {id(t): name for name, t in items}


def _describe(t: Tensor) -> str:
    return f"{tuple(t.shape)} {t.dtype.name}"


def _leaf_lines(t: Tensor, names: dict[int, str]) -> list[str]:
    lines = [names.get(id(t), "leaf"), _describe(t), f"requires_grad={t.requires_grad}"]
    if t._hooks:
        lines.append(f"hooks: {len(t._hooks)}")
    return lines


def _op_lines(node: Any, show_saved: bool) -> tuple[str, list[str]]:
    lines = [node.name()]
    kind = "op"
    retained = node._retained() if getattr(node, "_retained", None) is not None else None
    if retained is not None:
        kind = "retained"
        lines.append(f"retains grad {_describe(retained)}")
    if getattr(node, "_pre_hooks", None):
        lines.append(f"hooks: {len(node._pre_hooks)}")
    if show_saved:
        if getattr(node, "_freed", False):
            lines.append("saved: freed by backward")
        for i, item in enumerate(getattr(node, "_saved", ())):
            if isinstance(item, _SavedOutput):
                lines.append(f"saved result: {tuple(item.data.shape)}")
            elif isinstance(item, Tensor):
                lines.append(f"saved[{i}]: {_describe(item)}")
            elif hasattr(item, "value"):  # a Python number operand, kept as a number
                lines.append(f"saved[{i}]: {item.value!r}")
        attrs = node.__dict__ if hasattr(node, "__dict__") else {}
        for name, value in attrs.items():
            if name in _HIDDEN_ATTRS:
                continue
            text = repr(value)
            lines.append(f"{name}={text if len(text) <= 32 else text[:29] + '...'}")
    return kind, lines


def _build(
    tensor: Tensor, names: dict[int, str], show_saved: bool
) -> tuple[dict[Any, Box], list[tuple[Any, Any, int]]]:
    """Boxes keyed by node identity, and forward edges (input, consumer, multiplicity)."""
    boxes: dict[Any, Box] = {}
    output_key = ("output",)
    root = tensor.grad_fn
    if root is None:
        lines = _leaf_lines(tensor, names)
        lines[0] = f"output: {lines[0]}"
        if not tensor.requires_grad:
            lines.append("no graph: nothing requires grad")
        boxes[output_key] = Box(output_key, "output", lines)
        return boxes, []
    boxes[output_key] = Box(output_key, "output", [names.get(id(tensor), "output"), _describe(tensor)])
    counts: dict[tuple[Any, Any], int] = {(id(root), output_key): 1}
    stack = [root]
    seen = {id(root)}
    while stack:  # iterative: deep graphs must not hit the recursion limit
        node = stack.pop()
        if isinstance(node, AccumulateGrad):
            boxes[id(node)] = Box(id(node), "leaf", _leaf_lines(node.variable, names))
            continue
        kind, lines = _op_lines(node, show_saved)
        boxes[id(node)] = Box(id(node), kind, lines)
        for nxt, _ in reversed(node.next_functions):
            if nxt is None:
                continue
            edge = (id(nxt), id(node))
            counts[edge] = counts.get(edge, 0) + 1
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    edges = [(u, v, n) for (u, v), n in counts.items()]
    return boxes, edges


# --------------------------------------------------------------------------- output


def _legend_width() -> float:
    return sum(len(text) * CHAR_W + 2 * PAD_X + 8 for _, text in _LEGEND)


def _svg_box(box: Box) -> str:
    left = box.x - box.w / 2
    stroke = "#c77700" if box.kind == "retained" else "#333333"
    stroke_width = 2.5 if box.kind in ("retained", "output") else 1
    parts = [
        f'<g class="node {box.kind}"><title>{escape(" | ".join(box.lines), quote=False)}</title>',
        f'<rect x="{left:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="4" '
        f'fill="{_FILL[box.kind]}" stroke="{stroke}" stroke-width="{stroke_width}"/>',
        f'<text x="{box.x:.1f}" y="{box.y + PAD_Y:.1f}" text-anchor="middle">',
    ]
    for i, line in enumerate(box.lines):
        weight = ' font-weight="bold"' if i == 0 else ""
        parts.append(f'<tspan x="{box.x:.1f}" dy="{LINE_H - 3 if i == 0 else LINE_H:.1f}"{weight}>')
        parts.append(f"{escape(line, quote=False)}</tspan>")
    parts.append("</text></g>")
    return "".join(parts)


def _ports(boxes: dict[Any, Box], paths: list[list[Any]]) -> tuple[list[float], list[float]]:
    """Where each edge leaves its source and enters its target: spread along the box side, in the
    left-to-right order of the other ends, so arrows into one box do not meet in one point."""
    starts = [boxes[p[0]].x for p in paths]
    ends = [boxes[p[-1]].x for p in paths]
    for own, other, result in ((0, 1, starts), (-1, -2, ends)):
        by_box: dict[Any, list[int]] = {}
        for i, path in enumerate(paths):
            by_box.setdefault(path[own], []).append(i)
        for key, indices in by_box.items():
            box = boxes[key]
            indices.sort(key=lambda i: boxes[paths[i][other]].x)
            span = min(box.w * 0.6, 16.0 * (len(indices) - 1))
            for rank, i in enumerate(indices):
                offset = span * (rank / (len(indices) - 1) - 0.5) if len(indices) > 1 else 0.0
                result[i] = box.x + offset
    return starts, ends


def _svg_edge(boxes: dict[Any, Box], path: list[Any], count: int, start_x: float, end_x: float) -> str:
    start, end = boxes[path[0]], boxes[path[-1]]
    points = [(start_x, start.y + start.h)]
    points += [(boxes[k].x, boxes[k].y) for k in path[1:-1]]
    points.append((end_x, end.y))
    (x0, y0), (x1, y1) = points[-2], points[-1]
    # An explicit arrowhead polygon, not a <marker>: marker ids would clash between drawings
    # shown on one notebook page.
    dx, dy = x1 - x0, y1 - y0
    norm = max((dx * dx + dy * dy) ** 0.5, 1e-9)
    ux, uy = dx / norm, dy / norm
    bx, by = x1 - 9 * ux, y1 - 9 * uy
    head = f"{x1:.1f},{y1:.1f} {bx - 4 * uy:.1f},{by + 4 * ux:.1f} {bx + 4 * uy:.1f},{by - 4 * ux:.1f}"
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points[:-1]) + f" {bx:.1f},{by:.1f}"
    parts = [
        '<g class="edge">',
        f'<polyline points="{line}" fill="none" stroke="#555555" stroke-width="1.2"/>',
        f'<polygon points="{head}" fill="#555555"/>',
    ]
    if count > 1:
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        parts.append(f'<text x="{mx + 6:.1f}" y="{my:.1f}" font-size="11">x{count}</text>')
    parts.append("</g>")
    return "".join(parts)


def _to_svg(
    boxes: dict[Any, Box],
    paths: list[list[Any]],
    edges: list[tuple[Any, Any, int]],
    width: float,
    height: float,
) -> str:
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.1f} {height:.1f}" font-family="monospace" font-size="12">',
        f'<rect width="{width:.1f}" height="{height:.1f}" fill="white"/>',
    ]
    starts, ends = _ports(boxes, paths)
    for path, (_, _, count), start_x, end_x in zip(paths, edges, starts, ends):
        parts.append(_svg_edge(boxes, path, count, start_x, end_x))
    for box in boxes.values():
        if box.kind != "dummy":
            parts.append(_svg_box(box))
    x = MARGIN
    y = height - MARGIN - LINE_H - 2 * PAD_Y + 4
    parts.append('<g class="legend" font-size="11">')
    for kind, text in _LEGEND:
        w = len(text) * CHAR_W + 2 * PAD_X
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{LINE_H + 4:.1f}" rx="3" '
            f'fill="{_FILL[kind]}" stroke="#999999"/>'
            f'<text x="{x + PAD_X:.1f}" y="{y + LINE_H - 1:.1f}">{escape(text, quote=False)}</text>'
        )
        x += w + 8
    parts.append("</g></svg>")
    return "\n".join(parts)


def _to_dot(boxes: dict[Any, Box], edges: list[tuple[Any, Any, int]]) -> str:
    names = {key: f"n{i}" for i, key in enumerate(k for k, b in boxes.items() if b.kind != "dummy")}
    lines = [
        "digraph backward {",
        '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=11];',
    ]
    for key, box in boxes.items():
        if box.kind == "dummy":
            continue
        label = "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in box.lines)
        extra = ', penwidth=2.5, color="#c77700"' if box.kind == "retained" else ""
        lines.append(f'  {names[key]} [label="{label}", fillcolor="{_FILL[box.kind]}"{extra}];')
    for u, v, count in edges:
        label = f' [label="x{count}"]' if count > 1 else ""
        lines.append(f"  {names[u]} -> {names[v]}{label};")
    lines.append("}")
    return "\n".join(lines)


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
