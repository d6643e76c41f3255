"""Cases for the pointwise-loss rules (smooth_l1, huber, squared_error, bce_with_logits, soft_margin
in numdiff/_ground/scalar_rules.py), reached through numdiff.nn.functional's losses, with NumPy
references written from PyTorch's formulas. Input and target are both differentiable."""

from __future__ import annotations

import numpy as np

import numdiff
from tests.ops.op_cases import OpCase, args, constant, normal, uniform

F = numdiff.nn.functional

# input - target = [-2.5, -0.4, 0.3, 0.45, 0.9, 4.0]: both sides of beta = delta = 0.6, none within
# gradcheck's reach of the kinks at +-0.6.
_INPUT = np.array([[-2.0, -0.3, 0.1], [0.45, 1.2, 3.0]])
_TARGET = np.array([[0.5, 0.1, -0.2], [0.0, 0.3, -1.0]])


def _smooth_l1(x: np.ndarray, t: np.ndarray, beta: float) -> np.ndarray:
    d = np.abs(x - t)
    return np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


def _huber(x: np.ndarray, t: np.ndarray, delta: float) -> np.ndarray:
    d = np.abs(x - t)
    return np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def _bce_with_logits(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return (1 - t) * x + np.log1p(np.exp(-x))


CASES = [
    OpCase("smooth_l1", "none", args(constant(_INPUT), constant(_TARGET)),
           lambda x, t: F.smooth_l1_loss(x, t, reduction="none", beta=0.6), lambda x, t: _smooth_l1(x, t, 0.6)),
    OpCase("smooth_l1", "mean-broadcast-target", args(normal(2, 3), uniform(-0.3, 0.3, 3)),
           lambda x, t: F.smooth_l1_loss(x, t.expand(2, 3), beta=5.0),
           lambda x, t: _smooth_l1(x, t, 5.0).mean()),
    OpCase("huber", "sum", args(constant(_INPUT), constant(_TARGET)),
           lambda x, t: F.huber_loss(x, t, reduction="sum", delta=0.6), lambda x, t: _huber(x, t, 0.6).sum()),
    OpCase("squared_error", "mse-none", args(normal(2, 3), normal(2, 3)),
           lambda x, t: F.mse_loss(x, t, reduction="none"), lambda x, t: (x - t) ** 2),
    OpCase("bce_with_logits", "soft-target-none", args(normal(2, 3), uniform(0.0, 1.0, 2, 3)),
           lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction="none"), _bce_with_logits),
    OpCase("bce_with_logits", "mean", args(normal(4), uniform(0.0, 1.0, 4)),
           F.binary_cross_entropy_with_logits, lambda x, t: _bce_with_logits(x, t).mean()),
    OpCase("soft_margin", "sum", args(normal(2, 3), normal(2, 3)),
           lambda x, t: F.soft_margin_loss(x, t, reduction="sum"), lambda x, t: np.log1p(np.exp(-x * t)).sum()),
]  # fmt: skip
