"""Cases for the composed layers local_response_norm, bilinear and embedding_bag (weight gradient),
and for scaled_row_scatter, the op under embedding_bag's sum and mean, with NumPy references."""

from __future__ import annotations

import numpy as np

import numdiff.nn.functional as nf
from numdiff.ops.scatter import scaled_row_scatter
from tests.ops.op_cases import OpCase, args, constant, normal


def _local_response_norm(x: np.ndarray, size: int, alpha: float, beta: float, k: float) -> np.ndarray:
    squares = np.pad(x * x, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = sum(squares[:, j:j + x.shape[1]] for j in range(size))
    return x / (k + alpha / size * window) ** beta


def _embedding_bag(indices: np.ndarray, weight: np.ndarray, offsets: np.ndarray, mode: str) -> np.ndarray:
    ends = list(offsets[1:]) + [len(indices)]
    rows = []
    for start, end in zip(offsets, ends):
        bag = weight[indices[start:end]]
        rows.append(np.zeros(weight.shape[1]) if not len(bag) else {"sum": bag.sum, "mean": bag.mean, "max": bag.max}[mode](0))
    return np.array(rows)


def _scaled_row_scatter(src: np.ndarray, scale: np.ndarray, take: np.ndarray, into: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((size, src.shape[1]))
    np.add.at(out, into, scale[:, None] * src[take])
    return out


_BAG = (np.array([1, 3, 0, 3, 2, 4]), np.array([0, 2, 2, 5]))
# Entries that repeat a source row (3) and a target row (0, 2), and a target row no entry reaches (3).
_ROWS = (np.array([1, 3, 0, 3, 2, 4]), np.array([0, 0, 2, 2, 4, 2]))

CASES = [
    OpCase(None, "local_response_norm", args(normal(2, 5, 3)), lambda x: nf.local_response_norm(x, 3, 0.5, 0.75, 1.0),
           lambda x: _local_response_norm(x, 3, 0.5, 0.75, 1.0)),
    OpCase(None, "bilinear", args(normal(3, 2), normal(3, 4), normal(2, 2, 4), normal(2)), nf.bilinear,
           lambda a, b, w, bias: np.einsum("ni,kij,nj->nk", a, w, b) + bias),
    OpCase("scaled_row_scatter", "repeats", args(normal(5, 3), normal(6), constant(_ROWS[0]), constant(_ROWS[1]), 5),
           scaled_row_scatter, _scaled_row_scatter),
] + [
    OpCase(None, f"embedding_bag-{mode}", args(constant(_BAG[0]), normal(5, 3), constant(_BAG[1])),
           lambda i, w, o, m=mode: nf.embedding_bag(i, w, o, mode=m), lambda i, w, o, m=mode: _embedding_bag(i, w, o, m))
    for mode in ("sum", "mean", "max")
]
