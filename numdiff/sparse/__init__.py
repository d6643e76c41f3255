"""numdiff.sparse: COO sparse tensors (``torch.sparse``'s COO part) with Numba kernels for
sparse @ dense and gradients to the values and to the dense side.

>>> adj = numdiff.sparse_coo_tensor([[0, 1, 1], [1, 0, 1]], [1.0, 1.0, 2.0], (2, 2))
>>> numdiff.sparse.mm(adj, numdiff.ones(2, 3)).shape
numdiff.Size([2, 3])

CSR and hybrid (sparse + dense dims) tensors are not implemented.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.creation import tensor as make_tensor
from numdiff.ops.sparse import coo_sampled_dot
from numdiff.sparse._coo import SparseTensor, layout, sparse_coo, strided
from numdiff.tensor import Tensor

__all__ = ["SparseTensor", "layout", "mm", "sampled_dot", "sparse_coo", "sparse_coo_tensor", "spmm", "strided",
           "sum", "to_sparse"]


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A COO tensor with `values` at `indices` ((ndim, nnz) integers); `size` defaults to the
    smallest shape holding every index. Indices are checked against `size` here.

    >>> numdiff.sparse_coo_tensor([[0, 2]], [1.0, 5.0], (4,)).to_dense()
    tensor([1., 0., 5., 0.])
    """
    index_host = indices.detach().cpu().numpy() if isinstance(indices, Tensor) else np.asarray(indices)
    if index_host.dtype.kind not in "iu" and index_host.size:
        raise TypeError(f"sparse_coo_tensor: indices must be integers, got {index_host.dtype}")
    index_host = index_host.astype(np.int64).reshape(index_host.shape[0] if index_host.ndim else 0, -1)
    if isinstance(values, Tensor):
        value_tensor = values if dtype is None else values.to(dtype)
    else:
        value_tensor = make_tensor(values, dtype=dtype)
    if device is not None:
        value_tensor = value_tensor.to(device)
    if value_tensor.ndim != 1 or value_tensor.shape[0] != index_host.shape[1]:
        raise ValueError(f"sparse_coo_tensor: expected one value per index column, got values of shape "
                         f"{tuple(value_tensor.shape)} for {index_host.shape[1]} indices (hybrid tensors are not supported)")
    if size is None:
        size = tuple(int(v) + 1 for v in index_host.max(axis=1)) if index_host.shape[1] else (0,) * index_host.shape[0]
    size = tuple(int(n) for n in size)
    if len(size) != index_host.shape[0]:
        raise ValueError(f"sparse_coo_tensor: indices have {index_host.shape[0]} rows but size {size} has {len(size)} dims")
    if index_host.shape[1]:
        low, high = index_host.min(axis=1), index_host.max(axis=1)
        for d, (lo, hi, n) in enumerate(zip(low, high, size)):
            if lo < 0 or hi >= n:
                raise IndexError(f"sparse_coo_tensor: index {lo if lo < 0 else hi} in dim {d} is outside size {n}")
    if requires_grad:
        value_tensor = value_tensor.detach().requires_grad_(True)
    result = SparseTensor(make_tensor(index_host, device=value_tensor.device), value_tensor, size)
    return result.coalesce() if is_coalesced else result


def to_sparse(dense: Tensor, sparse_dims: int | None = None, *, layout: Any = None) -> SparseTensor:
    """The COO form of a dense tensor: its non-zero entries (gradients flow back to them).

    >>> numdiff.eye(2).to_sparse().values()
    tensor([1., 1.])
    """
    if layout not in (None, sparse_coo):
        raise NotImplementedError(f"to_sparse: layout {layout!r} is not supported (COO only)")
    if sparse_dims not in (None, dense.ndim):
        raise NotImplementedError("to_sparse: hybrid tensors (sparse_dims < ndim) are not supported")
    host = dense.detach().cpu().numpy()
    found = np.stack(np.nonzero(host)).astype(np.int64).reshape(dense.ndim, -1)
    index = make_tensor(found, device=dense.device)
    values = dense[tuple(index[d] for d in range(dense.ndim))] if dense.ndim else dense.reshape(1)
    return SparseTensor(index, values, tuple(dense.shape), coalesced=True)


def mm(sparse: SparseTensor, dense: Tensor) -> Tensor:
    """sparse @ dense, with gradients to the sparse values and to `dense`."""
    if not isinstance(sparse, SparseTensor):
        raise TypeError(f"sparse.mm: expected a sparse first operand, got {type(sparse).__name__}")
    return sparse @ dense


def spmm(sparse: SparseTensor, dense: Tensor) -> Tensor:
    """``torch.spmm``: sparse @ dense (a dense first operand is multiplied densely)."""
    return sparse @ dense if isinstance(sparse, SparseTensor) else sparse.matmul(dense)


def sum(input: SparseTensor, dim: Any = None, dtype: Any = None) -> Tensor:  # noqa: A001 - PyTorch's name
    """The sum of a sparse tensor's values, or its dense sums along `dim`."""
    out = input.sum(dim)
    return out if dtype is None else out.to(_dtype.to_dtype(dtype))


def sampled_dot(rows: Tensor, cols: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``(a @ b.T)`` at the entries (rows[e], cols[e]) only (SDDMM), differentiable in a and b."""
    return coo_sampled_dot(rows, cols, a, b)
