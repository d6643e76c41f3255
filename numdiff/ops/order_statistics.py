"""median, nanmedian, kthvalue and mode: which element of a slice they pick, then that element
gathered.

Each finds an int64 index per slice from ops numdiff.compile can replay (a stable argsort, counts
of NaNs, comparisons, cummax), and gathers the values at those indices, so the gradient goes to
the element picked, as PyTorch's does (the whole tensor's median shares it among the elements
equal to it, as PyTorch's evenly_distribute_backward). No new primitive: the gradient checks in
tests/ops/cases_order_statistics.py run through gather's backward.

PyTorch's rules: the median of n values is the lower one, sorted position (n - 1) // 2; a slice
holding NaN has median NaN (the first NaN's index); nanmedian takes the lower median of the
non-NaN values (NaN only for an all-NaN slice). kthvalue is the k-th smallest, NaN counting as
larger than every number. mode is the most frequent value, the smallest on ties, at the index of
its last occurrence.
"""

from __future__ import annotations

from typing import Any

from numdiff.creation import arange
from numdiff.ops._util import ensure_tensor, normalize_dim
from numdiff.ops.indexing import gather
from numdiff.ops.joining import cat
from numdiff.ops.logical import isfinite, isnan
from numdiff.ops.reduction import values_indices
from numdiff.ops.scan import cummax
from numdiff.ops.selection import where
from numdiff.ops.sorting import argsort
from numdiff.tensor import Tensor


def _prepare(op: str, input: Any, dim: Any) -> tuple[Tensor, int, bool]:
    """(a tensor of at least one dimension, the dim, whether the input was 0-d) for a dim= call."""
    input = ensure_tensor(op, input)
    scalar = input.ndim == 0
    if scalar:
        input = input.reshape(1)
    dim = normalize_dim(op, dim, input.ndim)
    if input.shape[dim] == 0:
        raise IndexError(f"{op}: cannot take it over dimension {dim} of size 0 (shape {tuple(input.shape)})")
    return input, dim, scalar


def _picked(op: str, input: Tensor, dim: int, position: Tensor, order: Tensor, keepdim: bool, scalar: bool):
    """(values, indices): the element at sorted `position` (keepdim-shaped int64) of each slice."""
    indices = gather(order, dim, position)
    return _shaped(gather(input, dim, indices), indices, dim, keepdim, scalar)


def _shaped(values: Tensor, indices: Tensor, dim: int, keepdim: bool, scalar: bool):
    """(values, indices) of keepdim-shaped picks, as the caller asked: 0-d for a 0-d input, the
    reduced dim dropped unless `keepdim`."""
    if scalar:
        return values_indices(values.reshape(()), indices.reshape(()))
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values_indices(values, indices)


def _median(op: str, input: Any, dim: Any, keepdim: bool, ignore_nan: bool):
    input = ensure_tensor(op, input)
    if input._data.dtype.kind == "b":
        raise NotImplementedError(f"{op}: not implemented for bool tensors, as in PyTorch; convert it first, e.g. x.long()")
    if dim is None:  # the whole tensor: the value only
        if input.numel() == 0:
            if input.is_floating_point():  # PyTorch's NaN, tied to the input for a (zero) gradient
                return input.sum() * float("nan")
            raise IndexError(f"{op}: cannot take the median of an empty {input.dtype} tensor (shape {tuple(input.shape)})")
        return _shared_by_equals(input, _median(op, input.reshape(-1), 0, False, ignore_nan).values)
    input, dim, scalar = _prepare(op, input, dim)
    order = argsort(input, dim, stable=True)  # NaNs sort last, in their order
    n = input.shape[dim]
    nans = (input != input).sum(dim, keepdim=True)
    if ignore_nan:  # the lower median of the others; an all-NaN slice gives its first NaN
        position = ((n - 1 - nans) // 2).clamp(min=0)
    else:  # a slice with NaN: its first NaN
        position = where(nans > 0, n - nans, nans * 0 + (n - 1) // 2)
    return _picked(op, input, dim, position, order, keepdim, scalar)


def _shared_by_equals(input: Tensor, value: Tensor) -> Tensor:
    """A whole tensor's median `value` with PyTorch's gradient: shared evenly by every element
    equal to it (by the NaNs where it is NaN), as max() of a whole tensor shares its own, where the
    dim= form gives it to the element picked."""
    if not input.is_floating_point():  # no gradient to share, and the dtype stays the input's
        return value
    median = value.detach()
    # Float masks, not logical ops: a NaN median is shared by the NaNs, and every backend has these.
    equal = ((input == median).to(input.dtype) + isnan(input).to(input.dtype) * isnan(median).to(input.dtype)) > 0
    count = equal.sum().clamp(min=1)
    finite = isfinite(median)
    # A finite median: zero added in the forward pass, so a median of -0.0 stays negative (only
    # finite elements enter, so that inf - inf raises no NumPy warning).
    taken = where(where(finite, equal, False), input, 0.0)
    shared = median - (taken.detach() - taken).sum() / count
    # An infinite or NaN one, where x - x is NaN: max() of the equal elements shares its gradient
    # evenly (a NaN max among the NaNs); -inf is negated first, so that the -inf filler stays below.
    sign = where(median == float("-inf"), -1.0, 1.0).to(input.dtype)
    extreme = sign * where(equal, sign * input, float("-inf")).max()
    return where(finite, shared, extreme)


def median(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median: of the whole tensor (a 0-d tensor), or along `dim` as (values, indices).
    NaN if the slice holds one.

    >>> numdiff.median(numdiff.tensor([[3.0, 1.0, 2.0, 4.0]]), dim=1)
    torch.return_types.median(values=tensor([2.]), indices=tensor([2]))  # doctest: +SKIP
    """
    return _median("median", input, dim, keepdim, ignore_nan=False)


def nanmedian(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """median, ignoring NaNs (NaN only where a slice is all NaN).

    >>> numdiff.nanmedian(numdiff.tensor([3.0, float("nan"), 1.0]))
    tensor(1.)
    """
    return _median("nanmedian", input, dim, keepdim, ignore_nan=True)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """(values, indices): the k-th smallest element along `dim` (k from 1), NaN counting as the
    largest: the k-th of the elements sorted stably, so equal elements count in the input's
    order. The gradient goes to it.

    >>> numdiff.kthvalue(numdiff.tensor([3.0, 1.0, 2.0]), 2).indices
    tensor(2)
    """
    input, dim, scalar = _prepare("kthvalue", input, dim)
    n = input.shape[dim]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise IndexError(f"kthvalue: k={k!r} is out of range for dimension {dim} of size {n} (shape "
                         f"{tuple(input.shape)}); k counts from 1")
    order = argsort(input, dim, stable=True)
    position = order.narrow(dim, 0, 1) * 0 + (k - 1)
    return _picked("kthvalue", input, dim, position, order, keepdim, scalar)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """(values, indices): the most frequent value along `dim` (the smallest on ties) and the index
    of its last occurrence.

    >>> numdiff.mode(numdiff.tensor([2.0, 1.0, 2.0, 1.0])).indices
    tensor(3)
    """
    input, dim, scalar = _prepare("mode", input, dim)
    n = input.shape[dim]
    order = argsort(input, dim, stable=True)
    ordered = gather(input.detach(), dim, order)
    shape = [1] * input.ndim
    shape[dim] = n
    positions = arange(n, device=input.device).reshape(shape).expand(tuple(ordered.shape))
    # A run of equal values starts where the sorted value changes; run length at each position.
    starts = ordered.narrow(dim, 1, n - 1) != ordered.narrow(dim, 0, n - 1)
    first = positions.narrow(dim, 0, 1) >= 0
    starts = cat([first, starts], dim)
    run_start = cummax(where(starts, positions, 0), dim).values
    lengths = positions - run_start + 1
    longest = lengths.amax(dim, keepdim=True)
    # The first sorted position reaching the longest run ends the smallest such value's run.
    end = (lengths == longest).long().argmax(dim, keepdim=True)
    value = gather(ordered, dim, end)
    indices = where(input.detach() == value, positions, -1).amax(dim, keepdim=True)
    return _shaped(gather(input, dim, indices), indices, dim, keepdim, scalar)
