"""embedding_bag: the sum, mean or max of the embedding rows of each bag of indices.

Bags are the rows of a 2-D input, or the runs of a 1-D input that start at `offsets`. The rows
come from F.embedding (so max_norm renormalises them as there), each element's bag from a
searchsorted of its position in the offsets, and the reduction is an index_add into zeros (sum;
mean divides by the bag's count) or, for max, a gather at the position of each bag's maximum,
found on the host. Empty bags give zeros, entries equal to padding_idx are left out (and not
counted by mean). Gradients come from those ops; numdiff.compile replays the host steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._host_functions import host_function
from numdiff.creation import arange, zeros
from numdiff.nn._functional_layers import embedding
from numdiff.ops._util import ensure_tensor
from numdiff.ops.scatter import index_add
from numdiff.ops.search import _host, _on_device_of, searchsorted
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

_MODES = ("sum", "mean", "max")


@host_function
def bag_max_positions(embedded: Tensor, segments: Tensor, included: Tensor, bags: int) -> Tensor:
    """(bags, dim) int64: for each bag and column, the first row of `embedded` (T, dim) in that bag
    holding the bag's maximum (0 for a bag with no included row)."""
    values, segment, keep = _host("embedding_bag", embedded), _host("embedding_bag", segments), _host("embedding_bag", included)
    rows, dim = values.shape
    best = np.full((bags, dim), -np.inf, dtype=values.dtype)
    np.maximum.at(best, segment[keep], values[keep])
    hits = (values == best[segment]) & keep[:, None]
    first = np.full((bags, dim), rows, dtype=np.int64)
    np.minimum.at(first, segment, np.where(hits, np.arange(rows)[:, None], rows))
    return _on_device_of(np.where(first == rows, 0, first), embedded)


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
        if not starts.size:
            raise ValueError("embedding_bag: include_last_offset=True needs at least one offset")
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
    if scale_grad_by_freq:
        raise ValueError("embedding_bag: scale_grad_by_freq=True is not supported; use False")
    input = ensure_tensor("embedding_bag", input)
    flat, starts = _offsets_of(input, offsets, include_last_offset)
    embedded = embedding(flat, weight, None, max_norm, norm_type, False, sparse)
    rows, dim, bags = flat.shape[0], weight.shape[1], starts.shape[0]
    segments = searchsorted(starts, arange(rows, device=flat.device), right=True) - 1
    included = flat >= 0 if padding_idx is None else flat != (padding_idx % weight.shape[0])
    if per_sample_weights is not None:
        if mode != "sum":
            raise ValueError(f"embedding_bag: per_sample_weights is only supported for mode='sum', got mode={mode!r}")
        per_sample_weights = ensure_tensor("embedding_bag", per_sample_weights, "per_sample_weights")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"embedding_bag: per_sample_weights must have the input's shape {tuple(input.shape)}, got {tuple(per_sample_weights.shape)}"
            )
    empty = zeros((bags, dim), dtype=weight.dtype, device=weight.device)
    if mode == "max":
        positions = bag_max_positions(embedded, segments, included, bags)
        counts = index_add(zeros((bags,), dtype=weight.dtype, device=weight.device), 0, segments, included.to(weight.dtype))
        picked = embedded.gather(0, positions)
        return where(counts.unsqueeze(1) > 0, picked, 0.0)
    scale = included.to(weight.dtype)
    if per_sample_weights is not None:
        scale = scale * per_sample_weights.reshape(-1)
    total = index_add(empty, 0, segments, embedded * scale.unsqueeze(1))
    if mode == "sum":
        return total
    counts = index_add(zeros((bags,), dtype=weight.dtype, device=weight.device), 0, segments, included.to(weight.dtype))
    return total / counts.clamp(min=1.0).unsqueeze(1)
