"""embedding_bag: the sum, mean or max of the embedding rows of each bag of indices.

Bags are the rows of a 2-D input, or the runs of a 1-D input that start at `offsets`. Each
entry's bag and weight are found on the host (`bag_of_entries`, `entry_scales`): weight 1 for
sum, 1 / the bag's count for mean, 0 for an entry equal to padding_idx (left out, and not counted
by mean), times per_sample_weights. Sum and mean are then one scaled_row_scatter of the weight's
rows (numdiff.ops.scatter), whose gradient is the same kernel with the indices swapped; max is a
gather from the weight at the row of each bag's maximum, found on the host (numdiff.kernels.bags).
max_norm renormalises the looked-up rows as F.embedding does. With sparse=True (sum and mean) the
rows are looked up by numdiff.nn._sparse_embedding and the weight's gradient is sparse. Empty bags give zeros. numdiff.compile
replays the host steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._dtype import bool_, int64
from numdiff._host_functions import host_function
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import holds_values, like_host
from numdiff.creation import arange, zeros
from numdiff.kernels.bags import first_max_rows
from numdiff.nn._functional_layers import _renorm_rows, embedding
from numdiff.nn._sparse_embedding import sparse_rows
from numdiff.ops._util import ensure_tensor
from numdiff.ops.scatter import scaled_row_scatter
from numdiff.ops.search import _host, _on_device_of
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

_MODES = ("sum", "mean", "max")


def _shapes_only(shape: tuple, dtype: Any, like: Tensor) -> Tensor | None:
    """On the meta device (shapes, no values), a result of `shape` and `dtype` there; else None."""
    return None if holds_values(like._data) else zeros(shape, dtype=dtype, device=like.device)


@host_function
def bag_max_positions(weight: Tensor, flat: Tensor, segments: Tensor, included: Tensor, bags: int) -> Tensor:
    """(bags, dim) int64: for each bag and column, the row of `weight` of the bag's first entry
    holding its maximum (0 for a bag with no included entry; numdiff.kernels.bags)."""
    meta = _shapes_only((bags, weight.shape[1]), int64, weight)
    if meta is not None:
        return meta
    table, ids = _host("embedding_bag", weight), _host("embedding_bag", flat)
    segment, keep = _host("embedding_bag", segments), _host("embedding_bag", included)
    return _on_device_of(first_max_rows(table, ids, segment, keep, bags)[0], segments)


@host_function
def bags_with_entries(segments: Tensor, included: Tensor, bags: int) -> Tensor:
    """(bags, 1) bool: whether each bag holds an included entry (an empty bag's max is 0)."""
    meta = _shapes_only((bags, 1), bool_, segments)
    if meta is not None:
        return meta
    segment, keep = _host("embedding_bag", segments), _host("embedding_bag", included)
    counts = np.bincount(segment[keep], minlength=bags)
    return _on_device_of((counts > 0)[:, None], segments)


@host_function
def bag_of_entries(starts: Tensor, entries: int) -> Tensor:
    """(entries,) int64: the bag of each of `entries` flat indices, bags starting at `starts`
    (checked non-decreasing from 0, so each bag holds the entries up to the next start)."""
    meta = _shapes_only((entries,), int64, starts)
    if meta is not None:
        return meta
    first = _host("embedding_bag", starts)
    sizes = np.diff(np.append(first, entries))
    return _on_device_of(np.repeat(np.arange(first.size, dtype=np.int64), sizes), starts)


@host_function
def entry_scales(flat: Tensor, segments: Tensor, bags: int, mean: bool, padding_idx: int, like: Tensor) -> Tensor:
    """(entries,) in `like`'s dtype: each entry's weight in its bag's sum; 0 where flat equals
    padding_idx (-1: none), and with `mean`, 1 / the count of the bag's other entries."""
    meta = _shapes_only(tuple(flat.shape), like.dtype, like)
    if meta is not None:
        return meta
    ids, bag = _host("embedding_bag", flat), _host("embedding_bag", segments)
    included = ids != padding_idx
    scale = included.astype(np.float64)
    if mean:
        counts = np.bincount(bag, weights=scale, minlength=bags)
        scale /= np.maximum(counts, 1.0)[bag]
    return Tensor._wrap(like_host(scale.astype(like._data.dtype), like._data), None, None)


def _offsets_of(input: Tensor, offsets: Any, include_last_offset: bool) -> tuple[Tensor, Tensor]:
    """(the flat indices, the start of each bag) after checking both."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"embedding_bag: offsets must be None for a 2-D input (bags are its rows), got input of shape {tuple(input.shape)}")
        bags, length = input.shape
        return input.reshape(-1), arange(0, bags * length, max(length, 1), device=input.device)[:bags]
    if input.ndim != 1:
        raise ValueError(f"embedding_bag: input must be 1-D (with offsets) or 2-D (bags as rows), got shape {tuple(input.shape)}")
    if offsets is None:
        raise ValueError("embedding_bag: a 1-D input needs offsets (the start of each bag)")
    offsets = ensure_tensor("embedding_bag", offsets, "offsets")
    if offsets.ndim != 1 or offsets._data.dtype.kind not in "iu":
        raise ValueError(f"embedding_bag: offsets must be a 1-D integer tensor, got shape {tuple(offsets.shape)} dtype {offsets.dtype}")
    starts = _host("embedding_bag", offsets)
    if starts.size and (starts[0] != 0 or (np.diff(starts) < 0).any() or starts[-1] > input.shape[0]):
        raise ValueError(
            f"embedding_bag: offsets must start at 0 and not decrease up to the input's length {input.shape[0]}, got {starts.tolist()}"
        )
    if include_last_offset:
        if not starts.size or starts[-1] != input.shape[0]:
            # The offsets are then CSR's row pointers. PyTorch reads past a last offset short of the
            # input's length differently in each mode (sum drops the entries after it, mean counts
            # them but does not add them, max takes them), and with a single offset reads memory
            # it does not own; a number from either would be wrong.
            raise ValueError(
                f"embedding_bag: with include_last_offset=True the last offset must be the input's length "
                f"{input.shape[0]}, got offsets {starts.tolist()}"
            )
        offsets = offsets[:-1]
    return input, offsets


def embedding_bag(
    input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None, norm_type: float = 2,
    scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False, padding_idx: int | None = None,
) -> Tensor:
    """The `mode` ("sum", "mean" or "max") of the rows of `weight` of each bag: (bags, dim).

    >>> F.embedding_bag(numdiff.tensor([0, 1, 1]), numdiff.eye(2), numdiff.tensor([0, 1]), mode="sum")
    tensor([[1., 0.],
            [0., 2.]])
    """
    if mode not in _MODES:
        raise ValueError(f"embedding_bag: mode must be one of {_MODES}, got {mode!r}")
    if sparse and mode == "max":
        raise ValueError("embedding_bag: max mode does not support sparse weights (PyTorch refuses it too); use sparse=False")
    if scale_grad_by_freq:
        raise ValueError("embedding_bag: scale_grad_by_freq=True is not supported; use False")
    input = ensure_tensor("embedding_bag", input)
    flat, starts = _offsets_of(input, offsets, include_last_offset)
    if per_sample_weights is not None:
        if mode != "sum":
            raise ValueError(f"embedding_bag: per_sample_weights is only supported for mode='sum', got mode={mode!r}")
        per_sample_weights = ensure_tensor("embedding_bag", per_sample_weights, "per_sample_weights")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"embedding_bag: per_sample_weights must have the input's shape {tuple(input.shape)}, got {tuple(per_sample_weights.shape)}"
            )
    if mode != "max":
        return _bag_sum(flat, weight, starts, mode == "mean", per_sample_weights, padding_idx, max_norm, norm_type, sparse)
    _check_bag_entries(flat, weight, padding_idx, max_norm, norm_type, sparse)
    bags = starts.shape[0]
    segments = bag_of_entries(starts, flat.shape[0])
    included = flat >= 0 if padding_idx is None else flat != (padding_idx % weight.shape[0])
    # Gathered from the weight itself: the gradient is a (bags, dim) scatter into the weight's
    # shape, not one into (entries, dim) and a second into the weight's.
    picked = weight.gather(0, bag_max_positions(weight, flat, segments, included, bags))
    return where(bags_with_entries(segments, included, bags), picked, 0.0)


def _bag_sum(
    flat: Tensor, weight: Tensor, starts: Tensor, mean: bool, per_sample_weights: Tensor | None, padding_idx: int | None,
    max_norm: float | None, norm_type: float, sparse: bool,
) -> Tensor:
    """embedding_bag's sum (mean: each entry weighted by 1 / its bag's count) as one scaled_row_scatter."""
    _check_bag_entries(flat, weight, padding_idx, max_norm, norm_type, sparse)
    rows = weight.shape[0]
    segments = bag_of_entries(starts, flat.shape[0])
    scale = entry_scales(flat, segments, starts.shape[0], mean, -1 if padding_idx is None else padding_idx % rows, weight)
    if per_sample_weights is not None:
        scale = scale * per_sample_weights.reshape(-1)
    if sparse and weight.requires_grad and is_grad_enabled():
        # Each entry's row, scaled and added into its bag: the weight's gradient is then the
        # entries' rows of the output gradient, scaled, as a sparse tensor (padding entries left out).
        rows = sparse_rows("embedding_bag", weight, flat, None if padding_idx is None else padding_idx % weight.shape[0])
        bags = zeros((starts.shape[0], weight.shape[1]), dtype=weight.dtype, device=weight.device)
        return bags.index_add(0, segments, rows * scale.unsqueeze(1))
    return scaled_row_scatter(weight, scale, flat.reshape(-1), segments, starts.shape[0])


def _check_bag_entries(
    flat: Tensor, weight: Tensor, padding_idx: int | None, max_norm: float | None, norm_type: float, sparse: bool
) -> None:
    """The checks F.embedding makes (its errors for a bad weight or index dtype), the indices
    against the weight's rows and padding_idx, then max_norm's renormalisation of the rows used."""
    if weight.ndim != 2 or flat._data.dtype.kind not in "iu" or weight._data.dtype.kind not in "fV":
        embedding(flat, weight, None, None, norm_type, False, sparse)  # its errors name the bad argument
    rows = weight.shape[0]
    ids = _host("embedding_bag", flat) if holds_values(flat._data) else None
    if ids is not None and ids.size and (ids.min() < 0 or ids.max() >= rows):
        raise IndexError(
            f"embedding_bag: indices must be in [0, {rows - 1}] for a weight of shape {tuple(weight.shape)}, "
            f"got values in [{ids.min()}, {ids.max()}]"
        )
    if padding_idx is not None and not -rows <= padding_idx < rows:
        raise ValueError(f"embedding_bag: padding_idx must be within [{-rows}, {rows - 1}], got {padding_idx}")
    if max_norm is not None and ids is not None:
        _renorm_rows(weight, np.unique(ids), max_norm, norm_type)
