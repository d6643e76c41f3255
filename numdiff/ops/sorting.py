"""Ordering ops: sort, argsort, topk. Values are gathered at the sorted indices, so their gradient
(and its gradient) flows through gather/scatter_add; the indices carry none."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from numdiff._host_functions import host_function
from numdiff.backend import holds_values, is_host
from numdiff.ops._util import batch_nondifferentiable, ensure_tensor, normalize_dim, vmapped
from numdiff.ops.indexing import gather
from numdiff.tensor import Tensor

sort_result = namedtuple("sort_result", ["values", "indices"])
topk_result = namedtuple("topk_result", ["values", "indices"])


def _stable_order(data: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable sorting indices of a host array along `axis` (NaN sorts as the largest value)."""
    if not descending:
        return np.argsort(data, axis=axis, kind="stable")
    # Sort the reversed array ascending and reverse back: largest first, and equal values keep
    # their original order (negating would misplace NaN and unsigned values). The reversed copy
    # is made contiguous: NumPy's stable sort is many times slower on a negative-stride view.
    length = data.shape[axis]
    reversed_order = np.argsort(np.ascontiguousarray(np.flip(data, axis)), axis=axis, kind="stable")
    return length - 1 - np.flip(reversed_order, axis)


def _host(op: str, input: Any) -> tuple[Tensor, np.ndarray]:
    input = ensure_tensor(op, input)
    return input, input._host_values()  # bfloat16 widened exactly to float32: the same order


def _indices(order: np.ndarray, like: Tensor) -> Tensor:
    indices = Tensor._wrap(np.ascontiguousarray(order, dtype=np.int64), None, None)
    return indices if is_host(like._data) else indices.to(like.device)


def _order(op: str, input: Any, dim: int, descending: bool) -> tuple[Tensor, int]:
    """Stable sorting indices along `dim`, as an int64 tensor on the input's device."""
    input = ensure_tensor(op, input)
    axis = normalize_dim(op, dim, input.ndim)
    if vmapped(input):
        # A batched tensor's own array is its first example only: order the whole batch, whose
        # dim 0 is the batch (nested levels unwrap one per call).
        return batch_nondifferentiable(lambda value: _order(op, value, axis + 1, descending)[0], input), axis
    if not holds_values(input._data):  # a meta tensor: the order's shape and dtype, no values
        return Tensor._wrap(np.empty(input.shape, np.int64, like=input._data), None, None), axis
    input, data = _host(op, input)
    if data.ndim == 0:
        return Tensor._wrap(np.zeros((), np.int64), None, None), axis
    return _indices(_stable_order(data, axis, descending), input), axis


@host_function
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
    input = ensure_tensor("sort", input)
    axis = normalize_dim("sort", dim, input.ndim)
    # Through the public argsort, which numdiff.compile records as a call: the order depends on the
    # values, so a compiled graph must recompute it rather than keep the traced one.
    indices = argsort(input, dim, descending)
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
    if input.ndim == 0:
        indices = Tensor._wrap(np.zeros((), np.int64), None, None)
        return topk_result(input.clone() if k else input.reshape(0)[:0], indices if k else indices.reshape(0))
    indices = topk_indices(input, int(k), axis, largest)  # a recorded call under numdiff.compile, as argsort
    return topk_result(gather(input, axis, indices), indices)


@host_function
def topk_indices(input: Tensor, k: int, dim: int, largest: bool) -> Tensor:
    """The indices `topk` picks along `dim` (already checked), in order, as an int64 tensor.

    >>> numdiff.ops.sorting.topk_indices(numdiff.tensor([1., 5., 3.]), 2, 0, True)
    tensor([1, 2])
    """
    axis = dim
    if vmapped(input):
        # As in _order: pick along the logical dim of every example in the batch, not the first's.
        return batch_nondifferentiable(lambda value: topk_indices(value, k, axis + 1, largest), input)
    size = input.shape[axis]
    if not holds_values(input._data):  # a meta tensor: the picked indices' shape and dtype only
        shape = tuple(k if d == axis else n for d, n in enumerate(input.shape))
        return Tensor._wrap(np.empty(shape, np.int64, like=input._data), None, None)
    _, data = _host("topk", input)
    if 0 < k < size:
        # Partition first (linear time), then order only the k picked, by value and then position.
        kth = size - k if largest else k - 1
        picked = np.argpartition(data, kth, axis=axis)
        picked = np.sort(picked[(slice(None),) * axis + ((slice(size - k, None) if largest else slice(0, k)),)], axis=axis)
        order = np.take_along_axis(picked, _stable_order(np.take_along_axis(data, picked, axis), axis, largest), axis)
    else:
        order = _stable_order(data, axis, largest)[(slice(None),) * axis + (slice(0, int(k)),)]
    return _indices(order, input)
