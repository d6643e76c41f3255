"""Sparse COO and CSR kernels on CUDA, the twins of numdiff.kernels.sparse (same arguments, same results).

- ``coo_spmm``: one thread per (entry e, column j), adding ``values[e] * dense[cols[e], j]`` to
  ``out[rows[e], j]`` atomically (entries that share a row write the same places). Grid:
  ceil(nnz * n / THREADS_PER_BLOCK) blocks; `out` is zeroed by a first kernel.
- ``coo_sddmm``: one thread per entry e, summing ``a[rows[e], j] * b[cols[e], j]`` over j in
  float64 and storing once. Grid: ceil(nnz / THREADS_PER_BLOCK) blocks.
- ``csr_spmm``: one thread per (row i, column j), summing row i's entries into a register and
  storing ``out[i, j]`` once (no atomics: a row's entries are contiguous). Grid:
  ceil(m * n / THREADS_PER_BLOCK) blocks.
- ``csr_sddmm``: one thread per row i, looping over its entries and the columns in float64.
  Grid: ceil(m / THREADS_PER_BLOCK) blocks.
"""

from __future__ import annotations

from typing import Any

from numba import cuda

__all__ = ["coo_sddmm", "coo_spmm", "csr_sddmm", "csr_spmm"]

THREADS_PER_BLOCK = 256


@cuda.jit
def _zero2d(out):
    i = cuda.grid(1)
    n = out.shape[1]
    if i < out.shape[0] * n:
        out[i // n, i % n] = 0


@cuda.jit
def _spmm_kernel(rows, cols, values, dense, out):
    i = cuda.grid(1)
    n = dense.shape[1]
    if i < rows.shape[0] * n:
        e = i // n
        j = i % n
        cuda.atomic.add(out, (rows[e], j), values[e] * dense[cols[e], j])


@cuda.jit
def _sddmm_kernel(rows, cols, a, b, out):
    e = cuda.grid(1)
    if e < rows.shape[0]:
        total = 0.0
        for j in range(a.shape[1]):
            total += float(a[rows[e], j]) * float(b[cols[e], j])
        out[e] = total


@cuda.jit
def _csr_spmm_kernel(crow, cols, values, dense, out):
    t = cuda.grid(1)
    n = out.shape[1]
    if t < out.shape[0] * n:
        i = t // n
        j = t % n
        total = 0.0  # float64, rounded once on store
        for e in range(crow[i], crow[i + 1]):
            total += values[e] * dense[cols[e], j]
        out[i, j] = total


@cuda.jit
def _csr_sddmm_kernel(crow, cols, a, b, out):
    i = cuda.grid(1)
    if i < crow.shape[0] - 1:
        for e in range(crow[i], crow[i + 1]):
            total = 0.0
            for j in range(a.shape[1]):
                total += float(a[i, j]) * float(b[cols[e], j])
            out[e] = total


def _numba(array: Any) -> Any:
    """The numba device array of a CudaArray (a C-contiguous copy if it is a strided view)."""
    if not hasattr(array, "as_numba"):
        return array
    return (array if array.flags.c_contiguous else array.copy()).as_numba()


def _gpu(array: Any) -> Any:
    return cuda.gpus[getattr(getattr(array, "device", None), "index", None) or 0]


def _blocks(count: int) -> int:
    return max(1, (count + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)


def coo_spmm(rows: Any, cols: Any, values: Any, dense: Any, out: Any) -> None:
    """out = COO(rows, cols, values) @ dense, on the device."""
    with _gpu(out):
        target = _numba(out)  # `out` is allocated C-contiguous: this is its own memory
        _zero2d[_blocks(out.shape[0] * out.shape[1]), THREADS_PER_BLOCK](target)
        if rows.shape[0] and dense.shape[1]:
            _spmm_kernel[_blocks(rows.shape[0] * dense.shape[1]), THREADS_PER_BLOCK](
                _numba(rows), _numba(cols), _numba(values), _numba(dense), target
            )


def coo_sddmm(rows: Any, cols: Any, a: Any, b: Any, out: Any) -> None:
    """out[e] = a[rows[e]] . b[cols[e]], on the device."""
    if rows.shape[0]:
        with _gpu(out):
            _sddmm_kernel[_blocks(rows.shape[0]), THREADS_PER_BLOCK](_numba(rows), _numba(cols), _numba(a), _numba(b),
                                                                     _numba(out))


def csr_spmm(crow: Any, cols: Any, values: Any, dense: Any, out: Any) -> None:
    """out = CSR(crow, cols, values) @ dense, on the device."""
    count = out.shape[0] * out.shape[1]
    if count:
        with _gpu(out):
            _csr_spmm_kernel[_blocks(count), THREADS_PER_BLOCK](
                _numba(crow), _numba(cols), _numba(values), _numba(dense), _numba(out)
            )


def csr_sddmm(crow: Any, cols: Any, a: Any, b: Any, out: Any) -> None:
    """out[e] = a[row of e] . b[cols[e]], on the device."""
    if cols.shape[0]:
        with _gpu(out):
            _csr_sddmm_kernel[_blocks(crow.shape[0] - 1), THREADS_PER_BLOCK](
                _numba(crow), _numba(cols), _numba(a), _numba(b), _numba(out)
            )
