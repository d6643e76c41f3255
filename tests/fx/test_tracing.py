"""symbolic_trace and Tracer: what a traced forward records, and that the GraphModule computes
what the module computed (forward and gradients)."""

from __future__ import annotations

import operator
import pickle

import numpy as np
import pytest

import numdiff
import numdiff.fx as fx
from numdiff import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale = nn.Parameter(numdiff.tensor([2.0, 0.5, 1.0]))
        self.register_buffer("shift", numdiff.tensor([0.1, 0.2, 0.3]))

    def forward(self, x):
        h = numdiff.relu(self.fc(x)) * self.scale + self.shift
        return h.sum(dim=-1, keepdim=True).tanh() - torch_like_mean(h)


def torch_like_mean(h):
    return h.mean()


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.head = nn.Sequential(nn.Linear(1, 2), nn.Sigmoid())

    def forward(self, x):
        return self.head(self.block(x))[:, 0]


def _ops(gm: fx.GraphModule) -> list[tuple[str, object]]:
    return [(n.op, n.target) for n in gm.graph.nodes]


def test_submodules_are_traced_through_and_nn_modules_are_leaves() -> None:
    gm = fx.symbolic_trace(Net())
    ops = _ops(gm)
    assert ("call_module", "block.fc") in ops
    assert ("call_module", "head.0") in ops and ("call_module", "head.1") in ops
    assert ("get_attr", "block.scale") in ops and ("get_attr", "block.shift") in ops
    assert ("call_function", numdiff.relu) in ops
    assert ("call_function", operator.mul) in ops and ("call_function", operator.getitem) in ops
    assert ("call_method", "sum") in ops and ("call_method", "tanh") in ops and ("call_method", "mean") in ops


def test_graph_module_matches_eager_forward_and_gradients(rng) -> None:
    net = Net()
    gm = fx.symbolic_trace(net)
    x_data = rng.standard_normal((5, 4)).astype(np.float32)
    x1 = numdiff.tensor(x_data, requires_grad=True)
    x2 = numdiff.tensor(x_data, requires_grad=True)
    eager, traced = net(x1), gm(x2)
    np.testing.assert_allclose(traced.detach().numpy(), eager.detach().numpy(), rtol=1e-6)
    eager.sum().backward()
    traced.sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), x1.grad.numpy(), rtol=1e-6)
    # the GraphModule shares the root's parameters, so their gradients accumulate there twice
    assert gm.block.fc.weight is net.block.fc.weight


def test_plain_function_with_concrete_args_and_builtin_operators() -> None:
    def f(x, y, flag):
        z = (x + y) * 2 - x / 4
        return -z if flag else z @ y.t()

    gm = fx.symbolic_trace(f, concrete_args={"flag": True})
    x, y = numdiff.randn(3, 3), numdiff.randn(3, 3)
    np.testing.assert_allclose(gm(x, y).numpy(), f(x, y, True).numpy(), rtol=1e-6)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [operator.add, operator.mul, operator.truediv, operator.sub, operator.neg]
    assert "def forward(self, x, y, flag = True):" in gm.code


def test_tensor_constants_become_attributes_of_the_graph_module() -> None:
    const = numdiff.tensor([1.0, 2.0])

    def f(x):
        return x * const

    gm = fx.symbolic_trace(f)
    get_attrs = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert get_attrs == ["_tensor_constant0"]
    np.testing.assert_allclose(gm(numdiff.ones(2)).numpy(), [1.0, 2.0])


def test_tensor_left_operand_with_proxy_right_operand_is_recorded() -> None:
    const = numdiff.tensor([1.0, 2.0])

    def f(x):
        return const + numdiff.exp(x), numdiff.cat([x, x]), numdiff.flatten(x.unsqueeze(0), 0)

    gm = fx.symbolic_trace(f)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [numdiff.exp, numdiff.add, numdiff.cat, numdiff.flatten]
    x = numdiff.tensor([0.0, 1.0])
    for got, want in zip(gm(x), f(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_custom_tracer_decides_leaves_and_tags_nodes() -> None:
    class Inline(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return not isinstance(m, nn.ReLU) and super().is_leaf_module(m, qualname)

        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            node = super().create_node(kind, target, args, kwargs, name, type_expr)
            node.tag = "seen"
            return node

    graph = Inline().trace(nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    assert [n.op for n in graph.nodes] == ["placeholder", "call_module", "call_function", "output"]
    assert all(n.tag == "seen" for n in graph.nodes)


def wrapped_len(x):
    return x * len(x)


fx.wrap(wrapped_len)


def test_wrap_records_a_function_as_one_leaf_node() -> None:
    def f(x):
        return wrapped_len(x) + 1

    gm = fx.symbolic_trace(f)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"][0] is wrapped_len
    np.testing.assert_allclose(gm(numdiff.ones(3)).numpy(), [4.0, 4.0, 4.0])
    assert wrapped_len(numdiff.ones(2)).tolist() == [2.0, 2.0]  # the global is restored after tracing


def test_graph_module_pickles_and_keeps_its_state_dict() -> None:
    net = Net()
    gm = fx.symbolic_trace(net)
    clone = pickle.loads(pickle.dumps(gm))
    x = numdiff.randn(2, 4)
    np.testing.assert_allclose(clone(x).detach().numpy(), gm(x).detach().numpy(), rtol=1e-6)
    assert sorted(gm.state_dict()) == sorted(net.state_dict())
    assert clone.code == gm.code


def test_data_dependent_control_flow_raises_trace_error_naming_the_cause() -> None:
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fx.TraceError, match="control flow.*gt"):
        fx.symbolic_trace(f)


def test_proxy_iteration_and_len_are_refused_but_unpacking_works() -> None:
    def iterate(x):
        return [v for v in x]

    def length(x):
        return len(x)

    def unpack(x):
        a, b = x
        return a + b

    with pytest.raises(fx.TraceError, match="cannot be iterated"):
        fx.symbolic_trace(iterate)
    with pytest.raises(RuntimeError, match="'len' is not supported"):
        fx.symbolic_trace(length)
    gm = fx.symbolic_trace(unpack)
    np.testing.assert_allclose(gm(numdiff.tensor([1.0, 2.0])).numpy(), 3.0)


def test_concrete_args_naming_no_parameter_is_refused() -> None:
    with pytest.raises(fx.TraceError, match="concrete_args names \\['z'\\]"):
        fx.symbolic_trace(lambda x: x, concrete_args={"z": 1})


def test_module_calls_in_other_threads_run_normally_during_a_trace() -> None:
    import threading

    other = nn.Linear(2, 2)
    results = []

    class Spawning(nn.Module):
        def forward(self, x):
            worker = threading.Thread(target=lambda: results.append(other(numdiff.ones(1, 2))))
            worker.start()
            worker.join()
            return x + 1

    gm = fx.symbolic_trace(Spawning())
    assert isinstance(results[0], numdiff.Tensor)  # not a Proxy: only the tracing thread is traced
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_function", "output"]


def test_a_nested_trace_in_one_thread_is_refused() -> None:
    class Nested(nn.Module):
        def forward(self, x):
            fx.symbolic_trace(lambda y: y)
            return x

    with pytest.raises(RuntimeError, match="a trace is already running in this thread"):
        fx.symbolic_trace(Nested())


def test_parameters_read_twice_give_one_get_attr_through_tracer_getattr() -> None:
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(numdiff.tensor([2.0]))

        def forward(self, x):
            return x * self.w + self.w

    seen = []

    class Watching(fx.Tracer):
        def getattr(self, attr, attr_val, parameter_proxy_cache):
            seen.append(attr)
            return super().getattr(attr, attr_val, parameter_proxy_cache)

    graph = Watching().trace(Twice())
    assert [n.op for n in graph.nodes].count("get_attr") == 1
    assert seen == ["w", "w"]


def test_graph_module_deepcopy_owns_its_parameters() -> None:
    import copy

    gm = fx.symbolic_trace(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    clone = copy.deepcopy(gm)
    x = numdiff.ones(1, 2)
    np.testing.assert_allclose(clone(x).detach().numpy(), gm(x).detach().numpy())
    assert clone.get_submodule("0").weight is not gm.get_submodule("0").weight
    assert clone.code == gm.code and type(clone).__name__ == "Sequential"
    assert "getattr(self, '0')(input_1)" in gm.code
