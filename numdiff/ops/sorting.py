"""Ordering ops: sort, argsort, topk. Values are gathered at the sorted indices, so their gradient
(and its gradient) flows through gather/scatter_add; the indices carry none."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from numdiff.ops._util import ensure_tensor, normalize_dim
from numdiff.ops.indexing import gather
from numdiff.tensor import Tensor

sort_result = namedtuple("sort_result", ["values", "indices"])
topk_result = namedtuple("topk_result", ["values", "indices"])


def _order(op: str, input: Any, dim: int, descending: bool) -> tuple[Tensor, int]:
    """Stable sorting indices along `dim` (NaN sorts as the largest value, as in PyTorch)."""
    input = ensure_tensor(op, input)
    if input._data.dtype.kind == "V":
        raise TypeError(f"{op}: numdiff stores bfloat16 but does not compute in it; convert with .float() first")
    axis = normalize_dim(op, dim, input.ndim)
    data = input._data if type(input._data) is np.ndarray else input._data.to_host()
    if data.ndim == 0:
        return Tensor._wrap(np.zeros((), np.int64), None, None), axis
    if descending:
        # Sort the reversed array ascending and reverse back: largest first, and equal values
        # keep their original order (negating would misplace NaN and unsigned values).
        length = data.shape[axis]
        order = np.flip(np.argsort(np.flip(data, axis), axis=axis, kind="stable"), axis)
        order = length - 1 - order
    else:
        order = np.argsort(data, axis=axis, kind="stable")
    indices = Tensor._wrap(np.ascontiguousarray(order, dtype=np.int64), None, None)
    if type(input._data) is not np.ndarray:
        indices = indices.to(input.device)
    return indices, axis


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """Indices that sort `input` along `dim` (always stable: equal values keep their order).

    >>> numdiff.argsort(numdiff.tensor([3., 1., 2.]))
    tensor([1, 2, 0])
    """
    return _order("argsort", input, dim, descending)[0]


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> sort_result:
    """``(values, indices)`` of `input` sorted along `dim`; values are differentiable.

    >>> numdiff.sort(numdiff.tensor([3., 1., 2.]), descending=True).values
    tensor([3., 2., 1.])
    """
    indices, axis = _order("sort", input, dim, descending)
    if input.ndim == 0:
        return sort_result(input.clone(), indices)
    return sort_result(gather(input, axis, indices), indices)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> topk_result:  # noqa: A002
    """The `k` largest (or, with ``largest=False``, smallest) entries along `dim` and their indices,
    in order (numdiff returns them sorted also when ``sorted=False``).

    >>> numdiff.topk(numdiff.tensor([1., 5., 3.]), 2)
    topk_result(values=tensor([5., 3.]), indices=tensor([1, 2]))
    """
    input = ensure_tensor("topk", input)
    axis = normalize_dim("topk", dim, input.ndim)
    size = input.shape[axis] if input.ndim else 1
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k <= size:
        raise RuntimeError(
            f"topk: k ({k!r}) must be an int in [0, {size}], the size of dimension {dim} of input shape "
            f"{tuple(input.shape)} (selected index k out of range)"
        )
    indices, axis = _order("topk", input, axis, descending=largest)
    if input.ndim == 0:
        return topk_result(input.clone() if k else input.reshape(0)[:0], indices if k else indices.reshape(0))
    picked = indices[(slice(None),) * axis + (slice(0, int(k)),)].contiguous()
    return topk_result(gather(input, axis, picked), picked)
