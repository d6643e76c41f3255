"""The activations' backwards as elementwise ops of their own: rows of the scalar rule table
(numdiff/_ground/scalar_rules.py joins them to it) that a ``create_graph`` backward records.

A step that differentiates a gradient (a PINN's u_xx, MAML's inner step, a gradient penalty)
records the backward of every activation it passed. Evaluated as its vjp expression on Tensors,
tanh's backward ``g * (1.0 - out * out)`` is three ops, each with its own node, and the next
backward pass goes through all three. The rule ``tanh_backward`` is the same expression as one op,
x the incoming gradient and y what the derivative reads (``out`` for tanh and sigmoid and relu,
the input for the others); tanh's ``tensor_vjps`` names it. Each of these is linear in x, so its
own vjp in x is itself applied to the new gradient: higher derivatives stay one op a pass in x.
Their derivatives in y are the activations' second derivatives (PyTorch's double backwards):

- tanh: d/dy x (1 - y^2) = -2 x y;  sigmoid: d/dy x y (1 - y) = x (1 - 2 y);
- sin: -x sin(y) = cos_backward(x, y); cos: -x cos(y) = -sin_backward(x, y);
- silu: s (1 - s) (2 + y (1 - 2 s)), s = sigmoid(y);  gelu: phi(y) (2 - y^2), phi the normal density;
- softplus: beta s (1 - s), s = sigmoid(beta y), 0 above the threshold;
- relu and leaky_relu: 0 (PyTorch's threshold_backward and leaky_relu_backward give zeros).

Each row's forward is its activation's derived vjp written in x and y, so the recorded op
computes what the vjp expression computed (tests/ops/test_backward_rules.py checks both forms
against torch's double backward).
"""

from __future__ import annotations

from numdiff._ground.scalar_expressions import ScalarRule

_SIGMOID_Y = "(1.0 / (1.0 + math.exp(-y)))"
_SILU_PRIME = f"({_SIGMOID_Y} * (1.0 + y * (1.0 - 1.0 / (1.0 + math.exp(-y)))))"
_GELU_PRIME = "(0.5 * (1.0 + math.erf(y * 0.7071067811865476)) + y * 0.3989422804014327 * math.exp(-0.5 * y * y))"
_SOFTPLUS_SIGMOID = "(1.0 / (1.0 + math.exp(-y * beta)))"


def _backward_rule(name: str, forward: str, derivatives: tuple[str, str], tensor_vjps: tuple[str, str], **fields) -> ScalarRule:
    return ScalarRule(
        name, 2, forward, derivatives, tensor_vjps=tensor_vjps, dtypes="float", method=False, export=False,
        doc=f"The backward of {name.removesuffix('_backward')}: the gradient x times its derivative at y.", **fields,
    )  # fmt: skip


BACKWARD_RULES = (
    _backward_rule(
        "tanh_backward", "x * (1.0 - y * y)", ("1.0 - y * y", "-2.0 * x * y"),
        ("math.tanh_backward(g, y)", ""),
    ),
    _backward_rule(
        "sigmoid_backward", "x * (y * (1.0 - y))", ("y * (1.0 - y)", "x * (1.0 - 2.0 * y)"),
        ("math.sigmoid_backward(g, y)", ""),
    ),
    _backward_rule(
        "sin_backward", "x * math.cos(y)", ("math.cos(y)", "-x * math.sin(y)"),
        ("math.sin_backward(g, y)", "math.cos_backward(g * x, y)"),
    ),
    _backward_rule(
        "cos_backward", "x * -math.sin(y)", ("-math.sin(y)", "-x * math.cos(y)"),
        ("math.cos_backward(g, y)", "-math.sin_backward(g * x, y)"),
    ),
    _backward_rule(
        "silu_backward", f"x * {_SILU_PRIME}",
        (_SILU_PRIME, f"x * ({_SIGMOID_Y} * (1.0 - {_SIGMOID_Y}) * (2.0 + y * (1.0 - 2.0 * {_SIGMOID_Y})))"),
        ("math.silu_backward(g, y)", ""),
    ),
    _backward_rule(
        "gelu_backward", f"x * {_GELU_PRIME}",
        (_GELU_PRIME, "x * 0.3989422804014327 * math.exp(-0.5 * y * y) * (2.0 - y * y)"),
        ("math.gelu_backward(g, y)", ""),
    ),
    _backward_rule(
        "softplus_backward", f"where(y * beta > threshold, x, x * {_SOFTPLUS_SIGMOID})",
        (f"where(y * beta > threshold, 1.0, {_SOFTPLUS_SIGMOID})",
         f"where(y * beta > threshold, 0.0, x * beta * {_SOFTPLUS_SIGMOID} * (1.0 - {_SOFTPLUS_SIGMOID}))"),
        ("math.softplus_backward(g, y, beta=beta, threshold=threshold)", ""),
        attrs=(("beta", 1.0), ("threshold", 20.0)),
    ),
    _backward_rule(
        "relu_backward", "where(y <= 0.0, 0.0, x)", ("where(y <= 0.0, 0.0, 1.0)", "0.0"),
        ("math.relu_backward(g, y)", "g * 0.0"),
    ),
    _backward_rule(
        "leaky_relu_backward", "where(y > 0.0, x, x * negative_slope)", ("where(y > 0.0, 1.0, negative_slope)", "0.0"),
        ("math.leaky_relu_backward(g, y, negative_slope=negative_slope)", "g * 0.0"),
        attrs=(("negative_slope", 0.01),),
    ),
)  # fmt: skip
"""The two-input rules the activations' ``tensor_vjps`` call, joined to the table."""
