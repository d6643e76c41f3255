"""PyTorch's functional forms of view writes and copies: select_scatter, slice_scatter and
diagonal_scatter (the input with a view's place replaced, out of place), the `*_copy` forms of the
view ops (a view's values in new memory), split_with_sizes and the unsafe_ splits, and
torch.gradient (central differences). All are compositions of differentiable ops."""

from __future__ import annotations

from typing import Any

from numdiff import creation
from numdiff._ground.args import is_int
from numdiff.ops import arithmetic, diagonals, indexing, joining, rearrange, shape
from numdiff.ops._util import ensure_tensor, normalize_dim
from numdiff.tensor import Tensor


def _placed(op: str, input: Tensor, key: tuple, src: Tensor, expected: tuple) -> Tensor:
    input, src = ensure_tensor(op, input), ensure_tensor(op, src, "src")
    if tuple(src.shape) != expected:
        raise ValueError(f"{op}: src must have shape {expected} (the view's), got {tuple(src.shape)}")
    return indexing.index_put(input, key, src.to(input.dtype))


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of `input` with input.select(dim, index) replaced by `src`."""
    input = ensure_tensor("select_scatter", input)
    dim = normalize_dim("select_scatter", dim, input.ndim)
    view = rearrange.select(input, dim, index)
    return _placed("select_scatter", input, (slice(None),) * dim + (index,), src, tuple(view.shape))


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    """A copy of `input` with input[..., start:end:step, ...] (along `dim`) replaced by `src`."""
    input = ensure_tensor("slice_scatter", input)
    dim = normalize_dim("slice_scatter", dim, input.ndim)
    key = (slice(None),) * dim + (slice(start, end, step),)
    view = indexing.getitem(input, key)
    return _placed("slice_scatter", input, key, src, tuple(view.shape))


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of `input` with the diagonal (offset, dim1, dim2) replaced by `src`."""
    input, src = ensure_tensor("diagonal_scatter", input), ensure_tensor("diagonal_scatter", src, "src")
    view = diagonals.diagonal(input, offset, dim1, dim2)
    if tuple(src.shape) != tuple(view.shape):
        raise ValueError(f"diagonal_scatter: src must have shape {tuple(view.shape)} (the diagonal's), got {tuple(src.shape)}")
    d1, d2 = normalize_dim("diagonal_scatter", dim1, input.ndim), normalize_dim("diagonal_scatter", dim2, input.ndim)
    moved = rearrange.movedim(input, (d1, d2), (-2, -1))
    length = view.shape[-1]
    rows = creation.arange(max(-offset, 0), max(-offset, 0) + length, device=input.device)
    cols = creation.arange(max(offset, 0), max(offset, 0) + length, device=input.device)
    written = indexing.index_put(moved, (Ellipsis, rows, cols), src.to(input.dtype))
    return rearrange.movedim(written, (-2, -1), (d1, d2))


def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """`input` split along `dim` into pieces of the given sizes, which must add up to its length."""
    input = ensure_tensor("split_with_sizes", input)
    dim = normalize_dim("split_with_sizes", dim, max(input.ndim, 1))
    sizes = list(split_sizes)
    if any(not is_int(s) or s < 0 for s in sizes) or sum(sizes) != input.shape[dim]:
        raise ValueError(f"split_with_sizes: sizes {sizes} must be non-negative and add up to {input.shape[dim]} (dimension {dim})")
    return joining.split(input, sizes, dim)


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> tuple[Tensor, ...]:
    """Estimates of the derivative of `input` along each of `dim` by second-order central
    differences inside and first-order (edge_order=1) differences at the ends, for uniform
    `spacing` (a number per dimension or one for all)."""
    input = ensure_tensor("gradient", input)
    if edge_order != 1:
        raise ValueError(f"gradient: only edge_order=1 is supported, got {edge_order!r}")
    dims = list(range(input.ndim)) if dim is None else [dim] if is_int(dim) else list(dim)
    dims = [normalize_dim("gradient", d, input.ndim) for d in dims]
    steps = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(steps) != len(dims) or any(isinstance(h, Tensor) for h in steps):
        raise ValueError(f"gradient: spacing must be one number or one number per dimension {dims}, got {spacing!r}")
    results = []
    for d, h in zip(dims, steps):
        n = input.shape[d]
        if n < 2:
            raise ValueError(f"gradient: dimension {d} needs at least 2 points (edge_order + 1), got {n}")
        first = arithmetic.div(arithmetic.sub(rearrange.narrow(input, d, 1, 1), rearrange.narrow(input, d, 0, 1)), float(h))
        last = arithmetic.div(arithmetic.sub(rearrange.narrow(input, d, n - 1, 1), rearrange.narrow(input, d, n - 2, 1)), float(h))
        pieces = [first]
        if n > 2:
            inner = arithmetic.sub(rearrange.narrow(input, d, 2, n - 2), rearrange.narrow(input, d, 0, n - 2))
            pieces.append(arithmetic.div(inner, 2.0 * float(h)))
        pieces.append(last)
        results.append(joining.cat(pieces, d))
    return tuple(results)


def _copy_of(name: str, view: Any) -> Any:
    def copy(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        result = view(ensure_tensor(name, input), *args, **kwargs)
        if isinstance(result, (tuple, list)):
            return type(result)(r.clone() for r in result)
        return result.clone()

    copy.__name__ = copy.__qualname__ = name
    copy.__doc__ = f"The values of ``{name[:-5]}`` in new memory (not a view)."
    return copy


COPIES = {
    f"{name}_copy": _copy_of(f"{name}_copy", fn)
    for name, fn in (
        ("view", shape.view), ("t", shape.t), ("transpose", shape.transpose), ("permute", shape.permute),
        ("expand", shape.expand), ("squeeze", shape.squeeze), ("unsqueeze", shape.unsqueeze),
        ("diagonal", diagonals.diagonal), ("select", rearrange.select), ("unbind", rearrange.unbind),
        ("split", joining.split), ("split_with_sizes", split_with_sizes), ("narrow", rearrange.narrow),
        ("detach", lambda x: x.detach()), ("alias", lambda x: x),
    )
}  # fmt: skip

FUNCTIONS = {
    "select_scatter": select_scatter, "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
    "split_with_sizes": split_with_sizes, "unsafe_split": joining.split, "unsafe_chunk": joining.chunk,
    "unsafe_split_with_sizes": split_with_sizes, "gradient": gradient, **COPIES,
}  # fmt: skip
