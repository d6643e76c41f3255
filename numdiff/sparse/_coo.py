"""SparseTensor: a COO tensor (PyTorch's ``layout=torch.sparse_coo``) of any number of sparse dims.

It holds ``indices`` (int64, (sparse_dim, nnz)) and ``values`` (nnz, *dense_shape), both numdiff
Tensors on one device; gradients flow to the values. A hybrid tensor (dense_dim > 0) is what a
sparse embedding gradient is: indices (1, nnz) naming rows, values (nnz, dim) holding them. Products with dense matrices run the COO kernels
(numdiff.ops.sparse); elementwise sums with a dense tensor give a dense tensor, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.creation import tensor as make_tensor
from numdiff.creation import zeros
from numdiff.ops.joining import cat
from numdiff.ops.sparse import coo_matmul
from numdiff.sparse._base import SparseBase
from numdiff.tensor import Size, Tensor


class layout:  # noqa: N801 - PyTorch's name
    """A tensor layout: ``numdiff.strided`` (dense), ``numdiff.sparse_coo`` or ``numdiff.sparse_csr``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"numdiff.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")


class SparseTensor(SparseBase):
    """A sparse COO tensor; make one with ``numdiff.sparse_coo_tensor`` or ``t.to_sparse()``.

    >>> a = numdiff.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
    >>> a @ numdiff.ones(2, 1)
    tensor([[2.],
            [3.]])
    """

    is_sparse = True
    is_sparse_csr = False
    layout = sparse_coo

    def __init__(self, indices: Tensor, values: Tensor, shape: tuple[int, ...], coalesced: bool = False) -> None:
        self._index_tensor, self._value_tensor, self._shape, self._coalesced = indices, values, Size(shape), coalesced

    # ------------------------------------------------------------------ metadata
    def sparse_dim(self) -> int:
        return int(self._index_tensor.shape[0])

    def dense_dim(self) -> int:
        return self._value_tensor.ndim - 1

    def _sparse_shape(self) -> tuple[int, ...]:
        return tuple(self._shape[: self.sparse_dim()])

    def _dense_shape(self) -> tuple[int, ...]:
        return tuple(self._shape[self.sparse_dim():])

    def _with_values(self, values: Tensor) -> SparseTensor:
        return SparseTensor(self._index_tensor.to(values.device), values, self._shape, self._coalesced)

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._index_tensor

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._value_tensor

    def _indices(self) -> Tensor:
        """The indices as stored, coalesced or not (PyTorch's ``_indices()``)."""
        return self._index_tensor

    def _values(self) -> Tensor:
        """The values as stored, coalesced or not (PyTorch's ``_values()``)."""
        return self._value_tensor

    def is_coalesced(self) -> bool:
        return self._coalesced

    @property
    def grad_fn(self) -> Any:
        return self._value_tensor.grad_fn

    def detach_(self) -> SparseTensor:
        self._value_tensor = self._value_tensor.detach()
        return self

    def zero_(self) -> SparseTensor:
        """No entries left (nnz 0), as PyTorch's sparse zero_ leaves it; the shape stays."""
        self._index_tensor = make_tensor(np.zeros((self.sparse_dim(), 0), np.int64), device=self.device)
        self._value_tensor = zeros((0, *self._dense_shape()), dtype=self.dtype, device=self.device)
        self._coalesced = True
        return self

    # ------------------------------------------------------------------ conversions
    def _linear(self) -> np.ndarray:
        host = self._index_tensor.detach().cpu().numpy()
        return np.ravel_multi_index(tuple(host), self._sparse_shape()) if host.shape[1] else np.zeros(0, np.int64)

    def coalesce(self) -> SparseTensor:
        """Duplicate indices summed (differentiably), indices sorted; itself when already coalesced."""
        if self._coalesced:
            return self
        unique, inverse = np.unique(self._linear(), return_inverse=True)
        values = zeros((len(unique), *self._dense_shape()), dtype=self.dtype, device=self.device).index_add(
            0, make_tensor(inverse.reshape(-1).astype(np.int64), device=self.device), self._value_tensor
        )
        sparse_shape = self._sparse_shape()
        indices = np.stack(np.unravel_index(unique, sparse_shape)).astype(np.int64).reshape(len(sparse_shape), -1)
        return SparseTensor(make_tensor(indices, device=self.device), values, self._shape, coalesced=True)

    def to_dense(self, dtype: Any = None) -> Tensor:
        """The dense tensor (duplicates summed); gradients reach the values."""
        rows = int(np.prod(self._sparse_shape(), dtype=np.int64))
        flat = zeros((rows, *self._dense_shape()), dtype=self.dtype, device=self.device)
        linear = make_tensor(self._linear().astype(np.int64), device=self.device)
        dense = flat.index_add(0, linear, self._value_tensor).reshape(tuple(self._shape))
        return dense if dtype is None else dense.to(dtype)

    def to_sparse(self, *, layout: Any = None) -> Any:
        return self.to_sparse_csr() if layout is not None and layout.name == "sparse_csr" else self

    def to_sparse_coo(self) -> SparseTensor:
        return self

    def to_sparse_csr(self) -> Any:
        """The CSR form of a 2-D COO tensor (coalesced first; gradients reach these values)."""
        from numdiff.sparse._csr import coo_to_csr  # _csr builds on this module

        return coo_to_csr(self)

    def clone(self) -> SparseTensor:
        return SparseTensor(self._index_tensor.clone(), self._value_tensor.clone(), self._shape, self._coalesced)

    def t(self) -> SparseTensor:
        if self.ndim != 2 or self.dense_dim():
            raise ValueError(f"t(): expects a 2-D sparse tensor, got {self.ndim}-D")
        return SparseTensor(self._index_tensor.flip(0), self._value_tensor, (self._shape[1], self._shape[0]))

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        if self.dense_dim():
            raise ValueError(f"transpose: a hybrid sparse tensor (dense_dim {self.dense_dim()}) is not transposed here; use to_dense()")
        order = list(range(self.ndim))
        order[dim0], order[dim1] = order[dim1], order[dim0]
        shape = tuple(self._shape[d] for d in order)
        return SparseTensor(self._index_tensor[order], self._value_tensor, shape)

    # ------------------------------------------------------------------ arithmetic
    def _matrix_parts(self, op: str) -> tuple[Tensor, Tensor, tuple[int, int]]:
        if self.ndim != 2 or self.dense_dim():
            raise ValueError(f"{op}: expects a 2-D sparse matrix, got shape {tuple(self._shape)}")
        return self._index_tensor[0], self._index_tensor[1], (self._shape[0], self._shape[1])

    def __matmul__(self, other: Any) -> Any:
        rows, cols, shape = self._matrix_parts("sparse matmul")
        if getattr(other, "is_sparse", False) or getattr(other, "is_sparse_csr", False):
            return (self @ other.to_dense()).to_sparse()
        return coo_matmul(rows, cols, self._value_tensor, shape, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        """dense @ sparse = (sparse.T @ dense.T).T."""
        if not isinstance(other, Tensor) or other.ndim != 2:
            raise ValueError(f"sparse matmul: dense @ sparse needs a 2-D dense tensor, got {type(other).__name__}")
        return (self.t() @ other.t()).t()

    def __add__(self, other: Any) -> Any:
        if isinstance(other, SparseTensor):
            if other._shape != self._shape:
                raise ValueError(f"sparse add: shapes {tuple(self._shape)} and {tuple(other._shape)} differ")
            return self._concatenated(other).coalesce()
        return self.to_dense() + other

    def _concatenated(self, other: SparseTensor) -> SparseTensor:
        """The sum of two COO tensors of one shape, uncoalesced: both index lists and both value
        lists one after the other (what PyTorch's sparse gradient accumulation gives)."""
        if other._shape != self._shape or other.sparse_dim() != self.sparse_dim():
            raise ValueError(f"sparse add: shapes {tuple(self._shape)} (sparse_dim {self.sparse_dim()}) and "
                             f"{tuple(other._shape)} (sparse_dim {other.sparse_dim()}) differ")
        indices = make_tensor(np.concatenate([self._index_tensor.cpu().numpy(), other._index_tensor.cpu().numpy()], 1),
                              device=self.device)
        return SparseTensor(indices, cat([self._value_tensor, other._value_tensor.to(self.dtype)]), self._shape)

    def __sub__(self, other: Any) -> Any:
        return self + (-other)

    def __rsub__(self, other: Any) -> Any:
        return other + (-self)

    def sum(self, dim: Any = None) -> Tensor:
        """All values summed, or the dense sums along `dim` (int or tuple) without densifying."""
        if dim is None:
            return self._value_tensor.sum()
        if self.dense_dim():
            return self.to_dense().sum(dim)
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(d % self.ndim for d in dims)
        kept = [d for d in range(self.ndim) if d not in dims]
        shape = tuple(self._shape[d] for d in kept)
        host = self._index_tensor.detach().cpu().numpy()
        linear = np.ravel_multi_index(tuple(host[kept]), shape) if kept else np.zeros(host.shape[1], np.int64)
        flat = zeros(int(np.prod(shape, dtype=np.int64)), dtype=self.dtype, device=self.device)
        index = make_tensor(np.asarray(linear, dtype=np.int64), device=self.device)
        return flat.index_add(0, index, self._value_tensor).reshape(shape)

    def __repr__(self) -> str:
        return (f"tensor(indices={self._index_tensor!r},\n       values={self._value_tensor!r},\n       size={tuple(self._shape)}, "
                f"nnz={self._nnz()}, layout=numdiff.sparse_coo)")
