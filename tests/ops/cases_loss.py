"""Cases for the loss primitives in numdiff/ops/loss.py (binary_cross_entropy)."""

from __future__ import annotations

import numpy as np

import numdiff
from tests.ops.op_cases import OpCase, args, uniform


def _bce(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log(1 - x), -100))


CASES = [
    # Both inputs differentiable: the gradient to the probabilities and to the soft target.
    OpCase("binary_cross_entropy", "soft-target", args(uniform(0.1, 0.9, 2, 3), uniform(0.0, 1.0, 2, 3)),
           lambda x, t: numdiff.nn.functional.binary_cross_entropy(x, t, reduction="none"), _bce),
    OpCase("binary_cross_entropy", "reduced-mean", args(uniform(0.1, 0.9, 4), uniform(0.0, 1.0, 4)),
           numdiff.nn.functional.binary_cross_entropy, lambda x, t: _bce(x, t).mean()),
]
