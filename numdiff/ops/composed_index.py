"""PyTorch's shape and index functions that are compositions of numdiff's ops: splits and flips
by axis name (hsplit, fliplr), index writes (index_fill, index_copy, masked_scatter, put),
windows onto a dimension (unfold), quantiles and integration. Each is a few differentiable ops,
so gradients, vmap and compile come from the ops it is made of.
"""

from __future__ import annotations

from typing import Any

from numdiff import _dtype as dtypes
from numdiff import creation
from numdiff._ground.args import is_int
from numdiff.ops import (
    arithmetic,
    diagonals,
    indexing,
    joining,
    logical,
    rearrange,
    reduction,
    scan,
    selection,
    shape,
    sorting,
    unary,
)
from numdiff.ops import norms as norms_
from numdiff.ops._util import as_default_float, ensure_tensor, normalize_dim
from numdiff.tensor import Size, Tensor


def fliplr(input: Tensor) -> Tensor:
    """`input` with its columns (dimension 1) in reverse order; at least 2-D."""
    input = ensure_tensor("fliplr", input)
    if input.ndim < 2:
        raise ValueError(f"fliplr: input must be at least 2-D, got shape {tuple(input.shape)}")
    return shape.flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """`input` with its rows (dimension 0) in reverse order; at least 1-D."""
    input = ensure_tensor("flipud", input)
    if input.ndim < 1:
        raise ValueError("flipud: input must be at least 1-D, got a 0-d tensor")
    return shape.flip(input, (0,))


def _axis_split(op: str, input: Tensor, sections: Any, dim: int, least: int) -> tuple[Tensor, ...]:
    input = ensure_tensor(op, input)
    if input.ndim < least:
        raise ValueError(f"{op}: input must be at least {least}-D, got shape {tuple(input.shape)}")
    if is_int(sections) and input.shape[dim] % sections != 0:
        raise ValueError(
            f"{op}: dimension {dim} of size {input.shape[dim]} does not divide into {sections} equal sections"
        )
    return rearrange.tensor_split(input, sections, dim)


def hsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    """Split into equal sections (or at indices) along dimension 1, or 0 for a 1-D tensor."""
    input = ensure_tensor("hsplit", input)
    return _axis_split("hsplit", input, sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    """Split into equal sections (or at indices) along dimension 0; at least 2-D."""
    return _axis_split("vsplit", input, sections, 0, 2)


def dsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    """Split into equal sections (or at indices) along dimension 2; at least 3-D."""
    return _axis_split("dsplit", input, sections, 2, 3)


def ravel(input: Tensor) -> Tensor:
    """`input` as a 1-D tensor (a view where the layout allows)."""
    return shape.reshape(ensure_tensor("ravel", input), (-1,))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A 2-D tensor with the flattened `input` on diagonal `offset`."""
    return diagonals.diag(shape.reshape(ensure_tensor("diagflat", input), (-1,)), offset)


def msort(input: Tensor) -> Tensor:
    """`input` sorted along dimension 0 (the values only)."""
    return sorting.sort(ensure_tensor("msort", input), 0).values


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Values of `input` at `indices` along `dim`, the two broadcast against each other outside
    `dim` (with dim=None, `indices` index the flattened input)."""
    input, indices = ensure_tensor("take_along_dim", input), ensure_tensor("take_along_dim", indices, "indices")
    if indices.dtype.is_floating_point or indices.dtype is dtypes.bool_:
        raise TypeError(f"take_along_dim: indices must be an integer tensor, got {indices.dtype}")
    if dim is None:
        return indexing.gather(shape.reshape(input, (-1,)), 0, shape.reshape(indices, (-1,)))
    dim = normalize_dim("take_along_dim", dim, input.ndim)
    if indices.ndim != input.ndim:
        raise ValueError(
            f"take_along_dim: input {tuple(input.shape)} and indices {tuple(indices.shape)} must have the same number of dimensions"
        )
    outer = list(broadcast_shapes(
        tuple(1 if d == dim else n for d, n in enumerate(input.shape)),
        tuple(1 if d == dim else n for d, n in enumerate(indices.shape)),
    ))  # fmt: skip
    wide_input = shape.expand(input, *[input.shape[d] if d == dim else n for d, n in enumerate(outer)])
    wide_indices = shape.expand(indices, *[indices.shape[d] if d == dim else n for d, n in enumerate(outer)])
    return indexing.gather(wide_input, dim, wide_indices)


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape that tensors of `shapes` broadcast to, or a ValueError naming the clash."""
    result: list[int] = []
    for raw in shapes:
        dims = (raw,) if is_int(raw) else tuple(raw)
        if any(not is_int(n) or n < 0 for n in dims):
            raise ValueError(f"broadcast_shapes: a shape holds non-negative integers, got {raw!r}")
        width = max(len(result), len(dims))
        a = [1] * (width - len(result)) + result
        b = [1] * (width - len(dims)) + list(dims)
        for i, (m, n) in enumerate(zip(a, b)):
            if m != n and m != 1 and n != 1:
                raise ValueError(f"broadcast_shapes: shape {tuple(dims)} does not broadcast with {tuple(result)} at dimension {i}")
            a[i] = n if m == 1 else m
        result = a
    return Size(result)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape (views, as PyTorch's)."""
    tensors = tuple(ensure_tensor("broadcast_tensors", t) for t in tensors)
    target = broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(shape.expand(t, *target) for t in tensors)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of `input` with the slices at `index` along `dim` set to `value` (a number or 0-d tensor)."""
    input, index = ensure_tensor("index_fill", input), _index_vector("index_fill", index)
    dim = normalize_dim("index_fill", dim, max(input.ndim, 1))
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ValueError(f"index_fill: value must be a number or a 0-d tensor, got shape {tuple(value.shape)}")
    _check_index_range("index_fill", input, dim, index)
    return indexing.index_put(input, (slice(None),) * dim + (index,), value)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` with slice index[i] along `dim` replaced by slice i of `source`."""
    input, index = ensure_tensor("index_copy", input), _index_vector("index_copy", index)
    source = ensure_tensor("index_copy", source, "source")
    dim = normalize_dim("index_copy", dim, max(input.ndim, 1))
    expected = tuple(index.shape[0] if d == dim else n for d, n in enumerate(input.shape))
    if input.ndim and tuple(source.shape) != expected:
        raise ValueError(f"index_copy: source must have shape {expected}, got {tuple(source.shape)}")
    _check_index_range("index_copy", input, dim, index)
    if source.dtype != input.dtype:
        raise TypeError(f"index_copy: source dtype {source.dtype} must match input dtype {input.dtype}")
    return indexing.index_put(input, (slice(None),) * dim + (index,), source)


def _index_vector(op: str, index: Any) -> Tensor:
    index = ensure_tensor(op, index, "index")
    if index.ndim > 1 or index.is_floating_point() or index.dtype is dtypes.bool_:
        raise TypeError(f"{op}: index must be a 0-d or 1-D integer tensor, got {index.dtype} of shape {tuple(index.shape)}")
    return shape.reshape(index, (-1,))


def _check_index_range(op: str, input: Tensor, dim: int, index: Tensor) -> None:
    size = input.shape[dim] if input.ndim else 1
    if index.numel() and (int(reduction.amax(index)) >= size or int(reduction.amin(index)) < -size):
        bad = [int(i) for i in index.tolist() if not -size <= int(i) < size]
        raise IndexError(f"{op}: index {bad[0]} is out of range for dimension {dim} of size {size}")


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` where the True places of `mask` (broadcast to input) take the elements of
    `source` in order."""
    input, mask = ensure_tensor("masked_scatter", input), ensure_tensor("masked_scatter", mask, "mask")
    source = ensure_tensor("masked_scatter", source, "source")
    if mask.dtype is not dtypes.bool_:
        raise TypeError(f"masked_scatter: mask must be a bool tensor, got {mask.dtype}")
    mask = shape.expand(mask, *input.shape)
    flat_mask = shape.reshape(mask, (-1,))
    taken = int(reduction.sum(flat_mask))
    if taken > source.numel():
        raise ValueError(f"masked_scatter: mask selects {taken} places but source has only {source.numel()} elements")
    if source.dtype != input.dtype:
        raise TypeError(f"masked_scatter: source dtype {source.dtype} must match input dtype {input.dtype}")
    position = selection.clamp(arithmetic.sub(scan.cumsum(flat_mask.long(), 0), 1), min=0)
    values = indexing.gather(shape.reshape(source, (-1,)), 0, position) if source.numel() else shape.reshape(input, (-1,))
    return selection.where(mask, shape.reshape(values, tuple(input.shape)), input)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with the elements at flat positions `index` set to (or, with `accumulate`,
    increased by) `source`, input seen as 1-D."""
    input, index = ensure_tensor("put", input), ensure_tensor("put", index, "index")
    source = ensure_tensor("put", source, "source")
    if index.is_floating_point() or index.dtype is dtypes.bool_:
        raise TypeError(f"put: index must be an integer tensor, got {index.dtype}")
    if index.numel() != source.numel():
        raise ValueError(f"put: index has {index.numel()} elements but source has {source.numel()}")
    flat = shape.reshape(input, (-1,))
    flat_index = shape.reshape(index, (-1,))
    _check_index_range("put", flat, 0, flat_index)
    values = shape.reshape(source, (-1,))
    if accumulate:
        written = arithmetic.add(flat, _scatter_sum(values, flat_index, flat))
    else:
        written = indexing.index_put(flat, (flat_index,), values)
    return shape.reshape(written, tuple(input.shape))


def _scatter_sum(values: Tensor, index: Tensor, like: Tensor) -> Tensor:
    size = like.shape[0]
    wrapped = selection.where(logical.lt(index, 0), arithmetic.add(index, size), index)
    return indexing.scatter_add(creation.zeros(size, dtype=like.dtype, device=like.device), 0, wrapped, values)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """All windows of `size` elements along `dimension`, `step` apart: that dimension becomes the
    window count and a new last dimension of length `size` holds each window."""
    input = ensure_tensor("unfold", input)
    if not is_int(size) or not is_int(step) or size < 0 or step <= 0:
        raise ValueError(f"unfold: size must be >= 0 and step > 0, got size={size!r}, step={step!r}")
    dim = normalize_dim("unfold", dimension, max(input.ndim, 1))
    length = input.shape[dim] if input.ndim else 1
    if size > length:
        raise ValueError(f"unfold: size {size} is larger than dimension {dim} of size {length}")
    if input.ndim == 0:
        return shape.reshape(input, (1,))
    count = (length - size) // step + 1
    starts = arithmetic.mul(creation.arange(count, device=input.device), step)
    offsets = creation.arange(size, device=input.device)
    positions = shape.reshape(arithmetic.add(shape.reshape(starts, (-1, 1)), offsets), (-1,))
    picked = indexing.index_select(input, dim, positions)
    windows = shape.unflatten(picked, dim, (count, size))
    return rearrange.movedim(windows, dim + 1, -1)


def sum_to_size(input: Tensor, *size: Any) -> Tensor:
    """`input` summed down to `size`, the shape it was broadcast from."""
    input = ensure_tensor("sum_to_size", input)
    target = tuple(size[0]) if len(size) == 1 and not is_int(size[0]) else tuple(size)
    try:
        expandable = broadcast_shapes(target, tuple(input.shape)) == tuple(input.shape)
    except ValueError:
        expandable = False
    if not expandable:
        raise ValueError(f"sum_to_size: size {target} is not expandable to the input's shape {tuple(input.shape)}")
    lead = input.ndim - len(target)
    out = reduction.sum(input, tuple(range(lead))) if lead else input
    kept = tuple(d for d, n in enumerate(target) if n == 1 and out.shape[d] != 1)
    return reduction.sum(out, kept, keepdim=True) if kept else out


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal-rule integral of `y` along `dim`, at sample points `x` or spacing `dx`."""
    y = ensure_tensor("trapezoid", y, "y")
    dim = normalize_dim("trapezoid", dim, y.ndim)
    pieces = _trapezoids("trapezoid", y, x, dx, dim)
    return reduction.sum(pieces, dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal-rule integral of `y` along `dim` (one element shorter)."""
    y = ensure_tensor("cumulative_trapezoid", y, "y")
    dim = normalize_dim("cumulative_trapezoid", dim, y.ndim)
    return scan.cumsum(_trapezoids("cumulative_trapezoid", y, x, dx, dim), dim)


def _trapezoids(op: str, y: Tensor, x: Any, dx: Any, dim: int) -> Tensor:
    if x is not None and dx is not None:
        raise TypeError(f"{op}: give x or dx, not both")
    n = y.shape[dim]
    y = y if y.is_floating_point() else as_default_float(y)
    ends = arithmetic.add(rearrange.narrow(y, dim, 1, max(n - 1, 0)), rearrange.narrow(y, dim, 0, max(n - 1, 0)))
    if isinstance(x, Tensor):
        if x.ndim == 1:
            if x.shape[0] != n:
                raise ValueError(f"{op}: x has {x.shape[0]} points but y has {n} along dim {dim}")
            steps = scan.diff(x)
            steps = shape.reshape(steps, tuple(-1 if d == dim else 1 for d in range(y.ndim)))
        else:
            steps = scan.diff(x, dim=dim)
        return arithmetic.div(arithmetic.mul(ends, steps), 2.0)
    spacing = 1.0 if dx is None and x is None else (x if dx is None else dx)
    return arithmetic.mul(ends, float(spacing) / 2.0)


def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """The `q`-th quantiles of `input` (over everything, or along `dim`); q a number or 1-D tensor
    in [0, 1], its values becoming a new first dimension. NaN where a slice holds a NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """quantile, ignoring NaNs (NaN only where a slice is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op: str, input: Tensor, q: Any, dim: Any, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    input = ensure_tensor(op, input)
    if not input.is_floating_point():
        raise TypeError(f"{op}: input must be a floating point tensor, got {input.dtype}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    scalar_q = not isinstance(q, Tensor)
    qs = creation.tensor([float(q)] if scalar_q else q.tolist() if q.ndim else [float(q)], dtype=input.dtype, device=input.device)
    if isinstance(q, Tensor) and q.ndim > 1:
        raise ValueError(f"{op}: q must be a number or a 0-d or 1-D tensor, got shape {tuple(q.shape)}")
    if bool(logical.any(logical.lt(qs, 0))) or bool(logical.any(logical.gt(qs, 1))):
        raise ValueError(f"{op}: q values must be in [0, 1], got {qs.tolist()}")
    if input.numel() == 0:
        raise ValueError(f"{op}: input tensor must be non-empty")
    if dim is None:
        data, axis = shape.reshape(input, (-1,)), 0
    else:
        axis = normalize_dim(op, dim, max(input.ndim, 1))
        data = input if input.ndim else shape.reshape(input, (1,))
    data = rearrange.movedim(data, axis, -1)  # the reduced dimension last: [..., n]
    ordered = sorting.sort(data, -1).values  # NaNs sort last
    n = data.shape[-1]
    nan = logical.isnan(data)
    valid = arithmetic.sub(n, reduction.sum(nan.long(), -1, keepdim=True)) if ignore_nan else None
    results = []
    for k in qs.tolist():
        last = arithmetic.sub(valid, 1).to(input.dtype) if ignore_nan else float(n - 1)
        rank = arithmetic.mul(last, k) if ignore_nan else creation.full((*ordered.shape[:-1], 1), k * (n - 1), dtype=input.dtype, device=input.device)
        rank = selection.clamp(rank, min=0.0)
        low, high = _neighbours(rank, interpolation)
        lo_v = indexing.gather(ordered, -1, low.long())
        hi_v = indexing.gather(ordered, -1, high.long())
        weight = arithmetic.sub(rank, low) if interpolation == "linear" else 0.5 if interpolation == "midpoint" else 0.0
        value = arithmetic.add(lo_v, arithmetic.mul(arithmetic.sub(hi_v, lo_v), weight))
        if ignore_nan:
            value = selection.where(logical.eq(valid, 0), float("nan"), value)
        else:
            value = selection.where(logical.any(nan, -1, keepdim=True), float("nan"), value)
        results.append(value)
    out = joining.stack(results, 0)  # [q, ..., 1]
    if dim is None:
        out = shape.reshape(out, (len(results),) + ((1,) * input.ndim if keepdim else ()))
    else:
        out = rearrange.movedim(out, -1, axis + 1) if keepdim and input.ndim else shape.squeeze(out, -1)
    return shape.reshape(out, tuple(out.shape[1:])) if scalar_q or (isinstance(q, Tensor) and q.ndim == 0) else out


def _neighbours(rank: Tensor, interpolation: str) -> tuple[Tensor, Tensor]:
    low, high = unary.floor(rank), unary.ceil(rank)
    if interpolation == "lower":
        return low, low
    if interpolation == "higher":
        return high, high
    if interpolation == "nearest":
        near = unary.round(rank)  # half to even, as PyTorch's
        return near, near
    return low, high


def renorm(input: Tensor, p: Any, dim: int, maxnorm: Any) -> Tensor:
    """`input` with each slice along `dim` whose p-norm exceeds `maxnorm` scaled down to it."""
    input = ensure_tensor("renorm", input)
    if not input.is_floating_point():
        raise TypeError(f"renorm: input must be a floating point tensor, got {input.dtype}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p <= 0:
        raise ValueError(f"renorm: p must be a positive number, got {p!r}")
    if isinstance(maxnorm, bool) or not isinstance(maxnorm, (int, float)) or maxnorm < 0:
        raise ValueError(f"renorm: maxnorm must be a non-negative number, got {maxnorm!r}")
    if input.ndim <= 1:
        raise ValueError(f"renorm: input needs at least 2 dimensions, got shape {tuple(input.shape)}")
    dim = normalize_dim("renorm", dim, input.ndim)
    others = tuple(d for d in range(input.ndim) if d != dim)
    # norm's gradient is 0 where a slice's norm is 0 (a root of a sum of powers would give NaN there).
    norms = norms_.norm(input, float(p), others, keepdim=True)
    scale = selection.where(logical.gt(norms, maxnorm), arithmetic.div(float(maxnorm), arithmetic.add(norms, 1e-7)), 1.0)
    return arithmetic.mul(input, scale)
