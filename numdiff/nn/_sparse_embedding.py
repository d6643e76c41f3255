"""The lookup behind ``F.embedding(..., sparse=True)`` and ``F.embedding_bag(..., sparse=True)``:
rows of the weight whose gradient is a sparse COO tensor, as PyTorch's.

The gradient of ``weight[ids]`` is a (num_embeddings, dim) tensor that is zero except at the rows
looked up. With ``sparse=True`` it stays in that form: indices (1, n) (the ids, in input order,
repeats kept, padding_idx's entries left out) and values (n, dim) (the output gradient's rows), so a
step over a 10000-row table touches a few hundred rows instead of writing and reading the whole
table. The engine sums such gradients as PyTorch does (autograd/_grad_buffers.sum_gradients) and
SGD, Adagrad and SparseAdam update only the rows named.

Not in the op registry: the registry's gradient checks compare dense arrays, and this op exists
to give the sparse form (tests/nn/test_sparse_embedding.py checks its gradient against central
differences through ``to_dense``). Its dense twin is ``weight[ids]`` (getitem).
"""

from __future__ import annotations

import numpy as np

from numdiff.autograd.function import Function
from numdiff.autograd.transform_state import anywhere, transforms
from numdiff.backend import is_host
from numdiff.tensor import Tensor


class EmbeddingSparseRows(Function):
    """weight[ids] for 1-D int64 ids: (n, dim). Backward: the weight's gradient as a sparse COO
    tensor (indices (1, n'), values (n', dim)), the entries equal to `padding_idx` (-1: none)
    left out; the ids get none."""

    array_forward = True
    op_name = "embedding_sparse_rows"

    @staticmethod
    def forward(ctx, weight, ids, *, padding_idx):
        ctx.save_for_backward(ids)
        ctx.weight_shape = weight.shape
        ctx.padding_idx = padding_idx
        return np.take(weight, ids, axis=0)

    @staticmethod
    def backward(ctx, grad):
        from numdiff.sparse._coo import SparseTensor  # numdiff.sparse loads on first use

        (ids,) = ctx.saved_tensors
        values = grad
        if ctx.padding_idx >= 0:
            keep = ids != ctx.padding_idx
            ids, values = ids[keep], grad[keep]
        return SparseTensor(ids.reshape(1, -1), values, tuple(ctx.weight_shape)), None


def sparse_rows(op: str, weight: Tensor, ids: Tensor, padding_idx: int | None) -> Tensor:
    """The rows of `weight` at the flat `ids` (already checked against its rows), with a sparse
    gradient for `weight`; `op` names the caller in errors.

    >>> sparse_rows("embedding", weight, numdiff.tensor([0, 2, 2]), None).shape
    numdiff.Size([3, 4])
    """
    if anywhere.levels and (transforms.interpreter is not None or transforms.grad_depth):
        # compile's traced backward and the func transforms hold gradients as dense arrays.
        raise NotImplementedError(
            f"{op}: sparse=True gradients are not supported inside numdiff.compile or a numdiff.func transform "
            "(vmap, grad, vjp, jvp); use sparse=False there, or run the model eagerly"
        )
    if not is_host(weight._data):
        raise NotImplementedError(
            f"{op}: sparse=True gradients are implemented for weights on the CPU, got a weight on {weight.device}; "
            "use sparse=False there"
        )
    flat = Tensor._wrap(np.ascontiguousarray(ids._data.reshape(-1), dtype=np.int64), None, None)
    return EmbeddingSparseRows.apply(weight, flat, padding_idx=-1 if padding_idx is None else padding_idx)
