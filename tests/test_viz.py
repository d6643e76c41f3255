"""draw_graph: the SVG parses, and it names every leaf, op, retained intermediate and the output."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET

import pytest

import numdiff
from numdiff.viz import draw_graph

SVG = "{http://www.w3.org/2000/svg}"


def _nodes(svg: str) -> dict[str, list[list[str]]]:
    """Node kind -> the text lines of each box of that kind."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    found: dict[str, list[list[str]]] = {}
    for group in root.iter(f"{SVG}g"):
        classes = group.get("class", "").split()
        if classes[:1] != ["node"]:
            continue
        text = group.find(f"{SVG}text")
        lines = [span.text or "" for span in text.iter(f"{SVG}tspan")]
        found.setdefault(classes[1], []).append(lines)
    return found


def _small_graph():
    w = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = numdiff.tensor([0.5], requires_grad=True)
    x = numdiff.tensor([4.0, 5.0, 6.0])  # no grad: must not appear
    h = w * x
    h.retain_grad()
    loss = (h.exp() + b).sum()
    return w, b, h, loss


def test_svg_parses_and_labels_leaves_ops_retained_and_output():
    w, b, h, loss = _small_graph()
    drawing = draw_graph(loss, params={"w": w, "b": b})
    nodes = _nodes(drawing.svg)

    leaves = {lines[0]: lines for lines in nodes["leaf"]}
    assert set(leaves) == {"w", "b"}
    assert leaves["w"][1:] == ["(3,) float32", "requires_grad=True"]
    assert leaves["b"][1] == "(1,) float32"

    op_names = sorted(lines[0] for lines in nodes["op"])
    assert op_names == ["AddBackward", "ExpBackward", "SumBackward"]
    (retained,) = nodes["retained"]
    assert retained[0] == "MulBackward"
    assert retained[1] == "retains grad (3,) float32"
    (output,) = nodes["output"]
    assert output == ["output", "() float32"]


def test_edges_follow_next_functions_forward():
    w, b, h, loss = _small_graph()
    root = ET.fromstring(draw_graph(loss).svg)
    edges = [g for g in root.iter(f"{SVG}g") if g.get("class") == "edge"]
    # w->Mul, Mul->Exp, Exp->Add, b->Add, Add->Sum, Sum->output
    assert len(edges) == 6
    for edge in edges:
        assert edge.find(f"{SVG}polyline") is not None
        assert edge.find(f"{SVG}polygon") is not None


def test_arrows_point_down_from_leaves_to_output():
    w = numdiff.ones(2, requires_grad=True)
    drawing = draw_graph((w * 2).sum())
    root = ET.fromstring(drawing.svg)
    for line in root.iter(f"{SVG}polyline"):
        ys = [float(p.split(",")[1]) for p in line.get("points").split()]
        assert ys == sorted(ys) and ys[0] < ys[-1]


def test_a_tensor_used_twice_is_one_edge_marked_x2():
    x = numdiff.tensor([3.0], requires_grad=True)
    drawing = draw_graph((x * x).sum())
    assert re.search(r">x2</text>", drawing.svg)
    assert 'label="x2"' in drawing.dot


def test_show_saved_lists_saved_values_and_freed_state():
    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    exp_box = [n for n in _nodes(draw_graph(y, show_saved=True).svg)["op"] if n[0] == "ExpBackward"]
    assert exp_box[0][1] == "saved result: (2,)"
    y.backward()
    after = [n for n in _nodes(draw_graph(y, show_saved=True).svg)["op"] if n[0] == "ExpBackward"]
    assert "saved: freed by backward" in after[0]
    plain = [n for n in _nodes(draw_graph(y).svg)["op"] if n[0] == "ExpBackward"]
    assert plain[0] == ["ExpBackward"]


def test_named_parameters_label_leaves():
    w = numdiff.randn(2, 2, requires_grad=True)
    drawing = draw_graph((w * w).sum(), params=[("layer.weight", w)])
    assert [lines[0] for lines in _nodes(drawing.svg)["leaf"]] == ["layer.weight"]


def test_leaf_output_and_no_grad_tensor_still_draw():
    leaf = numdiff.ones(3, requires_grad=True)
    nodes = _nodes(draw_graph(leaf).svg)
    assert nodes["output"][0][0] == "output: leaf"
    plain = numdiff.ones(3)
    lines = _nodes(draw_graph(plain).svg)["output"][0]
    assert lines[-1] == "no graph: nothing requires grad"


def test_dot_text_has_every_box_and_edge():
    w, b, h, loss = _small_graph()
    dot = draw_graph(loss, params={"w": w, "b": b}).dot
    assert dot.startswith("digraph backward {") and dot.rstrip().endswith("}")
    assert len(re.findall(r"^\s+n\d+ \[label=", dot, flags=re.M)) == 7
    assert len(re.findall(r"^\s+n\d+ -> n\d+", dot, flags=re.M)) == 6
    assert 'label="w\\n(3,) float32\\nrequires_grad=True"' in dot


def test_jupyter_display_and_save(tmp_path):
    w = numdiff.ones(2, requires_grad=True)
    drawing = draw_graph(w.sum())
    assert drawing._repr_svg_() == drawing.svg == drawing.source
    assert drawing.save(tmp_path / "g.svg").read_text() == drawing.svg
    assert drawing.save(tmp_path / "g.dot").read_text() == drawing.dot


def test_deep_graph_does_not_recurse():
    x = numdiff.ones(1, requires_grad=True)
    y = x
    for _ in range(sys.getrecursionlimit() + 100):
        y = y * 1.0
    nodes = _nodes(draw_graph(y).svg)
    assert len(nodes["op"]) == sys.getrecursionlimit() + 100


def test_boxes_do_not_overlap():
    xs = [numdiff.randn(2, requires_grad=True) for _ in range(5)]
    total = xs[0]
    for x in xs[1:]:
        total = total + x.exp() * x
    root = ET.fromstring(draw_graph(total.sum()).svg)
    rects = []
    for group in root.iter(f"{SVG}g"):
        if group.get("class", "").startswith("node"):
            r = group.find(f"{SVG}rect")
            rects.append(tuple(float(r.get(k)) for k in ("x", "y", "width", "height")))
    for i, (x1, y1, w1, h1) in enumerate(rects):
        for x2, y2, w2, h2 in rects[i + 1 :]:
            overlap_x = x1 < x2 + w2 and x2 < x1 + w1
            overlap_y = y1 < y2 + h2 and y2 < y1 + h1
            assert not (overlap_x and overlap_y)


def test_rejects_non_tensor():
    with pytest.raises(TypeError, match="numdiff Tensor"):
        draw_graph([1.0, 2.0])
