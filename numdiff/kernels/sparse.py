"""Sparse COO and CSR kernels (CPU, Numba): sparse @ dense and its transpose-free gradient partner.

A COO matrix of shape (m, k) is three flat arrays of one length nnz: ``rows`` and ``cols``
(int64, rows[e] < m, cols[e] < k) and ``values``. Duplicated (row, col) pairs add, as in PyTorch's
uncoalesced tensors.

- ``coo_spmm(rows, cols, values, dense, out)``: ``out[rows[e], j] += values[e] * dense[cols[e], j]``
  for every entry e and column j; `out` (m, n) is zeroed first, `dense` is (k, n). Loop nest:
  entries e (serial: two entries may share a row) then columns j (contiguous in both `dense`
  and `out`). Work nnz * n, no extra memory.
- ``coo_sddmm(rows, cols, a, b, out)``: ``out[e] = sum_j a[rows[e], j] * b[cols[e], j]`` (the
  dense product a @ b.T sampled at the entries). Loop nest: entries e in parallel (each writes
  its own out[e]), columns j inside; sums in float64, rounded once on store.

A CSR matrix of shape (m, k) is ``crow`` (int64, m + 1 non-decreasing offsets from 0 to nnz),
``cols`` (int64, nnz) and ``values`` (nnz): row i's entries are ``crow[i]:crow[i + 1]``.

- ``csr_spmm(crow, cols, values, dense, out)``: ``out[i, j] = sum_e values[e] * dense[cols[e], j]``
  over row i's entries e. Loop nest: rows i in parallel (each owns its row of `out`, so unlike COO
  no two threads write one place), then entries e, then columns j (contiguous in `dense` and
  `out`). Work nnz * n, no extra memory; sums in the output's dtype, as the COO kernel's.
- ``csr_sddmm(crow, cols, a, b, out)``: ``out[e] = sum_j a[i, j] * b[cols[e], j]`` for row i's
  entries e. Loop nest: rows i in parallel, entries e, columns j; sums in float64.

spmm's gradient to the values is an sddmm and to the dense side a spmm with rows and cols
swapped; sddmm's gradients are spmms (numdiff.ops.sparse), so the family is closed under
differentiation. The CUDA twins are numdiff.cuda.kernels.sparse. Indices are checked in Python
(numdiff.sparse) before a kernel runs: a bad index would write outside `out`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._self_healing_cache import njit

__all__ = ["coo_sddmm", "coo_spmm", "csr_sddmm", "csr_spmm"]


@njit(cache=True, nogil=True)
def _coo_spmm(rows, cols, values, dense, out):
    n = dense.shape[1]
    out[:, :] = 0
    for e in range(rows.shape[0]):
        r = rows[e]
        c = cols[e]
        v = values[e]
        for j in range(n):
            out[r, j] += v * dense[c, j]


@njit(cache=True, nogil=True, parallel=True)
def _coo_sddmm(rows, cols, a, b, out):
    n = a.shape[1]
    for e in prange(rows.shape[0]):
        r = rows[e]
        c = cols[e]
        total = 0.0
        for j in range(n):
            total += float(a[r, j]) * float(b[c, j])
        out[e] = total


def coo_spmm(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, dense: np.ndarray, out: np.ndarray) -> None:
    """out = COO(rows, cols, values) @ dense (see the module docstring)."""
    _coo_spmm(rows, cols, values, np.ascontiguousarray(dense), out)


def coo_sddmm(rows: np.ndarray, cols: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out[e] = a[rows[e]] . b[cols[e]] (see the module docstring)."""
    _coo_sddmm(rows, cols, np.ascontiguousarray(a), np.ascontiguousarray(b), out)


@njit(cache=True, nogil=True, parallel=True)
def _csr_spmm(crow, cols, values, dense, out):
    n = dense.shape[1]
    for i in prange(out.shape[0]):
        for j in range(n):
            out[i, j] = 0
        for e in range(crow[i], crow[i + 1]):
            c = cols[e]
            v = values[e]
            for j in range(n):
                out[i, j] += v * dense[c, j]


@njit(cache=True, nogil=True, parallel=True)
def _csr_sddmm(crow, cols, a, b, out):
    n = a.shape[1]
    for i in prange(crow.shape[0] - 1):
        for e in range(crow[i], crow[i + 1]):
            c = cols[e]
            total = 0.0
            for j in range(n):
                total += float(a[i, j]) * float(b[c, j])
            out[e] = total


def csr_spmm(crow: np.ndarray, cols: np.ndarray, values: np.ndarray, dense: np.ndarray, out: np.ndarray) -> None:
    """out = CSR(crow, cols, values) @ dense (see the module docstring)."""
    _csr_spmm(crow, cols, values, np.ascontiguousarray(dense), out)


def csr_sddmm(crow: np.ndarray, cols: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out[e] = a[row of e] . b[cols[e]] (see the module docstring)."""
    _csr_sddmm(crow, cols, np.ascontiguousarray(a), np.ascontiguousarray(b), out)
