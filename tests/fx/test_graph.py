"""Graph and Node: building, placing, rewriting, copying, lint, printing and generated code."""

from __future__ import annotations

import copy
import operator
import pickle

import numpy as np
import pytest

import numdiff
import numdiff.fx as fx


def _graph() -> tuple[fx.Graph, fx.Node, fx.Node, fx.Node]:
    graph = fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(operator.add, (x, 1.0))
    z = graph.call_method("relu", (y,))
    graph.output(z)
    return graph, x, y, z


def test_nodes_know_their_inputs_and_users() -> None:
    graph, x, y, z = _graph()
    assert y.all_input_nodes == [x] and list(x.users) == [y] and list(y.users) == [z]
    assert [n.name for n in graph.nodes] == ["x", "add", "relu", "output"]
    assert [n.name for n in reversed(graph.nodes)] == ["output", "relu", "add", "x"]
    y.args = (x, x)
    assert list(x.users) == [y] and y.all_input_nodes == [x]


def test_replace_all_uses_with_and_erase() -> None:
    graph, x, y, z = _graph()
    with graph.inserting_after(y):
        w = graph.call_function(numdiff.neg, (y,))
    changed = y.replace_all_uses_with(w, delete_user_cb=lambda user: user is not w)
    assert changed == [z] and z.args == (w,)
    assert [n.name for n in graph.nodes] == ["x", "add", "neg", "relu", "output"]
    with pytest.raises(RuntimeError, match="still has 1 users"):
        graph.erase_node(y)
    z.replace_input_with(w, x)
    graph.erase_node(w)
    graph.erase_node(y)
    assert [n.name for n in graph.nodes] == ["x", "relu", "output"]
    graph.lint()


def test_inserting_before_and_moving_nodes() -> None:
    graph, x, y, z = _graph()
    with graph.inserting_before(y):
        a = graph.call_function(numdiff.exp, (x,))
        b = graph.call_function(numdiff.exp, (a,))
    assert [n.name for n in graph.nodes] == ["x", "exp", "exp_1", "add", "relu", "output"]
    z.append(a)  # moves a after z
    assert [n.name for n in graph.nodes] == ["x", "exp_1", "add", "relu", "exp", "output"]
    with pytest.raises(fx.GraphLintError, match="reads exp before it is defined"):
        graph.lint()
    b.prepend(a)
    graph.lint()
    assert b.prev is a and a.next is b


def test_dead_code_elimination_keeps_impure_nodes() -> None:
    graph, x, y, z = _graph()
    with graph.inserting_before(z):
        graph.call_function(numdiff.exp, (x,))
        graph.call_method("add_", (x, 1))
    assert graph.eliminate_dead_code()
    assert [n.target for n in graph.nodes if n.op != "placeholder"] == [operator.add, "add_", "relu", "output"]


def test_lint_names_a_node_from_another_graph_and_a_missing_attribute() -> None:
    graph, x, y, z = _graph()
    erased = graph.call_function(numdiff.exp, (x,))
    graph.erase_node(erased)
    object.__setattr__(z, "_args", (erased,))  # a corrupt graph, built past the checks
    z._input_nodes = {erased: None}
    with pytest.raises(fx.GraphLintError, match="relu .* reads exp, which is not in this Graph"):
        graph.lint()
    graph2 = fx.Graph()
    x2 = graph2.placeholder("x")
    graph2.output(graph2.get_attr("missing.weight"))
    graph2.owning_module = numdiff.nn.Module()
    with pytest.raises(fx.GraphLintError, match="get_attr_1|missing_weight.*no attribute 'missing'"):
        graph2.lint()
    assert x2.op == "placeholder"


def test_generated_code_runs_and_frees_values() -> None:
    graph, x, y, z = _graph()
    gm = fx.GraphModule(numdiff.nn.Module(), graph)
    assert "add = x + 1.0;  x = None" in gm.code
    assert "relu = add.relu();  add = None" in gm.code
    np.testing.assert_allclose(gm(numdiff.tensor([-3.0, 1.0])).numpy(), [0.0, 2.0])


def test_node_copy_graph_copy_and_deepcopy() -> None:
    graph, x, y, z = _graph()
    other = fx.Graph()
    env: dict = {}
    result = other.graph_copy(graph, env)
    other.output(result)
    assert [n.name for n in other.nodes] == ["x", "add", "relu", "output"]
    assert env[y].args == (env[x], 1.0)
    clone = copy.deepcopy(graph)
    assert str(clone) == str(graph)
    rebuilt = pickle.loads(pickle.dumps(graph))
    assert str(rebuilt) == str(graph)


def test_print_tabular_and_format_node(capsys) -> None:
    graph, x, y, z = _graph()
    graph.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert lines[3].split()[:2] == ["call_function", "add"]
    assert y.format_node() == "%add : [num_users=1] = call_function[target=add](args = (%x, 1.0), kwargs = {})"
    assert "return %relu" in str(graph)


def test_graph_module_from_a_dict_root() -> None:
    graph = fx.Graph()
    x = graph.placeholder("x")
    w = graph.get_attr("layer.weight")
    graph.output(graph.call_function(operator.mul, (x, w)))
    gm = fx.GraphModule({"layer.weight": numdiff.tensor([2.0, 3.0])}, graph)
    np.testing.assert_allclose(gm(numdiff.ones(2)).numpy(), [2.0, 3.0])
    with pytest.raises(RuntimeError, match="reads 'layer.weight', which the root dict does not have"):
        fx.GraphModule({}, graph)


def test_bad_node_kinds_are_refused() -> None:
    graph = fx.Graph()
    with pytest.raises(ValueError, match="op must be one of"):
        graph.create_node("call_everything", "x")
    with pytest.raises(ValueError, match="call_function node must be callable"):
        graph.call_function("relu", ())
    with pytest.raises(TypeError, match="Proxy: expected a numdiff.fx Node"):
        fx.Proxy("x")
