"""The elementwise ops' eager fast path (numdiff/ops/_elementwise_eager.py) and the small host
backward (numdiff.kernels._elementwise_small): the same nodes, values and gradients as the
general path, the general path for every call outside the common case, and fewer Python calls."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest

import numdiff
from numdiff._ground.scalar_rules import RULES
from numdiff.autograd.node import _SavedNumber, _SavedOutput
from numdiff.kernels import _elementwise_small
from numdiff.kernels import elementwise as cpu
from numdiff.ops import activation, arithmetic
from numdiff.ops.elementwise import PUBLIC
from tests.python_calls import calls_into

BINARY = {"add": arithmetic.add, "sub": arithmetic.sub, "mul": arithmetic.mul, "div": arithmetic.div,
          "maximum": PUBLIC["maximum"], "pow": PUBLIC["pow"]}
UNARY = {name: PUBLIC[name] for name in ("sin", "exp", "tanh", "sqrt", "sigmoid", "gelu", "floor")}
UNARY["relu"] = activation.relu


def _general(fast):
    """The function the fast path falls back to (relu's goes through its own wrapper)."""
    return activation._relu if fast is activation.relu else fast.general


def _kinds(node):
    return [None if item is None else type(item).__name__ for item in node._saved]


def _same_node(fast_out, general_out):
    assert type(fast_out) is type(general_out)
    np.testing.assert_array_equal(fast_out._data, general_out._data)
    assert fast_out.dtype == general_out.dtype and fast_out.shape == general_out.shape
    f, g = fast_out.grad_fn, general_out.grad_fn
    assert (f is None) == (g is None)
    if f is None:
        assert not fast_out.requires_grad
        return
    assert f.function is g.function and f.attrs == g.attrs == {}
    assert f.next_nodes == g.next_nodes and f.input_shapes == g.input_shapes
    assert f.needs_input_grad == g.needs_input_grad
    assert _kinds(f) == _kinds(g) and list(f._saved_versions) == list(g._saved_versions)
    for a, b in zip(f._saved, g._saved):
        if type(a) is _SavedOutput:
            continue  # each holds its own result
        assert a is b or (type(a) is _SavedNumber and (a.value, a.dtype) == (b.value, b.dtype))
    assert f._freed is g._freed is False and f.creation_site is g.creation_site is None


def _operand_pairs(dtype):
    rng = np.random.default_rng(0)
    leaf = numdiff.tensor(rng.uniform(0.5, 1.5, (3, 4)).astype(dtype), requires_grad=True)
    inner = leaf * 1.5
    constant = numdiff.tensor(rng.uniform(0.5, 1.5, (3, 4)).astype(dtype))
    row = numdiff.tensor(rng.uniform(0.5, 1.5, (4,)).astype(dtype), requires_grad=True)
    return [(inner, constant), (constant, leaf), (inner, leaf), (inner, row), (row, constant), (inner, 2.5),
            (3, inner), (constant, constant), (inner, inner), (inner.t(), constant.t())]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_fast_binary_path_records_the_node_the_general_path_records(name, dtype):
    fast = BINARY[name]
    for a, b in _operand_pairs(dtype):
        _same_node(fast(a, b), _general(fast)(a, b))


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_fast_unary_path_records_the_node_the_general_path_records(name, dtype):
    fast = UNARY[name]
    leaf = numdiff.tensor(np.linspace(0.1, 0.9, 12).reshape(3, 4).astype(dtype), requires_grad=True)
    for x in (leaf, leaf * 1.5, numdiff.tensor(np.full((2, 2), 0.5, dtype)), leaf.t(), leaf[:, 1]):
        _same_node(fast(x), _general(fast)(x))


@pytest.mark.parametrize("make", [
    lambda x, c: x * c + c, lambda x, c: (x / c).sin() * x, lambda x, c: (c - x).exp() / 3.0,
    lambda x, c: 2.0 - (x * x).tanh(), lambda x, c: numdiff.relu(x * c) + numdiff.sigmoid(x),
    lambda x, c: numdiff.maximum(x, c) ** 2.0, lambda x, c: (x[:, None] * c).sqrt().sum(0),
])
def test_gradients_through_the_fast_paths_pass_gradcheck(make):
    x = numdiff.tensor(np.linspace(0.3, 1.7, 6), dtype=numdiff.float64, requires_grad=True)
    c = numdiff.tensor(np.linspace(1.1, 2.1, 6), dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(make, (x, c))
    assert numdiff.autograd.gradgradcheck(make, (x, c))


def test_calls_outside_the_common_case_take_the_general_path_and_its_errors():
    x = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"mul: shapes \(3,\) and \(2,\) cannot be broadcast"):
        x * numdiff.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="mul: unsupported operand type str"):
        x * "a"
    mixed = x * numdiff.tensor([1.0, 2.0, 3.0], dtype=numdiff.float64)  # promotion: the general path
    assert mixed.dtype == numdiff.float64 and mixed.grad_fn.name() == "MulBackward"
    ints = numdiff.tensor([1, 2, 3]) * 2
    assert ints.dtype == numdiff.int64 and ints.grad_fn is None
    half = x.half() * x.half()
    assert half.dtype == numdiff.float16 and half.grad_fn is not None
    assert numdiff.relu(numdiff.tensor([-1, 2])).tolist() == [0, 2]
    with pytest.raises(TypeError, match="sin: expected a Tensor"):
        numdiff.sin([1.0])


def test_the_fast_path_keeps_anomaly_sites_saved_tensor_hooks_and_no_grad():
    x = numdiff.tensor([0.5, 1.0], requires_grad=True)
    with numdiff.autograd.set_detect_anomaly(True):
        assert (x * 2.0).grad_fn.creation_site is not None
        assert x.exp().grad_fn.creation_site is not None
    packed = []
    with numdiff.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = (x * x).sin()
    assert len(packed) == 3  # x twice for the product, the product for sin
    y.sum().backward()
    xs = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs ** 2) * 2 * xs, rtol=1e-6)
    with numdiff.no_grad():
        out = x * x + 1.0
    assert out.grad_fn is None and not out.requires_grad and x._grad_accumulator is not None


def test_a_stale_view_takes_its_bases_new_history_on_the_fast_path():
    x = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = x * 1.0
    view = base[1:]
    base.mul_(2.0)  # the view's history is now stale
    (view * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 6.0, 6.0])


def test_the_profiler_and_transforms_still_see_each_op():
    x = numdiff.tensor([0.5, 1.0], requires_grad=True)
    with numdiff.profiler.profile() as prof:
        (x * x).sin()
    names = {event.name for event in prof.events()}
    assert {"Mul", "Sin"} <= names or {"mul", "sin"} <= {n.lower() for n in names}
    grads = numdiff.func.vmap(numdiff.func.grad(lambda t: (t * t).sin().sum()))(numdiff.ones(3, 2))
    np.testing.assert_allclose(grads.numpy(), np.cos(1.0) * 2 * np.ones((3, 2)), rtol=1e-6)


def test_a_recorded_product_runs_in_one_python_frame():
    """The per-op cost (issue 26): ``y * s`` on float tensors runs in the fast path's frames alone
    (before: the public function, operands, Function.apply, the forward closure, the save plan and
    _bind_saved)."""
    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    s = numdiff.tensor([3.0, 4.0])
    y = x * s
    files = ("numdiff/ops/elementwise.py", "numdiff/ops/_util.py", "numdiff/autograd/function.py")
    for warm in (lambda: y * s, lambda: y.sin(), lambda: y + 2.0):
        warm()  # each op derives its save plan once per process, on its first recorded call
    assert calls_into(files, lambda: y * s) == []
    assert calls_into(files, lambda: y.sin()) == []
    assert calls_into(files, lambda: y + 2.0) == []


@pytest.mark.parametrize("name", list(RULES))
def test_small_backward_matches_the_general_small_backward(name):
    """Every rule has a small backward, those with attributes (leaky_relu's slope) or a ``where``
    (relu, abs) too, and it gives the general backward's numbers; operands straddle zero and the
    attributes, so both branches of each ``where`` are taken."""
    rule = RULES[name]
    rng = np.random.default_rng(1)
    needed = tuple(range(rule.arity))
    # Where a ``where`` picks the branch, operands on both sides of zero; elsewhere inside every domain.
    low = -2.5 if any("where(" in e for e in _elementwise_small.vjp_expressions(rule, needed)) else 0.2
    values = {"g": rng.uniform(-1, 1, 8)}
    for operand in rule.inputs:
        values[operand] = rng.uniform(low, 0.8 if low > 0 else 2.5, 8)
    if "out" in rule.saved:
        values["out"] = rng.uniform(low / 3, 0.8, 8)
    attrs = tuple(rng.uniform(0.3, 0.9) if default > 0 else default for _, default in rule.attrs)
    small = _elementwise_small.small_backward(rule, needed)
    expected = cpu.backward(rule, needed, values, attrs)
    got = small(values["g"], *[values.get(name) for name in rule.saved], *attrs)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_leaky_relu_backward_takes_the_small_backward():
    """leaky_relu's backward of a small gradient passes its slope to the small backward (it used to
    fall back to the dict-and-eval backward for a rule with attributes) and gives PyTorch's numbers."""
    torch = pytest.importorskip("torch")
    data = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    x = numdiff.tensor(data, requires_grad=True)
    numdiff.nn.functional.leaky_relu(x, 0.2).sum().backward()
    expected = torch.tensor(data, requires_grad=True)
    torch.nn.functional.leaky_relu(expected, 0.2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), expected.grad.numpy())
    calls = []
    y = numdiff.nn.functional.leaky_relu(x, 0.2)
    with patch.object(cpu, "backward", lambda *a: calls.append(a)):
        y.backward(numdiff.ones(5))
    assert calls == []
    np.testing.assert_array_equal(x.grad.numpy(), 2 * expected.grad.numpy())
