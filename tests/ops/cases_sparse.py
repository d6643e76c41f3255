"""Cases for numdiff/ops/sparse.py: COO @ dense and the sampled dot product (each other's
gradients), with repeated entries, called directly and through numdiff.sparse's public API; and
their CSR forms, with an empty row and a column no entry uses."""

from __future__ import annotations

import numpy as np

import numdiff
from numdiff.ops.sparse import coo_matmul, coo_sampled_dot, csr_matmul, csr_sampled_dot
from tests.ops.op_cases import OpCase, args, constant, normal

ROWS = np.array([0, 2, 2, 1, 0, 2], dtype=np.int64)  # (2, 1) appears twice: duplicates add
COLS = np.array([1, 0, 1, 3, 1, 3], dtype=np.int64)


CROW = np.array([0, 2, 2, 5], dtype=np.int64)  # row 1 is empty; column 2 has no entry
CSR_COLS = np.array([1, 3, 0, 1, 3], dtype=np.int64)
CSR_ROWS = np.repeat(np.arange(3), np.diff(CROW))


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
        "csr_mm", "3x4-empty-row@4x2", args(constant(CROW), constant(CSR_COLS), normal(5), normal(4, 2)),
        lambda r, c, v, d: csr_matmul(r, c, v, (3, 4), d),
        lambda r, c, v, d: _dense(CSR_ROWS, c, v, (3, 4)) @ d,
    ),
    OpCase(
        "csr_mm", "sparse_csr_tensor@vector", args(constant(CROW), constant(CSR_COLS), normal(5), normal(4)),
        lambda r, c, v, d: numdiff.sparse_csr_tensor(r, c, v, (3, 4)) @ d,
        lambda r, c, v, d: _dense(CSR_ROWS, c, v, (3, 4)) @ d,
    ),
    OpCase(
        "csr_mm", "addmm(input, csr, dense)", args(constant(CROW), constant(CSR_COLS), normal(5), normal(4, 2), normal(3, 2)),
        lambda r, c, v, d, x: numdiff.addmm(x, numdiff.sparse_csr_tensor(r, c, v, (3, 4)), d, beta=0.5, alpha=2.0),
        lambda r, c, v, d, x: 0.5 * x + 2.0 * (_dense(CSR_ROWS, c, v, (3, 4)) @ d),
    ),
    OpCase(
        "csr_mm", "dense@csr", args(constant(CROW), constant(CSR_COLS), normal(5), normal(2, 3)),
        lambda r, c, v, d: numdiff.mm(d, numdiff.sparse_csr_tensor(r, c, v, (3, 4))),
        lambda r, c, v, d: d @ _dense(CSR_ROWS, c, v, (3, 4)),
    ),
    OpCase(
        "csr_sampled_dot", "csr-entries-of-a@b.T", args(constant(CROW), constant(CSR_COLS), normal(3, 2), normal(4, 2)),
        lambda r, c, a, b: csr_sampled_dot(r, c, a, b),
        lambda r, c, a, b: (a @ b.T)[CSR_ROWS, c],
    ),
    OpCase(
        None, "csr-coo-round-trip-to_dense", args(constant(CROW), constant(CSR_COLS), normal(5)),
        lambda r, c, v: numdiff.sparse_csr_tensor(r, c, v, (3, 4)).to_sparse_coo().to_sparse_csr().to_dense(),
        lambda r, c, v: _dense(CSR_ROWS, c, v, (3, 4)),
    ),
    OpCase(
        None, "sparse-to_dense-and-sum", args(constant(ROWS), constant(COLS), normal(6)),
        lambda r, c, v: (numdiff.sparse_coo_tensor(numdiff.stack([r, c]), v, (3, 4)).to_dense(),
                         numdiff.sparse.sum(numdiff.sparse_coo_tensor(numdiff.stack([r, c]), v, (3, 4)), dim=1)),
        lambda r, c, v: (_dense(r, c, v, (3, 4)), _dense(r, c, v, (3, 4)).sum(1)),
    ),
]
