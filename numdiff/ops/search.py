"""Finding elements: nonzero, argwhere, unique, searchsorted, bucketize (integer results, no
gradient), and isclose (composed of comparisons).

The first five read the values on the host, and nonzero and unique give results whose shape
depends on them; numdiff.compile replays them as host calls (numdiff/compile/trace.py), with a
shape check that falls back to eager when the shape changes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._host_functions import host_function
from numdiff.backend import holds_values, like_host
from numdiff.ops._util import ensure_tensor, normalize_dim, operands, vmapped
from numdiff.tensor import Tensor


def _host(op: str, t: Tensor) -> np.ndarray:
    """The values of `t` as a host array (a copy from the device)."""
    if vmapped(t):
        raise RuntimeError(
            f"{op}: not supported on a tensor batched by numdiff.func.vmap (it reads the values on the "
            "host, and nonzero's and unique's result shapes depend on them); loop over the batch instead"
        )
    return t._host_values()  # bfloat16 widened exactly to float32 (see _on_device_of)


def _on_device_of(array: np.ndarray, like: Tensor) -> Tensor:
    """`array`, computed on the host from `like`'s values, as a tensor on `like`'s device; float32
    values computed from a bfloat16 tensor go back to bfloat16 (exact: they are its own values)."""
    data = like._data
    array = np.asarray(array)  # a ufunc of 0-d arrays returns a NumPy scalar
    if data.dtype == _dtype.BFLOAT16_STORAGE and array.dtype == np.float32:
        array = _dtype.cast_array(array, _dtype.bfloat16)
    return Tensor._wrap(like_host(array, data), None, None)


@host_function
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, one row per element in
    row-major order; with as_tuple=True, one 1-D tensor per dim (a 0-d input counts as 1-D).

    >>> numdiff.nonzero(numdiff.tensor([0, 3, 0, 5]))
    tensor([[1],
            [3]])
    """
    input = ensure_tensor("nonzero", input)
    if as_tuple:
        # Columns of the one traced result, so a compiled replay recomputes every part.
        rows = nonzero(input.reshape(1) if input.ndim == 0 else input)
        return tuple(rows[:, i] for i in range(rows.shape[1]))
    rows = np.argwhere(_host("nonzero", input)).astype(np.int64, copy=False)
    return _on_device_of(np.ascontiguousarray(rows), input)


def argwhere(input: Tensor) -> Tensor:
    """nonzero(input): the (n, ndim) int64 indices of the nonzero elements."""
    return nonzero(input)


def unique(
    input: Tensor,
    sorted: bool = True,  # noqa: A002 - PyTorch's argument name
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The distinct elements in ascending order (sorted=False gives the same order, as PyTorch's
    CPU build); with `dim`, the distinct slices along it. Optionally also the inverse (each
    element's position in the result, in input's shape or along dim) and the counts.

    >>> numdiff.unique(numdiff.tensor([3, 1, 3]), return_counts=True)
    (tensor([1, 3]), tensor([1, 2]))
    """
    input = ensure_tensor("unique", input)
    if dim is not None:
        if input.ndim == 0:
            raise IndexError("unique: a 0-d tensor has no dim to take unique slices along")
        dim = normalize_dim("unique", dim, input.ndim)
    # One call per part, each one tensor, so that numdiff.compile replays each as a host call.
    parts = ["values"] + ["inverse"] * bool(return_inverse) + ["counts"] * bool(return_counts)
    out = tuple(unique_part(input, part, dim) for part in parts)
    return out[0] if len(out) == 1 else out


@host_function
def unique_part(input: Tensor, part: str, dim: int | None) -> Tensor:
    """One result of `unique`: "values", "inverse" or "counts" (dim already checked)."""
    data = _host("unique", input)
    if dim is None:
        # equal_nan=False: every NaN is distinct, as in PyTorch (NumPy merges them by default).
        values, inverse, counts = np.unique(data.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        inverse = inverse.reshape(data.shape)
    else:
        values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True, axis=dim)
        inverse = inverse.reshape(-1)
    chosen = {"values": values, "inverse": inverse, "counts": counts}[part]
    return _on_device_of(chosen if part == "values" else chosen.astype(np.int64), input)


def _side(op: str, right: bool, side: str | None) -> str:
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise ValueError(f"{op}: side must be 'left' or 'right', got {side!r}")
    if right and side == "left":
        raise ValueError(f"{op}: side='left' and right=True contradict each other")
    return side


@host_function
def searchsorted(
    sorted_sequence: Tensor,
    input: Any,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """For each value of `input`, the index at which inserting it keeps the innermost dim of
    `sorted_sequence` sorted (the first such index, or the last with right=True / side="right").
    An N-D sequence searches row by row: its leading dims must equal those of `input`. (torch's
    documentation calls the second argument `values`; its keyword is `input`, as here.)

    >>> numdiff.searchsorted(numdiff.tensor([1, 3, 5]), numdiff.tensor([3, 6]))
    tensor([1, 3])
    """
    sequence = ensure_tensor("searchsorted", sorted_sequence, "sorted_sequence")
    side = _side("searchsorted", right, side)
    if not (holds_values(sequence._data) and (not isinstance(input, Tensor) or holds_values(input._data))):
        # meta tensors: the positions' shape (the input's) and dtype, no search
        shape = tuple(input.shape) if isinstance(input, Tensor) else ()
        like = sequence._data if not holds_values(sequence._data) else input._data
        return Tensor._wrap(np.empty(shape, np.int32 if out_int32 else np.int64, like=like), None, None)
    seq = _host("searchsorted", sequence)
    scalar = not isinstance(input, Tensor)
    queries = np.asarray(input) if scalar else _host("searchsorted", input)
    if seq.ndim == 0:
        raise ValueError("searchsorted: sorted_sequence must have at least one dimension, got a 0-d tensor")
    if not scalar and seq.ndim > 1 and (queries.ndim != seq.ndim or queries.shape[:-1] != seq.shape[:-1]):
        raise ValueError(
            f"searchsorted: the leading dims of sorted_sequence {tuple(seq.shape)} and input "
            f"{tuple(queries.shape)} must match (all but the last)"
        )
    if scalar and seq.ndim > 1:
        raise ValueError(f"searchsorted: a scalar input needs a 1-D sorted_sequence, got shape {tuple(seq.shape)}")
    if sorter is not None:
        order = _host("searchsorted", ensure_tensor("searchsorted", sorter, "sorter"))
        if order.shape != seq.shape or order.dtype.kind not in "iu":
            raise ValueError(f"searchsorted: sorter must be an integer tensor of the sequence's shape {tuple(seq.shape)}, got {order.dtype} {tuple(order.shape)}")
        if order.size and (order.min() < 0 or order.max() >= seq.shape[-1]):
            raise IndexError(f"searchsorted: sorter values must be in [0, {seq.shape[-1]}), got [{order.min()}, {order.max()}]")
        seq = np.take_along_axis(seq, order, axis=-1)
    if seq.ndim == 1:
        found = np.searchsorted(seq, queries, side=side)
    else:
        rows = seq.reshape(-1, seq.shape[-1])
        per_row = queries.reshape(rows.shape[0], -1)
        found = np.stack([np.searchsorted(r, q, side=side) for r, q in zip(rows, per_row)]).reshape(queries.shape)
    found = np.asarray(found, dtype=np.int32 if out_int32 else np.int64)
    return _on_device_of(found, sequence if scalar else input)


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """For each value, the index of its bucket among the 1-D sorted `boundaries`: the first i
    with value <= boundaries[i] (value < boundaries[i] with right=True).

    >>> numdiff.bucketize(numdiff.tensor([1, 4]), numdiff.tensor([1, 3, 5]))
    tensor([0, 2])
    """
    boundaries = ensure_tensor("bucketize", boundaries, "boundaries")
    if boundaries.ndim != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D, got shape {tuple(boundaries.shape)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise |input - other| <= atol + rtol * |other|, or equal (infinities too); NaNs
    are close to each other only with equal_nan. Integer inputs are compared in float64.

    >>> numdiff.isclose(numdiff.tensor([1.0, 2.0]), numdiff.tensor([1.0 + 1e-9, 2.1]))
    tensor([ True, False])
    """
    input = ensure_tensor("isclose", input)
    other = ensure_tensor("isclose", other, "other")
    if input.dtype is not other.dtype:
        raise TypeError(f"isclose: input is {input.dtype} but other is {other.dtype}; they must have the same dtype")
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol and atol must be non-negative, got rtol={rtol}, atol={atol}")
    a, b = operands("isclose", input, other)
    if a._data.dtype.kind == "b":
        return a == b
    if a._data.dtype.kind not in "fV":
        a, b = a.double(), b.double()
    # Infinities are close only when equal: inf - (-inf) is inf, and inf <= inf would hold. Their
    # differences (inf - inf is NaN) are masked out, so NumPy's warning about them says nothing.
    with np.errstate(invalid="ignore"):
        close = (a == b) | ((a - b).abs() <= atol + rtol * b.abs()) & a.isfinite() & b.isfinite()
    if equal_nan:
        close = close | (a.isnan() & b.isnan())
    return close
