"""Cases for numdiff/ops/sparse.py: COO @ dense and the sampled dot product (each other's
gradients), with repeated entries, called directly and through numdiff.sparse's public API."""

from __future__ import annotations

import numpy as np

import numdiff
from numdiff.ops.sparse import coo_matmul, coo_sampled_dot
from tests.ops.op_cases import OpCase, args, constant, normal

ROWS = np.array([0, 2, 2, 1, 0, 2], dtype=np.int64)  # (2, 1) appears twice: duplicates add
COLS = np.array([1, 0, 1, 3, 1, 3], dtype=np.int64)


def _dense(rows, cols, values, shape):
    out = np.zeros(shape)
    np.add.at(out, (rows, cols), values)
    return out


CASES = [
    OpCase(
        "coo_mm", "3x4-with-duplicates@4x2", args(constant(ROWS), constant(COLS), normal(6), normal(4, 2)),
        lambda r, c, v, d: coo_matmul(r, c, v, (3, 4), d),
        lambda r, c, v, d: _dense(r, c, v, (3, 4)) @ d,
    ),
    OpCase(
        "coo_mm", "sparse_coo_tensor@vector", args(constant(ROWS), constant(COLS), normal(6), normal(4)),
        lambda r, c, v, d: numdiff.sparse_coo_tensor(numdiff.stack([r, c]), v, (3, 4)) @ d,
        lambda r, c, v, d: _dense(r, c, v, (3, 4)) @ d,
    ),
    OpCase(
        "coo_mm", "dense@sparse", args(constant(ROWS), constant(COLS), normal(6), normal(2, 3)),
        lambda r, c, v, d: numdiff.mm(d, numdiff.sparse_coo_tensor(numdiff.stack([r, c]), v, (3, 4))),
        lambda r, c, v, d: d @ _dense(r, c, v, (3, 4)),
    ),
    OpCase(
        "coo_sampled_dot", "entries-of-a@b.T", args(constant(ROWS), constant(COLS), normal(3, 2), normal(4, 2)),
        lambda r, c, a, b: coo_sampled_dot(r, c, a, b),
        lambda r, c, a, b: (a @ b.T)[r, c],
    ),
    OpCase(
        None, "sparse-to_dense-and-sum", args(constant(ROWS), constant(COLS), normal(6)),
        lambda r, c, v: (numdiff.sparse_coo_tensor(numdiff.stack([r, c]), v, (3, 4)).to_dense(),
                         numdiff.sparse.sum(numdiff.sparse_coo_tensor(numdiff.stack([r, c]), v, (3, 4)), dim=1)),
        lambda r, c, v: (_dense(r, c, v, (3, 4)), _dense(r, c, v, (3, 4)).sum(1)),
    ),
]
