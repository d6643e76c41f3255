"""Rearranging ops composed of the shape and indexing primitives: movedim, swapaxes, unbind,
narrow, tile, rot90, tensor_split, the stacks, repeat_interleave and meshgrid (the
diagonal family is in numdiff/ops/diagonals.py, roll in numdiff/ops/roll.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff._batched import VmapDataDependentError
from numdiff._tensor_extras import narrow as narrow_method
from numdiff.backend import to_host
from numdiff.creation import arange
from numdiff.ops._util import ensure_tensor, normalize_dim, vmapped
from numdiff.ops.joining import cat
from numdiff.ops.shape import _shape_arg, permute, reshape, transpose
from numdiff.tensor import Tensor


def _dims_arg(op: str, dims: Any, ndim: int) -> tuple[int, ...]:
    if isinstance(dims, (int, np.integer)):
        dims = (int(dims),)
    return tuple(normalize_dim(op, int(d), ndim) for d in dims)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move the dims in `source` to the positions in `destination`; the others keep their order (a view).

    >>> numdiff.zeros(2, 3, 4).movedim(0, -1).shape
    numdiff.Size([3, 4, 2])
    """
    input = ensure_tensor("movedim", input)
    src = _dims_arg("movedim", source, input.ndim)
    dst = _dims_arg("movedim", destination, input.ndim)
    if len(src) != len(dst):
        raise ValueError(
            f"movedim: source {list(src)} and destination {list(dst)} must name the same number of dims"
        )
    for what, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise ValueError(f"movedim: repeated dim in {what} {list(dims)}")
    if input.ndim == 0:
        return input
    order = [None] * input.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(input.ndim) if d not in src)
    order = [d if d is not None else next(rest) for d in order]
    return permute(input, order) if order != list(range(input.ndim)) else input


moveaxis = movedim


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """transpose(input, axis0, axis1): NumPy's name."""
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """transpose(input, dim0, dim1)."""
    return transpose(input, dim0, dim1)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along `dim`, each without that dim (views).

    >>> [t.tolist() for t in numdiff.tensor([[1, 2], [3, 4]]).unbind(1)]
    [[1, 3], [2, 4]]
    """
    input = ensure_tensor("unbind", input)
    if input.ndim == 0:
        raise IndexError("unbind: a 0-d tensor has no dimension to unbind")
    dim = normalize_dim("unbind", dim, input.ndim)
    lead = (slice(None),) * dim
    return tuple(input[lead + (i,)] for i in range(input.shape[dim]))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at `index` along `dim`, without that dim (a view); a negative index counts from the end.

    >>> numdiff.select(numdiff.tensor([[1, 2], [3, 4]]), 1, -1)
    tensor([2, 4])
    """
    input = ensure_tensor("select", input)
    if input.ndim == 0:
        raise IndexError("select: cannot select from a 0-d tensor")
    dim = normalize_dim("select", dim, input.ndim)
    size = input.shape[dim]
    if isinstance(index, Tensor):
        index = int(index.item())
    if not -size <= index < size:
        raise IndexError(f"select: index {index} is out of range for dimension {dim} of size {size} (shape {tuple(input.shape)})")
    return input[(slice(None),) * dim + (index % size,)]


def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """The view of `length` elements from `start` along `dim` (a negative start counts from the end).

    >>> numdiff.narrow(numdiff.arange(6), 0, 2, 3)
    tensor([2, 3, 4])
    """
    return narrow_method(ensure_tensor("narrow", input), dim, start, length)


def tile(input: Tensor, dims: Any) -> Tensor:
    """Repeat the tensor dims[i] times along dim i; short `dims` are padded with leading 1s.

    >>> numdiff.tile(numdiff.tensor([1, 2]), (2,))
    tensor([1, 2, 1, 2])
    """
    input = ensure_tensor("tile", input)
    reps = _shape_arg((dims,)) if not isinstance(dims, (int, np.integer)) else (int(dims),)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repeats must be non-negative, got {list(reps)}")
    reps = (1,) * (input.ndim - len(reps)) + reps
    return input.repeat(reps)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least one dimension (a 0-d tensor becomes shape (1,))."""
    return _at_least("atleast_1d", tensors, lambda t: t.reshape(1) if t.ndim == 0 else t)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least two dimensions: a 1-D tensor of n becomes (1, n)."""
    return _at_least("atleast_2d", tensors, lambda t: t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least three dimensions: (n,) becomes (1, n, 1) and (m, n) becomes (m, n, 1)."""

    def lift(t: Tensor) -> Tensor:
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.reshape(1, t.shape[0], 1)
        if t.ndim == 2:
            return t.unsqueeze(-1)
        return t

    return _at_least("atleast_3d", tensors, lift)


def _at_least(op: str, tensors: tuple, lift) -> Any:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(lift(ensure_tensor(op, t)) for t in tensors[0])
    if len(tensors) == 1:
        return lift(ensure_tensor(op, tensors[0]))
    return tuple(lift(ensure_tensor(op, t)) for t in tensors)


def _sequence(op: str, tensors: Any) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence):
        raise TypeError(f"{op}: expected a sequence of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise ValueError(f"{op}: expected a non-empty sequence of tensors")
    return [ensure_tensor(op, t, "tensors") for t in tensors]


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along dim 0 after `atleast_2d` (1-D tensors become rows)."""
    return cat(atleast_2d(_sequence("vstack", tensors)), 0)


row_stack = vstack


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along dim 1, or along dim 0 when the tensors are 1-D, after `atleast_1d`."""
    pieces = atleast_1d(_sequence("hstack", tensors))
    return cat(pieces, 0 if pieces[0].ndim == 1 else 1)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along dim 2 after `atleast_3d`."""
    return cat(atleast_3d(_sequence("dstack", tensors)), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack 0-d and 1-D tensors as columns (others as they are) along dim 1."""
    pieces = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _sequence("column_stack", tensors)]
    return cat(pieces, 1)


def repeat(input: Tensor, *repeats: Any) -> Tensor:
    """Tile the tensor `repeats[i]` times along dim i (composed from expand and reshape)."""
    repeats = _shape_arg(repeats, "repeat")
    if len(repeats) < input.ndim:
        raise ValueError(f"repeat: number of repeat dims {len(repeats)} can not be smaller than number of tensor dims {input.ndim}")
    if any(r < 0 for r in repeats):
        raise ValueError(f"repeat: repeats must be non-negative, got {list(repeats)}")
    shape = (1,) * (len(repeats) - input.ndim) + tuple(input.shape)
    interleaved = []
    for n in shape:
        interleaved += [1, n]
    tiled = []
    for r, n in zip(repeats, shape):
        tiled += [r, n]
    out = reshape(input, interleaved).expand(tiled)
    return new_memory(out.reshape(tuple(r * n for r, n in zip(repeats, shape))))


def new_memory(out: Tensor) -> Tensor:
    """`out` copied if it is a view, for ops composed of expand and reshape that PyTorch documents
    as copying (repeat, repeat_interleave). Where nothing really repeats, or only ahead of size-1
    dims, reshape keeps a view: writable into the input, or read-only with stride 0 (an empty
    broadcast is read-only too)."""
    return out.clone() if out._base is not None or out.numel() == 0 else out


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None) -> Tensor:
    """Repeat each element `repeats` times along `dim` (of the flattened tensor when None);
    `repeats` is an int or a 1-D integer tensor with one count per element. Called with only a
    tensor of counts, gives the indices repeated by those counts.

    >>> numdiff.repeat_interleave(numdiff.tensor([1, 2]), 2)
    tensor([1, 1, 2, 2])
    """
    input = ensure_tensor("repeat_interleave", input)
    if repeats is None:
        counts = input
        _check_counts(counts, None)
        return repeat_interleave(arange(counts.shape[0] if counts.ndim else 1, device=input.device), counts, 0)
    if dim is None:
        input, dim = input.reshape(-1), 0
    dim = normalize_dim("repeat_interleave", dim, input.ndim)
    if input.ndim == 0:
        input, dim = input.reshape(1), 0
    size = input.shape[dim]
    if isinstance(repeats, Tensor) and repeats.numel() == 1:
        repeats = repeats.reshape(())
    if isinstance(repeats, Tensor) and repeats.ndim == 0:
        if repeats._data.dtype.kind not in "iu":
            raise TypeError(f"repeat_interleave: repeats must be an integer tensor, got {repeats.dtype}")
        repeats = int(repeats._data)
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        if repeats < 0:
            raise ValueError(f"repeat_interleave: repeats must be non-negative, got {repeats}")
        shape = tuple(input.shape)
        spread = shape[: dim + 1] + (int(repeats),) + shape[dim + 1 :]
        out = input.unsqueeze(dim + 1).expand(spread)
        result = new_memory(out.reshape(shape[:dim] + (size * int(repeats),) + shape[dim + 1 :]))
    else:
        counts = _check_counts(repeats, size)
        index = np.repeat(np.arange(size, dtype=np.int64), counts)
        result = input[(slice(None),) * dim + (index,)]
    if output_size is not None and result.shape[dim] != output_size:
        raise ValueError(f"repeat_interleave: output_size {output_size} does not match the result's size {result.shape[dim]}")
    return result


def _check_counts(repeats: Any, size: int | None) -> np.ndarray:
    if not isinstance(repeats, Tensor) or repeats._data.dtype.kind not in "iu" or repeats.ndim > 1:
        raise TypeError(
            f"repeat_interleave: repeats must be an int or a 1-D integer tensor, got {getattr(repeats, 'dtype', type(repeats).__name__)}"
            + (f" of shape {tuple(repeats.shape)}" if isinstance(repeats, Tensor) else "")
        )
    if vmapped(repeats):
        raise VmapDataDependentError(
            "repeat_interleave: repeats batched by vmap would give each batch entry its own result "
            "shape; pass repeats that are the same for every entry (in_dims None)"
        )
    data = repeats._data
    counts = to_host(data).reshape(-1)
    if size is not None and counts.shape[0] != size:
        raise ValueError(f"repeat_interleave: repeats has {counts.shape[0]} counts but the dimension has size {size}")
    if counts.size and counts.min() < 0:
        raise ValueError(f"repeat_interleave: repeats must be non-negative, got {counts.tolist()}")
    return counts


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D (or 0-d) tensors: with indexing="ij", output i varies along dim
    i; with "xy" the first two dims are swapped (NumPy's default). The outputs are broadcast views.

    >>> x, y = numdiff.meshgrid(numdiff.tensor([1, 2]), numdiff.tensor([3, 4, 5]), indexing="ij")
    >>> x.shape
    numdiff.Size([2, 3])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    tensors = [ensure_tensor("meshgrid", t, "tensors") for t in tensors]
    if not tensors:
        raise ValueError("meshgrid: expects a non-empty sequence of tensors")
    for i, t in enumerate(tensors):
        if t.ndim > 1:
            raise ValueError(f"meshgrid: expects 0-d or 1-D tensors, got shape {tuple(t.shape)} at position {i}")
        if t.dtype is not tensors[0].dtype or t.device != tensors[0].device:
            raise TypeError(
                f"meshgrid: expects all tensors to have the same dtype and device, got {tensors[0].dtype} on "
                f"{tensors[0].device} and {t.dtype} on {t.device} at position {i}"
            )
    sizes = [t.numel() for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[i] for i in order)
    out = []
    for i, t in enumerate(tensors):
        position = order.index(i)
        view = t.reshape(tuple(sizes[i] if d == position else 1 for d in range(len(tensors))))
        out.append(view.expand(shape))
    return tuple(out)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """`input` turned by 90 degrees `k` times in the plane of `dims`, from the first dim toward
    the second (PyTorch's direction).

    >>> numdiff.rot90(numdiff.tensor([[1, 2], [3, 4]]))
    tensor([[2, 4],
            [1, 3]])
    """
    input = ensure_tensor("rot90", input)
    dims = tuple(dims)
    if len(dims) != 2:
        raise ValueError(f"rot90: dims must name 2 dimensions, got {dims!r}")
    if input.ndim < 2:
        raise ValueError(f"rot90: expects a tensor with at least 2 dimensions, got shape {tuple(input.shape)}")
    d0, d1 = (normalize_dim("rot90", d, input.ndim) for d in dims)
    if d0 == d1:
        raise ValueError(f"rot90: dims must name 2 different dimensions, got {dims!r}")
    turns = int(k) % 4
    if turns == 1:
        return transpose(input.flip(d1), d0, d1)
    if turns == 2:
        return input.flip((d0, d1))
    if turns == 3:
        return transpose(input.flip(d0), d0, d1)
    return input.clone()


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of `input` split along `dim`: into `indices_or_sections` pieces whose sizes differ by
    at most one (the first ones larger), or at the given indices.

    >>> [t.tolist() for t in numdiff.tensor_split(numdiff.arange(5), 2)]
    [[0, 1, 2], [3, 4]]
    """
    input = ensure_tensor("tensor_split", input)
    axis = normalize_dim("tensor_split", dim, input.ndim)
    size = input.shape[axis]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"tensor_split: number of sections must be larger than 0, got {sections}")
        small, extra = divmod(size, sections)
        bounds = np.cumsum([0] + [small + 1] * extra + [small] * (sections - extra)).tolist()
    elif isinstance(indices_or_sections, (list, tuple)):
        points = [int(i) for i in indices_or_sections]
        bounds = [0, *(min(max(p + size if p < 0 else p, 0), size) for p in points), size]
    else:
        raise TypeError(
            f"tensor_split: indices_or_sections must be an int, a sequence of ints or a tensor, "
            f"got {type(indices_or_sections).__name__}"
        )
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key = [slice(None)] * input.ndim
        key[axis] = slice(lo, max(lo, hi))
        pieces.append(input[tuple(key)])
    return tuple(pieces)
