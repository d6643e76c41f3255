"""A small layered (Sugiyama-style) graph layout, so drawing a graph needs no Graphviz binary.

1. layers by longest path from the output (a node sits one layer above its highest consumer),
2. dummy points on edges that skip layers, so long edges bend around boxes,
3. a few barycenter sweeps to order each layer and reduce crossings,
4. boxes sized from their text and pulled towards their neighbours' mean x.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

CHAR_W = 7.2  # monospace 12px: average advance of one character
LINE_H = 15.0
PAD_X = 8.0
PAD_Y = 6.0
GAP_X = 24.0
GAP_Y = 44.0
MARGIN = 16.0
DUMMY_W = 8.0
SWEEPS = 4


@dataclass
class Box:
    key: Any
    kind: str  # leaf, op, retained, output, constant, dummy
    lines: list[str]
    layer: int = 0
    x: float = 0.0  # centre
    y: float = 0.0  # top
    w: float = DUMMY_W
    h: float = 0.0


def layout(
    boxes: dict[Any, Box], edges: list[tuple[Any, Any, int]], min_width: float
) -> tuple[list[list[Any]], float, float]:
    """Place every box; return each edge's path of keys and the drawing's width and height."""
    layers = _assign_layers(boxes, edges)
    paths = _insert_dummies(boxes, edges, layers)
    _order_layers(layers, paths)
    width, height = _place(boxes, layers, paths, min_width)
    return paths, width, height


def _assign_layers(boxes: dict[Any, Box], edges: list[tuple[Any, Any, int]]) -> list[list[Any]]:
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
    boxes: dict[Any, Box], edges: list[tuple[Any, Any, int]], layers: list[list[Any]]
) -> list[list[Any]]:
    """One path of keys per edge, with a dummy point on every layer the edge crosses."""
    paths = []
    for u, v, _ in edges:
        path = [u]
        for layer in range(boxes[u].layer + 1, boxes[v].layer):
            key = ("dummy", u, v, layer)
            boxes[key] = Box(key, "dummy", [""], layer=layer)
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

    for _ in range(SWEEPS):
        sweep(range(1, len(layers)), above, -1)
        sweep(range(len(layers) - 2, -1, -1), below, 1)


def _barycenter(linked: Any, ref: dict[Any, int], fallback: int) -> float:
    positions = [ref[n] for n in linked if n in ref]
    return sum(positions) / len(positions) if positions else float(fallback)


def _place(
    boxes: dict[Any, Box], layers: list[list[Any]], paths: list[list[Any]], min_width: float
) -> tuple[float, float]:
    """Size boxes, then pull each box towards its neighbours' mean x, keeping order and gaps."""
    for box in boxes.values():
        if box.kind != "dummy":
            box.w = max(len(line) for line in box.lines) * CHAR_W + 2 * PAD_X
            box.h = len(box.lines) * LINE_H + 2 * PAD_Y
    for row in layers:
        x = 0.0
        for key in row:
            boxes[key].x = x + boxes[key].w / 2
            x += boxes[key].w + GAP_X
    neighbours = {key: a + b for key, a, b in _merged(*_neighbours(paths))}
    for _ in range(SWEEPS * 2):
        for row in layers:
            _pull_row(boxes, row, neighbours)
    left = min(boxes[k].x - boxes[k].w / 2 for row in layers for k in row)
    right = max(boxes[k].x + boxes[k].w / 2 for row in layers for k in row)
    width = max(right - left, min_width) + 2 * MARGIN
    shift = MARGIN - left + (width - 2 * MARGIN - (right - left)) / 2
    y = MARGIN
    for row in layers:
        row_h = max((boxes[k].h for k in row), default=0.0)
        for key in row:
            boxes[key].x += shift
            boxes[key].y = y + (row_h - boxes[key].h) / 2
        y += row_h + GAP_Y
    footer_h = LINE_H + 2 * PAD_Y  # room for the legend row
    return width, y - GAP_Y + MARGIN + footer_h


def _merged(
    above: dict[Any, list[Any]], below: dict[Any, list[Any]]
) -> Iterable[tuple[Any, list[Any], list[Any]]]:
    for key in set(above) | set(below):
        yield key, above.get(key, []), below.get(key, [])


def _pull_row(boxes: dict[Any, Box], row: list[Any], neighbours: dict[Any, list[Any]]) -> None:
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
        forward[i] = max(wish[i], forward[i - 1] + (widths[i - 1] + widths[i]) / 2 + GAP_X)
    backward = list(wish)
    for i in range(len(row) - 2, -1, -1):
        backward[i] = min(wish[i], backward[i + 1] - (widths[i] + widths[i + 1]) / 2 - GAP_X)
    for key, a, b in zip(row, forward, backward):
        boxes[key].x = (a + b) / 2
