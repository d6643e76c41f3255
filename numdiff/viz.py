"""Draw a tensor's backward graph as SVG (shown inline by Jupyter) or as Graphviz DOT text.

The picture follows the data forward: leaves at the top, the op nodes that recorded each step,
and the output at the bottom. Each arrow is one edge of ``grad_fn.next_functions`` drawn the
other way round, so backward walks the arrows from the bottom up. Layout is a small layered
(Sugiyama-style) layout written here, so no Graphviz binary is needed:

1. layers by longest path from the output (a node sits one layer above its highest consumer),
2. dummy points on edges that skip layers, so long edges bend around boxes,
3. a few barycenter sweeps to order each layer and reduce crossings,
4. boxes sized from their text and pulled towards their neighbours' mean x.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from numdiff.autograd.function import AccumulateGrad, _SavedOutput
from numdiff.tensor import Tensor

__all__ = ["GraphDrawing", "draw_graph"]

_CHAR_W = 7.2  # monospace 12px: average advance of one character
_LINE_H = 15.0
_PAD_X = 8.0
_PAD_Y = 6.0
_GAP_X = 24.0
_GAP_Y = 44.0
_MARGIN = 16.0
_DUMMY_W = 8.0
_SWEEPS = 4
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
class _Box:
    key: Any
    kind: str  # leaf, op, retained, output, constant, dummy
    lines: list[str]
    layer: int = 0
    x: float = 0.0  # centre
    y: float = 0.0  # top
    w: float = _DUMMY_W
    h: float = 0.0


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
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"draw_graph expects a numdiff Tensor, got {type(tensor).__name__}")
    names = _leaf_names(params)
    boxes, edges = _build(tensor, names, show_saved)
    layers = _assign_layers(boxes, edges)
    paths = _insert_dummies(boxes, edges, layers)
    _order_layers(layers, paths)
    width, height = _place(boxes, layers, paths)
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
) -> tuple[dict[Any, _Box], list[tuple[Any, Any, int]]]:
    """Boxes keyed by node identity, and forward edges (input, consumer, multiplicity)."""
    boxes: dict[Any, _Box] = {}
    output_key = ("output",)
    root = tensor.grad_fn
    if root is None:
        lines = _leaf_lines(tensor, names)
        lines[0] = f"output: {lines[0]}"
        if not tensor.requires_grad:
            lines.append("no graph: nothing requires grad")
        boxes[output_key] = _Box(output_key, "output", lines)
        return boxes, []
    boxes[output_key] = _Box(output_key, "output", [names.get(id(tensor), "output"), _describe(tensor)])
    counts: dict[tuple[Any, Any], int] = {(id(root), output_key): 1}
    stack = [root]
    seen = {id(root)}
    while stack:  # iterative: deep graphs must not hit the recursion limit
        node = stack.pop()
        if isinstance(node, AccumulateGrad):
            boxes[id(node)] = _Box(id(node), "leaf", _leaf_lines(node.variable, names))
            continue
        kind, lines = _op_lines(node, show_saved)
        boxes[id(node)] = _Box(id(node), kind, lines)
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


# --------------------------------------------------------------------------- layout


def _assign_layers(boxes: dict[Any, _Box], edges: list[tuple[Any, Any, int]]) -> list[list[Any]]:
    """Longest path from the output: depth(n) = 1 + max depth of n's consumers; output at bottom."""
    consumers_left: dict[Any, int] = {key: 0 for key in boxes}
    inputs: dict[Any, list[Any]] = {key: [] for key in boxes}
    for u, v, _ in edges:
        consumers_left[u] += 1
        inputs[v].append(u)
    depth = {key: 0 for key in boxes}
    ready = [key for key, n in consumers_left.items() if n == 0]
    order = []
    while ready:  # Kahn's algorithm from the output towards the leaves
        key = ready.pop()
        order.append(key)
        for u in inputs[key]:
            depth[u] = max(depth[u], depth[key] + 1)
            consumers_left[u] -= 1
            if consumers_left[u] == 0:
                ready.append(u)
    deepest = max(depth.values())
    layers: list[list[Any]] = [[] for _ in range(deepest + 1)]
    for key in boxes:  # insertion order is discovery order: a sensible first ordering
        boxes[key].layer = deepest - depth[key]
        layers[boxes[key].layer].append(key)
    return layers


def _insert_dummies(
    boxes: dict[Any, _Box], edges: list[tuple[Any, Any, int]], layers: list[list[Any]]
) -> list[list[Any]]:
    """One path of keys per edge, with a dummy point on every layer the edge crosses."""
    paths = []
    for u, v, _ in edges:
        path = [u]
        for layer in range(boxes[u].layer + 1, boxes[v].layer):
            key = ("dummy", u, v, layer)
            boxes[key] = _Box(key, "dummy", [""], layer=layer)
            layers[layer].append(key)
            path.append(key)
        path.append(v)
        paths.append(path)
    return paths


def _neighbours(paths: list[list[Any]]) -> tuple[dict[Any, list[Any]], dict[Any, list[Any]]]:
    """Each key's neighbours on the layer above and on the layer below."""
    above: dict[Any, list[Any]] = {}
    below: dict[Any, list[Any]] = {}
    for path in paths:
        for a, b in zip(path, path[1:]):
            below.setdefault(a, []).append(b)
            above.setdefault(b, []).append(a)
    return above, below


def _order_layers(layers: list[list[Any]], paths: list[list[Any]]) -> None:
    """Barycenter heuristic: sort each layer by the mean position of its neighbours, both ways."""
    above, below = _neighbours(paths)

    def sweep(indices: range, neighbours: dict[Any, list[Any]], ref_step: int) -> None:
        for i in indices:
            ref = {key: pos for pos, key in enumerate(layers[i + ref_step])}
            current = {key: pos for pos, key in enumerate(layers[i])}
            weight = {key: _barycenter(neighbours.get(key, ()), ref, current[key]) for key in current}
            layers[i].sort(key=lambda key: (weight[key], current[key]))

    for _ in range(_SWEEPS):
        sweep(range(1, len(layers)), above, -1)
        sweep(range(len(layers) - 2, -1, -1), below, 1)


def _barycenter(linked: Any, ref: dict[Any, int], fallback: int) -> float:
    positions = [ref[n] for n in linked if n in ref]
    return sum(positions) / len(positions) if positions else float(fallback)


def _place(boxes: dict[Any, _Box], layers: list[list[Any]], paths: list[list[Any]]) -> tuple[float, float]:
    """Size boxes, then pull each box towards its neighbours' mean x, keeping order and gaps."""
    for box in boxes.values():
        if box.kind != "dummy":
            box.w = max(len(line) for line in box.lines) * _CHAR_W + 2 * _PAD_X
            box.h = len(box.lines) * _LINE_H + 2 * _PAD_Y
    for row in layers:
        x = 0.0
        for key in row:
            boxes[key].x = x + boxes[key].w / 2
            x += boxes[key].w + _GAP_X
    neighbours = {key: a + b for key, a, b in _merged(*_neighbours(paths))}
    for _ in range(_SWEEPS * 2):
        for row in layers:
            _pull_row(boxes, row, neighbours)
    left = min(boxes[k].x - boxes[k].w / 2 for row in layers for k in row)
    right = max(boxes[k].x + boxes[k].w / 2 for row in layers for k in row)
    width = max(right - left, _legend_width()) + 2 * _MARGIN
    shift = _MARGIN - left + (width - 2 * _MARGIN - (right - left)) / 2
    y = _MARGIN
    for row in layers:
        row_h = max((boxes[k].h for k in row), default=0.0)
        for key in row:
            boxes[key].x += shift
            boxes[key].y = y + (row_h - boxes[key].h) / 2
        y += row_h + _GAP_Y
    legend_h = _LINE_H + 2 * _PAD_Y
    return width, y - _GAP_Y + _MARGIN + legend_h


def _merged(
    above: dict[Any, list[Any]], below: dict[Any, list[Any]]
) -> Iterable[tuple[Any, list[Any], list[Any]]]:
    for key in set(above) | set(below):
        yield key, above.get(key, []), below.get(key, [])


def _pull_row(boxes: dict[Any, _Box], row: list[Any], neighbours: dict[Any, list[Any]]) -> None:
    """Move a row's boxes towards their neighbours' mean x without reordering or overlapping them.

    Packing left-to-right (each box as far left as its wish allows) and right-to-left give two
    feasible placements; their average is feasible too and favours neither side.
    """
    wish = []
    for key in row:
        linked = neighbours.get(key, [])
        wish.append(sum(boxes[n].x for n in linked) / len(linked) if linked else boxes[key].x)
    widths = [boxes[key].w for key in row]
    forward = list(wish)
    for i in range(1, len(row)):
        forward[i] = max(wish[i], forward[i - 1] + (widths[i - 1] + widths[i]) / 2 + _GAP_X)
    backward = list(wish)
    for i in range(len(row) - 2, -1, -1):
        backward[i] = min(wish[i], backward[i + 1] - (widths[i] + widths[i + 1]) / 2 - _GAP_X)
    for key, a, b in zip(row, forward, backward):
        boxes[key].x = (a + b) / 2


# --------------------------------------------------------------------------- output


def _legend_width() -> float:
    return sum(len(text) * _CHAR_W + 2 * _PAD_X + 8 for _, text in _LEGEND)


def _svg_box(box: _Box) -> str:
    left = box.x - box.w / 2
    stroke = "#c77700" if box.kind == "retained" else "#333333"
    stroke_width = 2.5 if box.kind in ("retained", "output") else 1
    parts = [
        f'<g class="node {box.kind}"><title>{escape(" | ".join(box.lines))}</title>',
        f'<rect x="{left:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="4" '
        f'fill="{_FILL[box.kind]}" stroke="{stroke}" stroke-width="{stroke_width}"/>',
        f'<text x="{box.x:.1f}" y="{box.y + _PAD_Y:.1f}" text-anchor="middle">',
    ]
    for i, line in enumerate(box.lines):
        weight = ' font-weight="bold"' if i == 0 else ""
        parts.append(f'<tspan x="{box.x:.1f}" dy="{_LINE_H - 3 if i == 0 else _LINE_H:.1f}"{weight}>')
        parts.append(f"{escape(line)}</tspan>")
    parts.append("</text></g>")
    return "".join(parts)


def _ports(boxes: dict[Any, _Box], paths: list[list[Any]]) -> tuple[list[float], list[float]]:
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


def _svg_edge(boxes: dict[Any, _Box], path: list[Any], count: int, start_x: float, end_x: float) -> str:
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
    boxes: dict[Any, _Box],
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
    x = _MARGIN
    y = height - _MARGIN - _LINE_H - 2 * _PAD_Y + 4
    parts.append('<g class="legend" font-size="11">')
    for kind, text in _LEGEND:
        w = len(text) * _CHAR_W + 2 * _PAD_X
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{_LINE_H + 4:.1f}" rx="3" '
            f'fill="{_FILL[kind]}" stroke="#999999"/>'
            f'<text x="{x + _PAD_X:.1f}" y="{y + _LINE_H - 1:.1f}">{escape(text)}</text>'
        )
        x += w + 8
    parts.append("</g></svg>")
    return "\n".join(parts)


def _to_dot(boxes: dict[Any, _Box], edges: list[tuple[Any, Any, int]]) -> str:
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
