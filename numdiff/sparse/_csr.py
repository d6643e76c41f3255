"""SparseCsrTensor: a compressed sparse row matrix (PyTorch's ``layout=torch.sparse_csr``).

It holds ``crow_indices`` (int64, rows + 1 offsets), ``col_indices`` (int64, nnz) and ``values``
(nnz), numdiff Tensors on one device; gradients flow to the values. Products with dense matrices
run the CSR kernels (numdiff.ops.sparse: each row's entries are one contiguous run, so rows go in
parallel with no atomics); conversions to and from COO move the structure and gather the values,
so gradients pass through them too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.creation import tensor as make_tensor
from numdiff.creation import zeros
from numdiff.ops.sparse import csr_matmul, csr_transpose
from numdiff.sparse._base import SparseBase
from numdiff.sparse._coo import SparseTensor, layout
from numdiff.tensor import Size, Tensor

sparse_csr = layout("sparse_csr")


class SparseCsrTensor(SparseBase):
    """A 2-D sparse CSR matrix; make one with ``numdiff.sparse_csr_tensor`` or ``t.to_sparse_csr()``.

    >>> a = numdiff.sparse_csr_tensor([0, 1, 2], [1, 0], [2.0, 3.0], (2, 2))
    >>> a @ numdiff.ones(2, 1)
    tensor([[2.],
            [3.]])
    """

    is_sparse = False  # PyTorch's: is_sparse means COO; CSR answers is_sparse_csr
    is_sparse_csr = True
    layout = sparse_csr
    _name = "sparse CSR"

    def __init__(self, crow: Tensor, cols: Tensor, values: Tensor, shape: tuple[int, int]) -> None:
        self._crow, self._cols, self._value_tensor, self._shape = crow, cols, values, Size(shape)

    def _with_values(self, values: Tensor) -> SparseCsrTensor:
        device = values.device
        return SparseCsrTensor(self._crow.to(device), self._cols.to(device), values, self._shape)

    # ------------------------------------------------------------------ structure
    def crow_indices(self) -> Tensor:
        """Row offsets: row i's entries are ``crow_indices()[i]:crow_indices()[i + 1]``."""
        return self._crow

    def col_indices(self) -> Tensor:
        """The column of each entry, row by row."""
        return self._cols

    def values(self) -> Tensor:
        """The value of each entry, row by row (gradients reach it)."""
        return self._value_tensor

    # ------------------------------------------------------------------ conversions
    def _rows(self) -> np.ndarray:
        offsets = self._crow.detach().cpu().numpy()
        return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))

    def to_sparse_coo(self) -> SparseTensor:
        """The COO form: the same entries, in the same (row-major, so coalesced) order."""
        indices = np.stack([self._rows(), self._cols.detach().cpu().numpy()]).astype(np.int64)
        return SparseTensor(make_tensor(indices, device=self.device), self._value_tensor, self._shape, coalesced=True)

    def to_sparse(self, *, layout: Any = None) -> Any:
        """``to_sparse()`` is the COO form (as PyTorch's); ``layout=numdiff.sparse_csr`` is itself."""
        return self if layout is sparse_csr else self.to_sparse_coo()

    def to_sparse_csr(self) -> SparseCsrTensor:
        return self

    def to_dense(self, dtype: Any = None) -> Tensor:
        """The dense matrix; gradients reach the values."""
        flat = zeros(self._shape[0] * self._shape[1], dtype=self.dtype, device=self.device)
        linear = self._rows() * self._shape[1] + self._cols.detach().cpu().numpy()
        dense = flat.index_add(0, make_tensor(linear.astype(np.int64), device=self.device), self._value_tensor)
        dense = dense.reshape(tuple(self._shape))
        return dense if dtype is None else dense.to(dtype)

    def clone(self) -> SparseCsrTensor:
        return SparseCsrTensor(self._crow.clone(), self._cols.clone(), self._value_tensor.clone(), self._shape)

    def _transposed(self) -> SparseCsrTensor:
        """A.T in CSR form (the values gathered, so gradients reach this tensor's)."""
        crow_t, cols_t, order = csr_transpose(
            self._crow.detach().cpu().numpy(), self._cols.detach().cpu().numpy(), self._shape[1]
        )
        device = self.device
        values = self._value_tensor[make_tensor(order, device=device)]
        return SparseCsrTensor(make_tensor(crow_t, device=device), make_tensor(cols_t, device=device), values,
                               (self._shape[1], self._shape[0]))

    # ------------------------------------------------------------------ arithmetic
    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, (SparseCsrTensor, SparseTensor)):
            return (self @ other.to_dense()).to_sparse_csr()
        return csr_matmul(self._crow, self._cols, self._value_tensor, (self._shape[0], self._shape[1]), other)

    def __rmatmul__(self, other: Any) -> Tensor:
        """dense @ CSR = (CSR.T @ dense.T).T, with CSR.T's structure worked out on the host."""
        if not isinstance(other, Tensor) or other.ndim != 2:
            raise ValueError(f"sparse CSR matmul: dense @ sparse needs a 2-D dense tensor, got {type(other).__name__}")
        return (self._transposed() @ other.t()).t()

    def __add__(self, other: Any) -> Any:
        if isinstance(other, SparseCsrTensor):
            return (self.to_sparse_coo() + other.to_sparse_coo()).to_sparse_csr()
        return self.to_dense() + other

    def sum(self, dim: Any = None) -> Tensor:
        """All values summed, or the dense sums along `dim` (through the COO form)."""
        return self._value_tensor.sum() if dim is None else self.to_sparse_coo().sum(dim)

    def __repr__(self) -> str:
        return (f"tensor(crow_indices={self._crow!r},\n       col_indices={self._cols!r},\n       "
                f"values={self._value_tensor!r}, size={tuple(self._shape)}, nnz={self._nnz()},\n       "
                "layout=numdiff.sparse_csr)")


def coo_to_csr(coo: SparseTensor) -> SparseCsrTensor:
    """A 2-D COO tensor in CSR form: coalesced (duplicates summed, entries row-major), then the
    rows compressed into offsets."""
    if coo.ndim != 2:
        raise ValueError(f"to_sparse_csr: expects a 2-D sparse tensor, got shape {tuple(coo.shape)}")
    coalesced = coo.coalesce()
    index = coalesced._index_tensor.detach().cpu().numpy()
    counts = np.bincount(index[0], minlength=coo.shape[0]) if index.shape[1] else np.zeros(coo.shape[0], np.int64)
    crow = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    device = coalesced.device
    return SparseCsrTensor(make_tensor(crow, device=device), make_tensor(index[1].astype(np.int64), device=device),
                           coalesced._value_tensor, (coo.shape[0], coo.shape[1]))
