"""Cases for the activations' backward rules (tanh_backward, sigmoid_backward, ... in
numdiff/_ground/scalar_backward_rules.py): the one op a create_graph backward of the activation
records, x the incoming gradient and y the value its derivative reads, and the ``_second`` ops
their own y-gradients record (x times the second derivative at y). Both inputs are
differentiable; the references are the derivatives written with NumPy."""

from __future__ import annotations

import numpy as np

from numdiff.ops.elementwise import PUBLIC
from tests.ops.op_cases import OpCase, _erf, args, away_from_zero, constant, normal, uniform


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _gelu_prime(y: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + _erf(y / np.sqrt(2.0))) + y * np.exp(-0.5 * y * y) / np.sqrt(2.0 * np.pi)


def _gelu_second(y: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * y * y) / np.sqrt(2.0 * np.pi) * (2.0 - y * y)


def _case(op: str, y, reference, **attrs) -> OpCase:
    return OpCase(op, "plain", args(normal(2, 3), y), lambda g, v: PUBLIC[op](g, v, **attrs), reference)


# softplus with beta 2, threshold 3: y * beta on both sides of the threshold, none near it.
_SOFTPLUS_Y = np.array([[-1.5, -0.2, 0.4], [0.9, 2.2, 3.0]])

CASES = [
    _case("tanh_backward", uniform(-0.9, 0.9, 2, 3), lambda g, y: g * (1.0 - y * y)),
    _case("sigmoid_backward", uniform(0.1, 0.9, 2, 3), lambda g, y: g * y * (1.0 - y)),
    _case("sin_backward", normal(2, 3), lambda g, y: g * np.cos(y)),
    _case("cos_backward", normal(2, 3), lambda g, y: -g * np.sin(y)),
    _case("silu_backward", normal(2, 3), lambda g, y: g * _sigmoid(y) * (1.0 + y * (1.0 - _sigmoid(y)))),
    _case("gelu_backward", normal(2, 3), lambda g, y: g * _gelu_prime(y)),
    _case(
        "softplus_backward", constant(_SOFTPLUS_Y),
        lambda g, y: np.where(2.0 * y > 3.0, g, g * _sigmoid(2.0 * y)), beta=2.0, threshold=3.0,
    ),
    _case("relu_backward", away_from_zero(2, 3), lambda g, y: np.where(y <= 0.0, 0.0, g)),
    _case(
        "leaky_relu_backward", away_from_zero(2, 3), lambda g, y: np.where(y > 0.0, g, 0.2 * g),
        negative_slope=0.2,
    ),
    _case("tanh_second", uniform(-0.9, 0.9, 2, 3), lambda u, y: -2.0 * u * y),
    _case("sigmoid_second", uniform(0.1, 0.9, 2, 3), lambda u, y: u * (1.0 - 2.0 * y)),
    _case(
        "silu_second", normal(2, 3),
        lambda u, y: u * _sigmoid(y) * (1.0 - _sigmoid(y)) * (2.0 + y * (1.0 - 2.0 * _sigmoid(y))),
    ),
    _case("gelu_second", normal(2, 3), lambda u, y: u * _gelu_second(y)),
    _case(
        "softplus_second", constant(_SOFTPLUS_Y),
        lambda u, y: np.where(2.0 * y > 3.0, 0.0, u * 2.0 * _sigmoid(2.0 * y) * (1.0 - _sigmoid(2.0 * y))),
        beta=2.0, threshold=3.0,
    ),
]
