"""numdiff.sparse: COO and CSR sparse tensors (``torch.sparse``) with Numba kernels for
sparse @ dense and gradients to the values and to the dense side.

>>> adj = numdiff.sparse_coo_tensor([[0, 1, 1], [1, 0, 1]], [1.0, 1.0, 2.0], (2, 2))
>>> numdiff.sparse.mm(adj, numdiff.ones(2, 3)).shape
numdiff.Size([2, 3])
>>> numdiff.sparse.mm(adj.to_sparse_csr(), numdiff.ones(2, 3)).shape
numdiff.Size([2, 3])

Hybrid (sparse + dense dims) and batched CSR tensors, and the CSC/BSR layouts, are not implemented.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.creation import tensor as make_tensor
from numdiff.ops.products import addmm as dense_addmm
from numdiff.ops.sparse import check_csr, coo_sampled_dot, csr_sampled_dot
from numdiff.sparse._coo import SparseTensor, layout, sparse_coo, strided
from numdiff.sparse._csr import SparseCsrTensor, coo_to_csr, sparse_csr
from numdiff.tensor import Tensor

__all__ = ["SparseCsrTensor", "SparseTensor", "addmm", "layout", "mm", "sampled_dot", "sparse_coo", "sparse_coo_tensor",
           "sampled_addmm", "sparse_csr", "sparse_csr_tensor", "spmm", "strided", "sum", "to_sparse", "to_sparse_csr"]


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
    if value_tensor.ndim < 1 or value_tensor.shape[0] != index_host.shape[1]:
        raise ValueError(f"sparse_coo_tensor: expected one value per index column (a hybrid tensor: one "
                         f"dense block per column), got values of shape {tuple(value_tensor.shape)} for {index_host.shape[1]} indices")
    dense_shape = tuple(value_tensor.shape[1:])
    if size is None:
        size = tuple(int(v) + 1 for v in index_host.max(axis=1)) if index_host.shape[1] else (0,) * index_host.shape[0]
        size += dense_shape
    size = tuple(int(n) for n in size)
    if len(size) != index_host.shape[0] + len(dense_shape) or size[index_host.shape[0]:] != dense_shape:
        raise ValueError(f"sparse_coo_tensor: indices have {index_host.shape[0]} rows and values' dense shape is "
                         f"{dense_shape}, so size must be {index_host.shape[0]} sparse sizes then {dense_shape}, got {size}")
    if index_host.shape[1]:
        low, high = index_host.min(axis=1), index_host.max(axis=1)
        for d, (lo, hi, n) in enumerate(zip(low, high, size)):
            if lo < 0 or hi >= n:
                raise IndexError(f"sparse_coo_tensor: index {lo if lo < 0 else hi} in dim {d} is outside size {n}")
    if requires_grad:
        value_tensor = value_tensor.detach().requires_grad_(True)
    result = SparseTensor(make_tensor(index_host, device=value_tensor.device), value_tensor, size)
    return result.coalesce() if is_coalesced else result


def _index_host(op: str, name: str, index: Any) -> np.ndarray:
    host = index.detach().cpu().numpy() if isinstance(index, Tensor) else np.asarray(index)
    if host.dtype.kind not in "iu" and host.size:
        raise TypeError(f"{op}: {name} must be integers, got {host.dtype}")
    if host.ndim != 1:
        raise ValueError(f"{op}: {name} must be 1-D (batched CSR tensors are not supported), got shape {host.shape}")
    return host.astype(np.int64)


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseCsrTensor:
    """A CSR matrix: row i's entries are ``values[crow_indices[i]:crow_indices[i + 1]]`` in columns
    ``col_indices[...]``; `size` defaults to (rows, largest column + 1). The structure is checked
    here (offsets from 0 to nnz, never decreasing; columns inside `size`).

    >>> numdiff.sparse_csr_tensor([0, 1, 1, 3], [2, 0, 1], [1.0, 2.0, 3.0], (3, 3)).to_dense()
    tensor([[0., 0., 1.],
            [0., 0., 0.],
            [2., 3., 0.]])
    """
    crow = _index_host("sparse_csr_tensor", "crow_indices", crow_indices)
    cols = _index_host("sparse_csr_tensor", "col_indices", col_indices)
    if isinstance(values, Tensor):
        value_tensor = values if dtype is None else values.to(dtype)
    else:
        value_tensor = make_tensor(values, dtype=dtype)
    if device is not None:
        value_tensor = value_tensor.to(device)
    if value_tensor.ndim != 1 or value_tensor.shape[0] != cols.shape[0]:
        raise ValueError(f"sparse_csr_tensor: expected one value per column index ({cols.shape[0]}), got values of "
                         f"shape {tuple(value_tensor.shape)} (hybrid and batched tensors are not supported)")
    if crow.shape[0] == 0:
        raise ValueError("sparse_csr_tensor: crow_indices needs at least one entry (rows + 1 offsets)")
    if size is None:
        size = (crow.shape[0] - 1, int(cols.max()) + 1 if cols.size else 0)
    size = tuple(int(n) for n in size)
    if len(size) != 2:
        raise ValueError(f"sparse_csr_tensor: size must have 2 dims (batched and hybrid CSR are not supported), got {size}")
    target = value_tensor.device
    crow_tensor, col_tensor = make_tensor(crow, device=target), make_tensor(cols, device=target)
    check_csr("sparse_csr_tensor", crow_tensor, col_tensor, size[0], size[1])
    if requires_grad:
        value_tensor = value_tensor.detach().requires_grad_(True)
    return SparseCsrTensor(crow_tensor, col_tensor, value_tensor, size)


def to_sparse_csr(dense: Any, dense_dim: int | None = None) -> SparseCsrTensor:
    """The CSR form of a 2-D dense (or COO) tensor: its non-zero entries, row by row (gradients
    flow back to them).

    >>> numdiff.eye(2).to_sparse_csr().crow_indices()
    tensor([0, 1, 2])
    """
    if dense_dim not in (None, 0):
        raise NotImplementedError("to_sparse_csr: hybrid tensors (dense_dim > 0) are not supported")
    if isinstance(dense, (SparseTensor, SparseCsrTensor)):
        return dense.to_sparse_csr()
    if not isinstance(dense, Tensor) or dense.ndim != 2:
        raise ValueError(f"to_sparse_csr: expects a 2-D tensor, got {type(dense).__name__} of shape "
                         f"{tuple(getattr(dense, 'shape', ()))}")
    return coo_to_csr(to_sparse(dense))


def addmm(input: Tensor, mat1: Any, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` with a sparse (COO or CSR) `mat1`: the product runs
    the sparse kernels, gradients reach input, mat1's values and mat2.

    >>> a = numdiff.eye(2).to_sparse_csr()
    >>> numdiff.sparse.addmm(numdiff.ones(2, 2), a, numdiff.ones(2, 2), beta=0.5).tolist()
    [[1.5, 1.5], [1.5, 1.5]]
    """
    return dense_addmm(input, mat1, mat2, beta=beta, alpha=alpha)


def to_sparse(dense: Tensor, sparse_dims: int | None = None, *, layout: Any = None) -> Any:
    """The COO form of a dense tensor: its non-zero entries (gradients flow back to them);
    ``layout=numdiff.sparse_csr`` gives the CSR form.

    >>> numdiff.eye(2).to_sparse().values()
    tensor([1., 1.])
    """
    if layout is sparse_csr:
        return to_sparse_csr(dense)
    if layout not in (None, sparse_coo):
        raise NotImplementedError(f"to_sparse: layout {layout!r} is not supported (COO and CSR only)")
    if sparse_dims not in (None, dense.ndim):
        raise NotImplementedError("to_sparse: hybrid tensors (sparse_dims < ndim) are not supported")
    host = dense.detach().cpu().numpy()
    found = np.stack(np.nonzero(host)).astype(np.int64).reshape(dense.ndim, -1)
    index = make_tensor(found, device=dense.device)
    values = dense[tuple(index[d] for d in range(dense.ndim))] if dense.ndim else dense.reshape(1)
    return SparseTensor(index, values, tuple(dense.shape), coalesced=True)


def mm(sparse: Any, dense: Tensor) -> Tensor:
    """sparse (COO or CSR) @ dense, with gradients to the sparse values and to `dense`."""
    if not isinstance(sparse, (SparseTensor, SparseCsrTensor)):
        raise TypeError(f"sparse.mm: expected a sparse first operand, got {type(sparse).__name__}")
    return sparse @ dense


def spmm(sparse: Any, dense: Tensor) -> Tensor:
    """``torch.spmm``: sparse (COO or CSR) @ dense (a dense first operand is multiplied densely)."""
    return sparse @ dense if isinstance(sparse, (SparseTensor, SparseCsrTensor)) else sparse.matmul(dense)


def sum(input: SparseTensor, dim: Any = None, dtype: Any = None) -> Tensor:  # noqa: A001 - PyTorch's name
    """The sum of a sparse tensor's values, or its dense sums along `dim`."""
    out = input.sum(dim)
    return out if dtype is None else out.to(_dtype.to_dtype(dtype))


def sampled_dot(rows: Tensor, cols: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``(a @ b.T)`` at the entries (rows[e], cols[e]) only (SDDMM), differentiable in a and b."""
    return coo_sampled_dot(rows, cols, a, b)


def sampled_addmm(input: SparseCsrTensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1.0,
                  alpha: Any = 1.0) -> SparseCsrTensor:
    """``beta * input + alpha * (mat1 @ mat2)`` computed only at `input`'s entries (PyTorch's
    torch.sparse.sampled_addmm): a CSR tensor with `input`'s structure, from the CSR sampled-dot
    kernel, differentiable in input's values, mat1 and mat2.

    >>> pattern = numdiff.eye(2).to_sparse_csr()
    >>> numdiff.sparse.sampled_addmm(pattern, numdiff.ones(2, 3), numdiff.ones(3, 2)).values()
    tensor([4., 4.])
    """
    if not isinstance(input, SparseCsrTensor):
        raise TypeError(f"sampled_addmm: expected a sparse CSR input, got {type(input).__name__}")
    if not isinstance(mat1, Tensor) or not isinstance(mat2, Tensor) or mat1.ndim != 2 or mat2.ndim != 2 or (
        (mat1.shape[0], mat2.shape[1]) != tuple(input.shape)
    ):
        raise ValueError(f"sampled_addmm: expected mat1 (m, k) and mat2 (k, n) with (m, n) = {tuple(input.shape)}, "
                         f"got {tuple(getattr(mat1, 'shape', ()))} and {tuple(getattr(mat2, 'shape', ()))}")
    product = csr_sampled_dot(input.crow_indices(), input.col_indices(), mat1, mat2.t())
    return SparseCsrTensor(input.crow_indices(), input.col_indices(), beta * input.values() + alpha * product,
                           tuple(input.shape))
