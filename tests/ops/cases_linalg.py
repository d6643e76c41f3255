"""Cases for numdiff/ops/linalg.py: the matmul primitive through every public entry point."""

from __future__ import annotations

import numpy as np

import numdiff
from tests.ops.op_cases import OpCase, args, normal

F = numdiff.nn.functional
# BLAS sums in a different order than NumPy's matmul: equal to rounding, not bit for bit.
CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)

CASES = [
    OpCase("matmul", "2x3@3x2", args(normal(2, 3), normal(3, 2)), numdiff.matmul, np.matmul, **CLOSE),
    OpCase("matmul", "batch-fold", args(normal(2, 3, 4), normal(4, 5)), numdiff.matmul, np.matmul, **CLOSE),
    OpCase("matmul", "batch-broadcast", args(normal(2, 1, 3, 4), normal(3, 4, 2)), numdiff.matmul, np.matmul, **CLOSE),
    OpCase("matmul", "matrix-batch", args(normal(3, 4), normal(2, 4, 2)), numdiff.matmul, np.matmul, **CLOSE),
    # One GEMM of the batch's rows by the matrix's transpose (n * (k + m) < m * k), in place for n == 1.
    OpCase("matmul", "matrix-vectors", args(normal(6, 5), normal(3, 5, 1)), numdiff.matmul, np.matmul, **CLOSE),
    OpCase("matmul", "matrix-narrow-batch", args(normal(6, 5), normal(2, 3, 5, 2)), numdiff.matmul, np.matmul, **CLOSE),
    OpCase("matmul", "vector-batch", args(normal(4), normal(3, 4, 2)), numdiff.matmul, np.matmul, **CLOSE),
    OpCase("matmul", "batch-vector", args(normal(2, 3, 4), normal(4)), numdiff.matmul, np.matmul, **CLOSE),
    OpCase(
        "matmul", "transposed-operands", args(normal(4, 3), normal(2, 4)),
        lambda a, b: numdiff.matmul(a.mT, b.mT), lambda a, b: a.T @ b.T, **CLOSE,
    ),
    OpCase("matmul", "mm", args(normal(3, 5), normal(5, 2)), numdiff.mm, np.matmul, **CLOSE),
    OpCase("matmul", "bmm", args(normal(3, 2, 4), normal(3, 4, 2)), numdiff.bmm, np.matmul, **CLOSE),
    OpCase("matmul", "dot", args(normal(5), normal(5)), numdiff.dot, np.dot, **CLOSE),
    OpCase(
        "linear", "linear-bias", args(normal(2, 3, 4), normal(5, 4), normal(5)),
        F.linear, lambda x, w, b: x @ w.T + b, **CLOSE,
    ),
    OpCase("linear", "linear-no-bias", args(normal(3, 4), normal(2, 4)), F.linear, lambda x, w: x @ w.T, **CLOSE),
    OpCase(
        "linear", "linear-transposed-weight", args(normal(3, 4), normal(4, 2), normal(2)),
        lambda x, w, b: F.linear(x, w.mT, b), lambda x, w, b: x @ w + b, **CLOSE,
    ),
    OpCase(
        "linear", "linear-1d-input", args(normal(4), normal(3, 4), normal(3)),
        F.linear, lambda x, w, b: w @ x + b, **CLOSE,
    ),
    OpCase("matmul", "linear-1d-weight", args(normal(3, 4), normal(4)), F.linear, lambda x, w: x @ w, **CLOSE),
    OpCase(None, "outer", args(normal(3), normal(4)), numdiff.outer, np.outer),
]  # fmt: skip
