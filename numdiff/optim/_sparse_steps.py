"""The sparse paths of SGD, Adagrad and SparseAdam: updates of only the rows a sparse gradient
names (an embedding's with sparse=True), in PyTorch's arithmetic order.

A sparse gradient is coalesced first (duplicate rows summed), so each row is read and written
once: the parameter and each state buffer are viewed as a (rows, width) table and updated on
the host by numdiff.kernels.sparse_row_steps (Adagrad, SparseAdam) or index_add_rows (SGD). SGD's momentum buffer stays sparse when it starts sparse, growing by
concatenation as PyTorch's does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff.backend import is_host
from numdiff.kernels.scatter import index_add_rows
from numdiff.kernels.sparse_row_steps import adagrad_rows, sparse_adam_rows
from numdiff.optim.optimizer import SparseGradientError, zeros_state
from numdiff.tensor import Tensor


def is_sparse(grad: Any) -> bool:
    """True for a sparse COO gradient (anything but a dense Tensor in `.grad`)."""
    return not isinstance(grad, Tensor) and getattr(grad, "is_sparse", False) is True


def _table(tensor: Tensor, sparse_dim: int) -> np.ndarray:
    """`tensor`'s host array viewed as (rows over the first `sparse_dim` dims, the rest flattened)."""
    data = tensor._data
    if not is_host(data) or not data.flags.c_contiguous:
        raise SparseGradientError(
            f"sparse optimizer step: the parameter or state must be a contiguous CPU array, got {type(data).__name__} "
            f"of shape {tuple(tensor.shape)}"
        )
    return data.reshape(int(np.prod(data.shape[:sparse_dim], dtype=np.int64)), -1)


def _entries(param: Tensor, grad: Any) -> tuple[np.ndarray, np.ndarray]:
    """(row of each entry (nnz,) int64, flat over `param`'s sparse dims; the values (nnz, width))
    of `grad` as it stands (repeats kept), after checking its shape matches `param`'s."""
    if tuple(grad.shape) != tuple(param.shape):
        raise SparseGradientError(
            f"sparse optimizer step: gradient of shape {tuple(grad.shape)} for a parameter of shape {tuple(param.shape)}"
        )
    index = grad._index_tensor.cpu().numpy()
    rows = np.ravel_multi_index(tuple(index), tuple(param.shape[: index.shape[0]])) if index.shape[1] else index[0]
    values = np.ascontiguousarray(grad._value_tensor.detach().cpu().numpy(), dtype=param._data.dtype)
    return rows.astype(np.int64, copy=False), values.reshape(rows.size, -1)


def coalesced_rows(param: Tensor, grad: Any) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows (n,) int64, sorted; their summed values (n, width)) of `grad`: PyTorch's
    coalesce, repeats summed in the order they come (numdiff.kernels.scatter.index_add_rows)."""
    rows, values = _entries(param, grad)
    if grad.is_coalesced():
        return rows, values
    distinct, inverse = np.unique(rows, return_inverse=True)
    summed = np.zeros((distinct.size, values.shape[1]), dtype=values.dtype)
    index_add_rows(summed, inverse.reshape(-1).astype(np.int64, copy=False), values)
    return distinct, summed


def add_rows(target: Tensor, grad: Any, alpha: float) -> None:
    """``target += alpha * grad`` in place for a sparse or dense `grad` (PyTorch's dense ``add_``:
    each entry's ``alpha * value`` added at its row in turn, repeats included)."""
    if is_sparse(grad):
        rows, values = _entries(target, grad)
        table = _table(target, grad.sparse_dim())
        index_add_rows(table.reshape(table.shape[0], -1), rows, values * table.dtype.type(alpha))
    else:
        target._data += grad._data * target._data.dtype.type(alpha)
    target._version_counter[0] += 1


def sgd_sparse_step(param: Tensor, grad: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One SGD step of `param` with a sparse `grad` (PyTorch's _single_tensor_sgd on a sparse grad)."""
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        raise SparseGradientError(
            "SGD: weight_decay needs grad + weight_decay * param, and add(sparse, dense) is not supported. "
            "Use add(dense, sparse) instead (as in PyTorch; set weight_decay=0 for sparse gradients)"
        )
    momentum = float(group["momentum"])
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = grad.detach().clone()
        elif is_sparse(buf):
            buf = (buf * momentum)._concatenated(grad * (1 - float(group["dampening"])))
            if buf._nnz() > param.shape[0]:
                # More entries than rows (PyTorch's buffer keeps growing): summed, same dense value.
                buf = buf.coalesce()
        else:
            buf._data *= buf._data.dtype.type(momentum)
            add_rows(buf, grad, 1 - float(group["dampening"]))
        state["momentum_buffer"] = buf
        if not group["nesterov"]:
            grad = buf
        elif is_sparse(buf):
            grad = grad._concatenated(buf * momentum)
        else:
            grad = buf * momentum + grad.to_dense()
    add_rows(param, grad, -float(group["lr"]))


def adagrad_sparse_step(param: Tensor, grad: Any, state_sum: Tensor, step: float, group: dict[str, Any]) -> None:
    """One Adagrad step with a sparse `grad`: ``sum[rows] += g*g``, then
    ``p[rows] -= clr * g / (sqrt(sum[rows]) + eps)`` over the coalesced rows only."""
    if group["weight_decay"] != 0:
        raise SparseGradientError("weight_decay option is not compatible with sparse gradients")
    clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
    rows, values = coalesced_rows(param, grad)
    if group["maximize"]:
        values = -values
    adagrad_rows(_table(param, grad.sparse_dim()), _table(state_sum, grad.sparse_dim()), rows, values, group["eps"], clr)
    state_sum._version_counter[0] += 1
    param._version_counter[0] += 1


def sparse_adam_step(param: Tensor, grad: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One SparseAdam step: Adam's moments and update on the rows `grad` names only (PyTorch's
    F.sparse_adam: the moments of other rows do not decay)."""
    if len(state) == 0:
        state["step"] = 0
        state["exp_avg"] = zeros_state(param)
        state["exp_avg_sq"] = zeros_state(param)
    step = state["step"] = int(state["step"]) + 1  # a plain int, as PyTorch keeps (a loaded state may hold a tensor)
    beta1, beta2 = group["betas"]
    rows, values = coalesced_rows(param, grad)
    if group["maximize"]:
        values = -values
    if rows.size == 0:
        return
    step_size = group["lr"] * math.sqrt(1 - beta2**step) / (1 - beta1**step)
    sparse_dim = grad.sparse_dim()
    sparse_adam_rows(
        _table(param, sparse_dim), _table(state["exp_avg"], sparse_dim), _table(state["exp_avg_sq"], sparse_dim),
        rows, values, beta1, beta2, group["eps"], step_size,
    )  # fmt: skip
    for name in ("exp_avg", "exp_avg_sq"):
        state[name]._version_counter[0] += 1
    param._version_counter[0] += 1
