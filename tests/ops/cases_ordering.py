"""Cases for tril/triu (registered), and for sort, topk and einsum (composed of registered ops)."""

from __future__ import annotations

import numpy as np

import numdiff
from tests.ops.op_cases import OpCase, args, distinct, normal

CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)  # einsum's matmul sums in BLAS order


def _sorted_desc(x: np.ndarray, axis: int) -> np.ndarray:
    return -np.sort(-x, axis=axis)


CASES = [
    OpCase("tril", "square", args(normal(3, 3)), numdiff.tril, np.tril),
    OpCase("tril", "batch-offset", args(normal(2, 3, 4)), lambda x: x.tril(1), lambda x: np.tril(x, 1)),
    OpCase("tril", "negative-diagonal", args(normal(4, 3)), lambda x: numdiff.tril(x, -1), lambda x: np.tril(x, -1)),
    OpCase("triu", "square", args(normal(3, 3)), numdiff.triu, np.triu),
    OpCase("triu", "batch-offset", args(normal(2, 4, 3)), lambda x: x.triu(-1), lambda x: np.triu(x, -1)),
    OpCase("triu", "wide", args(normal(2, 5)), lambda x: numdiff.triu(x, 2), lambda x: np.triu(x, 2)),
    OpCase(None, "sort-last", args(distinct(3, 4)), lambda x: numdiff.sort(x).values, lambda x: np.sort(x, -1)),
    OpCase(
        None, "sort-dim0-descending", args(distinct(4, 3)),
        lambda x: x.sort(0, descending=True).values, lambda x: _sorted_desc(x, 0),
    ),
    OpCase(
        None, "topk", args(distinct(3, 5)),
        lambda x: numdiff.topk(x, 2).values, lambda x: _sorted_desc(x, 1)[:, :2],
    ),
    OpCase(
        None, "topk-smallest-dim0", args(distinct(5, 2)),
        lambda x: x.topk(3, dim=0, largest=False).values, lambda x: np.sort(x, 0)[:3],
    ),
    OpCase(
        None, "einsum-matmul", args(normal(2, 3), normal(3, 4)),
        lambda a, b: numdiff.einsum("ij,jk->ik", a, b), lambda a, b: np.einsum("ij,jk->ik", a, b), **CLOSE,
    ),
    OpCase(
        None, "einsum-attention-scores", args(normal(2, 2, 3, 4), normal(2, 2, 5, 4)),
        lambda q, k: numdiff.einsum("bhqd,bhkd->bhqk", q, k),
        lambda q, k: np.einsum("bhqd,bhkd->bhqk", q, k), **CLOSE,
    ),
    OpCase(
        None, "einsum-trace-and-diagonal", args(normal(3, 3), normal(2, 3, 3)),
        lambda a, b: numdiff.einsum("ii,bjj->b", a, b), lambda a, b: np.einsum("ii,bjj->b", a, b), **CLOSE,
    ),
    OpCase(
        None, "einsum-ellipsis-broadcast", args(normal(2, 1, 2, 3), normal(4, 3, 2)),
        lambda a, b: numdiff.einsum("...ij,...jk", a, b), lambda a, b: np.einsum("...ij,...jk", a, b), **CLOSE,
    ),
    OpCase(
        None, "einsum-three-operands", args(normal(2, 3, 4), normal(3, 5), normal(5, 4)),
        lambda a, b, c: numdiff.einsum("ijk,jl,lk->i", a, b, c),
        lambda a, b, c: np.einsum("ijk,jl,lk->i", a, b, c), **CLOSE,
    ),
    OpCase(
        None, "einsum-outer-and-sum", args(normal(3), normal(4)),
        lambda a, b: numdiff.einsum("i,j->", a, b), lambda a, b: np.einsum("i,j->", a, b), **CLOSE,
    ),
]  # fmt: skip
