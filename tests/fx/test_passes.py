"""Interpreter, Transformer, replace_pattern and ShapeProp on traced modules."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.fx as fx
from numdiff import nn
from numdiff.fx.passes.shape_prop import ShapeProp


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x):
        return numdiff.neg(numdiff.sigmoid(self.fc(x))).sum(dim=1)


def test_interpreter_runs_node_by_node_and_overrides_see_each_node() -> None:
    gm = fx.symbolic_trace(Small())
    seen = []

    class Recording(fx.Interpreter):
        def run_node(self, n):
            seen.append(n.op)
            return super().run_node(n)

        def call_function(self, target, args, kwargs):
            if target is numdiff.neg:
                return args[0]  # neg dropped while interpreting
            return super().call_function(target, args, kwargs)

    x = numdiff.randn(2, 3)
    got = Recording(gm).run(x)
    want = numdiff.sigmoid(gm.fc(x)).sum(dim=1)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert seen == ["placeholder", "call_module", "call_function", "call_function", "call_method", "output"]
    args = [x]
    np.testing.assert_allclose(fx.Interpreter(gm).boxed_run(args).detach().numpy(), gm(x).detach().numpy())
    assert args == []


def test_interpreter_names_the_failing_node() -> None:
    gm = fx.symbolic_trace(Small())
    with pytest.raises(Exception) as info:
        fx.Interpreter(gm).run(numdiff.randn(2, 5))
    assert any("While executing %fc" in note for note in getattr(info.value, "__notes__", []))


def test_transformer_rewrites_functions_into_a_new_graph_module() -> None:
    class SigmoidToTanh(fx.Transformer):
        def call_function(self, target, args, kwargs):
            return super().call_function(numdiff.tanh if target is numdiff.sigmoid else target, args, kwargs)

    net = Small()
    gm = fx.symbolic_trace(net)
    new = SigmoidToTanh(gm).transform()
    targets = [n.target for n in new.graph.nodes if n.op == "call_function"]
    assert targets == [numdiff.tanh, numdiff.neg]
    x = numdiff.randn(2, 3)
    want = numdiff.neg(numdiff.tanh(net.fc(x))).sum(dim=1)
    np.testing.assert_allclose(new(x).detach().numpy(), want.detach().numpy(), rtol=1e-6)


def test_replace_pattern_replaces_every_non_overlapping_match() -> None:
    class M(nn.Module):
        def forward(self, x, w1, w2):
            m1 = numdiff.cat([numdiff.neg(w1), w2]).sum()
            m2 = numdiff.cat([numdiff.neg(w1), w2]).sum()
            return x + numdiff.max(m1) + numdiff.max(m2)

    def pattern(a1, a2):
        return numdiff.cat([numdiff.neg(a1), a2]).sum()

    def replacement(w1, w2):
        return numdiff.stack([w1, w2])

    gm = fx.symbolic_trace(M())
    matches = fx.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count(numdiff.stack) == 2 and numdiff.neg not in targets and numdiff.cat not in targets
    gm.graph.lint()
    x, w1, w2 = numdiff.randn(3), numdiff.randn(3), numdiff.randn(3)
    want = x + numdiff.stack([w1, w2]).max() * 2
    np.testing.assert_allclose(gm(x, w1, w2).numpy(), want.numpy(), rtol=1e-6)


def test_replace_pattern_skips_a_match_whose_inner_value_is_used_elsewhere() -> None:
    def f(x):
        y = numdiff.neg(x)
        return numdiff.exp(y) + y

    gm = fx.symbolic_trace(f)
    matches = fx.replace_pattern(gm, lambda a: numdiff.exp(numdiff.neg(a)), lambda a: numdiff.sigmoid(a))
    assert matches == []


def test_replace_pattern_refuses_mismatched_inputs() -> None:
    gm = fx.symbolic_trace(lambda x: numdiff.neg(x))
    with pytest.raises(ValueError, match="pattern takes 1 inputs but the replacement takes 2"):
        fx.replace_pattern(gm, lambda a: numdiff.neg(a), lambda a, b: a + b)


def test_shape_prop_records_tensor_meta_for_every_node() -> None:
    gm = fx.symbolic_trace(Small())
    ShapeProp(gm).propagate(numdiff.randn(5, 3))
    shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if n.op != "output"}
    assert shapes == {"x": (5, 3), "fc": (5, 4), "sigmoid": (5, 4), "neg": (5, 4), "sum_1": (5,)}
    meta = next(n for n in gm.graph.nodes if n.name == "fc").meta["tensor_meta"]
    assert meta.requires_grad and meta.is_contiguous


def test_proxies_built_by_hand_append_to_a_graph() -> None:
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    x = fx.Proxy(graph.placeholder("x"), tracer)
    y = fx.Proxy(graph.placeholder("y"), tracer)
    out = numdiff.neg(numdiff.tanh(numdiff.cat([x, y]))) * 2 + y.sum()
    graph.output(out.node)
    gm = fx.GraphModule(nn.Module(), graph)
    a, b = numdiff.randn(2), numdiff.randn(2)
    want = -numdiff.tanh(numdiff.cat([a, b])) * 2 + b.sum()
    np.testing.assert_allclose(gm(a, b).numpy(), want.numpy(), rtol=1e-6)


def test_fuse_folds_eval_batch_norm_into_the_convolution(rng) -> None:
    from numdiff.fx.experimental.optimization import fuse

    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Conv2d(3, 2, 1), nn.BatchNorm2d(2))
    x = numdiff.tensor(rng.standard_normal((4, 2, 6, 6)).astype(np.float32))
    net(x)  # training mode: running statistics move away from 0 and 1
    with pytest.raises(ValueError, match="training mode"):
        fuse(net)
    net.eval()
    fused = fuse(net)
    called = [type(fused.get_submodule(n.target)).__name__ for n in fused.graph.nodes if n.op == "call_module"]
    assert called == ["Conv2d", "ReLU", "Conv2d"]
    np.testing.assert_allclose(fused(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert isinstance(net[1], nn.BatchNorm2d)  # the original is left as it was


def test_graph_drawer_writes_nodes_edges_and_shapes() -> None:
    from numdiff.fx.passes.graph_drawer import FxGraphDrawer

    gm = fx.symbolic_trace(Small())
    ShapeProp(gm).propagate(numdiff.randn(2, 3))
    text = FxGraphDrawer(gm, "small").get_text()
    assert "fc: call_module fc (2, 4) numdiff.float32  <- x" in text
    dot = FxGraphDrawer(gm, "small").get_dot_graph()
    assert '"x" -> "fc";' in dot and dot.startswith('digraph "small"')


def test_stack_traces_are_recorded_when_asked() -> None:
    class Recording(fx.Tracer):
        record_stack_traces = True

    graph = Recording().trace(Small())
    fc = next(n for n in graph.nodes if n.name == "fc")
    assert "test_passes.py" in fc.stack_trace and "self.fc(x)" in fc.meta["stack_trace"]
