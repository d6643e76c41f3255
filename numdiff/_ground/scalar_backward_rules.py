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

The y-vjp g x f''(y) of the smooth ones is likewise one op, ``<act>_second(g * x, y)``: x f''(y)
with the product g x as its x, two recorded ops where the derived expression recorded 3 (tanh),
4 (sigmoid), 9 (gelu) or 17 (silu), and as many nodes fewer for the backward pass that follows
(a PINN's loss on u_xx, a gradient penalty). The ``_second`` rows are linear in x too; their own
y-derivatives are the activations' third derivatives:

- tanh: d/dy -2 x y = -2 x;  sigmoid: d/dy x (1 - 2 y) = -2 x (both as tanh_second(g, x));
- silu: s (1 - s) ((1 - 2 s) (3 + y (1 - 2 s)) - 2 y s (1 - s));  gelu: y phi(y) (y^2 - 4);
- softplus: beta^2 s (1 - s) (1 - 2 s), 0 above the threshold.
"""

from __future__ import annotations

from numdiff._ground.scalar_expressions import ScalarRule

_SIGMOID_Y = "(1.0 / (1.0 + math.exp(-y)))"
_SILU_PRIME = f"({_SIGMOID_Y} * (1.0 + y * (1.0 - 1.0 / (1.0 + math.exp(-y)))))"
_GELU_PRIME = "(0.5 * (1.0 + math.erf(y * 0.7071067811865476)) + y * 0.3989422804014327 * math.exp(-0.5 * y * y))"
_SOFTPLUS_SIGMOID = "(1.0 / (1.0 + math.exp(-y * beta)))"
# The second derivatives in y (x times these is each row's y-derivative and its _second row's forward).
_SILU_SECOND = f"({_SIGMOID_Y} * (1.0 - {_SIGMOID_Y}) * (2.0 + y * (1.0 - 2.0 * {_SIGMOID_Y})))"
_GELU_SECOND = "(0.3989422804014327 * math.exp(-0.5 * y * y) * (2.0 - y * y))"
_SOFTPLUS_SECOND = f"(beta * {_SOFTPLUS_SIGMOID} * (1.0 - {_SOFTPLUS_SIGMOID}))"


def _backward_rule(name: str, forward: str, derivatives: tuple[str, str], tensor_vjps: tuple[str, str], **fields) -> ScalarRule:
    return ScalarRule(
        name, 2, forward, derivatives, tensor_vjps=tensor_vjps, dtypes="float", method=False, export=False,
        doc=f"The backward of {name.removesuffix('_backward')}: the gradient x times its derivative at y.", **fields,
    )  # fmt: skip


def _second_rule(name: str, forward: str, derivatives: tuple[str, str], tensor_vjps: tuple[str, str], **fields) -> ScalarRule:
    return ScalarRule(
        name, 2, forward, derivatives, tensor_vjps=tensor_vjps, dtypes="float", method=False, export=False,
        doc=f"x times the second derivative of {name.removesuffix('_second')} at y (y as its backward reads it).",
        **fields,
    )  # fmt: skip


BACKWARD_RULES = (
    _backward_rule(
        "tanh_backward", "x * (1.0 - y * y)", ("1.0 - y * y", "-2.0 * x * y"),
        ("math.tanh_backward(g, y)", "math.tanh_second(g * x, y)"),
    ),
    _backward_rule(
        "sigmoid_backward", "x * (y * (1.0 - y))", ("y * (1.0 - y)", "x * (1.0 - 2.0 * y)"),
        ("math.sigmoid_backward(g, y)", "math.sigmoid_second(g * x, y)"),
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
        (_SILU_PRIME, f"x * {_SILU_SECOND}"),
        ("math.silu_backward(g, y)", "math.silu_second(g * x, y)"),
    ),
    _backward_rule(
        "gelu_backward", f"x * {_GELU_PRIME}",
        (_GELU_PRIME, f"x * {_GELU_SECOND}"),
        ("math.gelu_backward(g, y)", "math.gelu_second(g * x, y)"),
    ),
    _backward_rule(
        "softplus_backward", f"where(y * beta > threshold, x, x * {_SOFTPLUS_SIGMOID})",
        (f"where(y * beta > threshold, 1.0, {_SOFTPLUS_SIGMOID})",
         f"where(y * beta > threshold, 0.0, x * {_SOFTPLUS_SECOND})"),
        ("math.softplus_backward(g, y, beta=beta, threshold=threshold)",
         "math.softplus_second(g * x, y, beta=beta, threshold=threshold)"),
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
    _second_rule(
        "tanh_second", "-2.0 * x * y", ("-2.0 * y", "-2.0 * x"), ("math.tanh_second(g, y)", "math.tanh_second(g, x)"),
    ),
    _second_rule(
        # d/dy is -2 x, tanh_second's own form: one op at every order.
        "sigmoid_second", "x * (1.0 - 2.0 * y)", ("1.0 - 2.0 * y", "-2.0 * x"),
        ("math.sigmoid_second(g, y)", "math.tanh_second(g, x)"),
    ),
    _second_rule(
        "silu_second", f"x * {_SILU_SECOND}",
        (_SILU_SECOND,
         f"x * {_SIGMOID_Y} * (1.0 - {_SIGMOID_Y}) * ((1.0 - 2.0 * {_SIGMOID_Y}) * (3.0 + y * (1.0 - 2.0 * {_SIGMOID_Y}))"
         f" - 2.0 * y * {_SIGMOID_Y} * (1.0 - {_SIGMOID_Y}))"),
        ("math.silu_second(g, y)", ""),
    ),
    _second_rule(
        "gelu_second", f"x * {_GELU_SECOND}",
        (_GELU_SECOND, "x * 0.3989422804014327 * math.exp(-0.5 * y * y) * y * (y * y - 4.0)"),
        ("math.gelu_second(g, y)", ""),
    ),
    _second_rule(
        "softplus_second", f"where(y * beta > threshold, 0.0, x * {_SOFTPLUS_SECOND})",
        (f"where(y * beta > threshold, 0.0, {_SOFTPLUS_SECOND})",
         f"where(y * beta > threshold, 0.0, x * beta * {_SOFTPLUS_SECOND} * (1.0 - 2.0 * {_SOFTPLUS_SIGMOID}))"),
        ("math.softplus_second(g, y, beta=beta, threshold=threshold)", ""),
        attrs=(("beta", 1.0), ("threshold", 20.0)),
    ),
)  # fmt: skip
"""The two-input rules the activations' ``tensor_vjps`` call, joined to the table."""
