"""The activations' create_graph backwards as one op each (numdiff/_ground/scalar_backward_rules.py):
what is recorded, the first, second and third derivatives against torch's, the operands the fast
path hands to the general one, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff._ground.scalar_expressions import ScalarRule, check_rules
from numdiff._ground.scalar_rules import _TABLE, RULES
from numdiff.ops.elementwise import PUBLIC

torch = pytest.importorskip("torch")
tf = torch.nn.functional

# (name, numdiff activation, torch activation, the op its create_graph backward records)
ACTIVATIONS = [
    ("tanh", numdiff.tanh, torch.tanh, "tanh_backward"),
    ("sigmoid", numdiff.sigmoid, torch.sigmoid, "sigmoid_backward"),
    ("sin", numdiff.sin, torch.sin, "sin_backward"),
    ("cos", numdiff.cos, torch.cos, "cos_backward"),
    ("silu", nf.silu, tf.silu, "silu_backward"),
    ("gelu", nf.gelu, tf.gelu, "gelu_backward"),
    ("softplus", lambda x: nf.softplus(x, beta=2.0, threshold=3.0),
     lambda x: tf.softplus(x, beta=2.0, threshold=3.0), "softplus_backward"),
    ("relu", nf.relu, tf.relu, "relu_backward"),
    ("leaky_relu", lambda x: nf.leaky_relu(x, 0.2), lambda x: tf.leaky_relu(x, 0.2), "leaky_relu_backward"),
]  # fmt: skip
IDS = [a[0] for a in ACTIVATIONS]


def _inputs(dtype: str, shape: tuple = (5, 7)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)  # away from relu's kink
    return x.astype(dtype), rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)


def _second_derivatives(lib, act, x, g, v):
    """d = J^T g by create_graph, the gradients of sum(d * v) by x and g (create_graph again), and
    the gradient by x of the sum of their squares."""
    x, g = lib.tensor(x, requires_grad=True), lib.tensor(g, requires_grad=True)
    (d,) = lib.autograd.grad(act(x), x, g, create_graph=True)
    second = lib.autograd.grad((d * lib.tensor(v)).sum(), (x, g), create_graph=True)
    third = lib.autograd.grad((second[0] * second[0] + second[1] * second[1]).sum(), x)
    return d, *second, *third


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,act,torch_act,op", ACTIVATIONS, ids=IDS)
def test_create_graph_derivatives_match_torch(name, act, torch_act, op, dtype):
    x, g, v = _inputs(dtype)
    ours = _second_derivatives(numdiff, act, x, g, v)
    theirs = _second_derivatives(torch, torch_act, x, g, v)
    tolerance = 1e-12 if dtype == "float64" else 2e-5
    for a, b in zip(ours, theirs):
        assert a.dtype.numpy == np.dtype(dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("name,act,torch_act,op", ACTIVATIONS, ids=IDS)
def test_create_graph_records_the_one_backward_op(name, act, torch_act, op):
    x = numdiff.tensor(_inputs("float64")[0], requires_grad=True)
    y = act(x)
    (d,) = numdiff.autograd.grad(y.sum(), x, create_graph=True)
    assert d.grad_fn.op_name == op
    # its inputs: the incoming gradient (a sum's, with no history) and the activation's output or x
    gradient_edge, value_edge = d.grad_fn.next_nodes
    assert gradient_edge is None
    assert value_edge is y.grad_fn or getattr(value_edge, "variable", None) is x


@pytest.mark.parametrize("name,act,torch_act,op", ACTIVATIONS, ids=IDS)
def test_create_graph_backward_equals_the_first_order_kernel(name, act, torch_act, op):
    for dtype in ("float32", "float64"):
        x, g, _ = _inputs(dtype, (64, 33))
        first = numdiff.tensor(x, requires_grad=True)
        act(first).backward(numdiff.tensor(g))
        t = numdiff.tensor(x, requires_grad=True)
        (d,) = numdiff.autograd.grad(act(t), t, numdiff.tensor(g), create_graph=True)
        np.testing.assert_allclose(d.detach().numpy(), first.grad.numpy(), rtol=1e-6 if dtype == "float32" else 1e-14)


# (name, the op its backward's create_graph y-gradient records: x times the second derivative)
SECOND = [("tanh", "tanh_second"), ("sigmoid", "sigmoid_second"), ("silu", "silu_second"),
          ("gelu", "gelu_second"), ("softplus", "softplus_second")]


@pytest.mark.parametrize("name,second", SECOND, ids=[s[0] for s in SECOND])
def test_the_second_derivative_is_one_op_on_the_gradient_product(name, second):
    # The derived y-vjp g * (x * f''(y)) recorded 3-17 ops; now a product and one op.
    act = {a[0]: a[1] for a in ACTIVATIONS}[name]
    x = numdiff.tensor(_inputs("float64")[0], requires_grad=True)
    (d,) = numdiff.autograd.grad(act(x).sum(), x, create_graph=True)
    (dd,) = numdiff.autograd.grad(d, x, numdiff.tensor(np.ones(x.shape)), create_graph=True)
    ops = []
    stack, seen = [dd.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or not hasattr(node, "function"):
            continue
        seen.add(id(node))
        ops.append(node.op_name)
        stack.extend(node.next_nodes)
    assert ops.count(second) == 1
    # x's own op, its backward op, that one's x- and y-gradients (a second op and a product), the sum
    assert len(ops) <= 6, ops


@pytest.mark.parametrize("layout", ["transposed", "expanded", "broadcast", "float16"])
def test_other_operands_take_the_general_path(layout):
    rng = np.random.default_rng(3)
    g, y = rng.standard_normal((4, 6)), rng.uniform(-0.9, 0.9, (4, 6))
    if layout == "transposed":
        a, b = numdiff.tensor(g.T.copy()).mT, numdiff.tensor(y)
    elif layout == "expanded":
        a, b = numdiff.tensor(g[:1]).expand(4, 6), numdiff.tensor(y)
        g = np.broadcast_to(g[:1], (4, 6))
    elif layout == "broadcast":
        a, b = numdiff.tensor(g[:1]), numdiff.tensor(y)
        g = g[:1]
    else:
        g, y = g.astype(np.float16), y.astype(np.float16)
        a, b = numdiff.tensor(g), numdiff.tensor(y)
    out = PUBLIC["tanh_backward"](a, b).numpy()
    expected = (g.astype(np.float64) * (1.0 - y.astype(np.float64) ** 2)).astype(g.dtype)
    np.testing.assert_allclose(out, np.broadcast_to(expected, (4, 6)), rtol=2e-3 if layout == "float16" else 1e-14)


def test_bad_operands_name_the_op():
    g = numdiff.tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"tanh_backward: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        PUBLIC["tanh_backward"](g, numdiff.tensor(np.ones(4)))
    with pytest.raises(TypeError, match="tanh_backward: expected floating point operands"):
        PUBLIC["tanh_backward"](numdiff.tensor([1, 2]), numdiff.tensor([3, 4]))
    with pytest.raises(TypeError, match="softplus_backward: unexpected keyword arguments \\['alpha'\\]"):
        PUBLIC["softplus_backward"](g, g, alpha=1.0)
    with pytest.raises(ValueError, match=r"silu_second: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        PUBLIC["silu_second"](g, numdiff.tensor(np.ones(4)))
    with pytest.raises(TypeError, match="tanh_second: expected floating point operands"):
        PUBLIC["tanh_second"](numdiff.tensor([1, 2]), numdiff.tensor([3, 4]))
    with pytest.raises(TypeError, match="softplus_second: unexpected keyword arguments \\['alpha'\\]"):
        PUBLIC["softplus_second"](g, g, alpha=1.0)


def test_the_scalar_rule_table_passes_its_checks():
    # Checked here, not at import: the table is source, and its checks cost every import 2 ms.
    check_rules(_TABLE)
    assert len(_TABLE) == len(RULES)  # one rule per name


def test_check_rules_refuses_a_tensor_vjp_that_reads_what_forward_did_not_save():
    tanh = RULES["tanh"]
    with pytest.raises(ValueError, match=r"reads \['x'\], which the derived vjp"):
        check_rules((ScalarRule("tanh", 1, tanh.forward, tanh.derivatives, tensor_vjps=("g * x",)),))
    with pytest.raises(ValueError, match="calls math.cbrt, which is not a rule"):
        check_rules((ScalarRule("tanh", 1, tanh.forward, tanh.derivatives, tensor_vjps=("math.cbrt(g)",)),))
    with pytest.raises(ValueError, match="2 tensor_vjps for 1 inputs"):
        check_rules((ScalarRule("tanh", 1, tanh.forward, tanh.derivatives, tensor_vjps=("g", "g")),))


@pytest.mark.parametrize("act", [nf.relu, lambda x: nf.leaky_relu(x, 0.2)], ids=["relu", "leaky_relu"])
def test_the_input_gradient_of_a_piecewise_linear_net_is_differentiable_again(act):
    # PyTorch's threshold_backward keeps the graph through the output it masks with, so the second
    # derivative is zeros; the masked where() of the vjp expression made d a constant, and the
    # second grad raised "does not require grad".
    x = numdiff.tensor(_inputs("float64")[0], requires_grad=True)
    (d,) = numdiff.autograd.grad(act(x).sum(), x, create_graph=True)
    assert d.requires_grad
    (second,) = numdiff.autograd.grad(d.sum(), x)
    np.testing.assert_array_equal(second.numpy(), np.zeros(x.shape))
