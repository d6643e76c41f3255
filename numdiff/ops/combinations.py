"""Products and arrangements of whole tensors: kron, cartesian_prod, block_diag; and the counts
histc and bincount, and isin.

kron, cartesian_prod and block_diag are compositions of reshapes, a broadcast multiply, meshgrid,
stack and cat, so their gradients (and numdiff.compile's replay) come from those ops. histc,
bincount and isin compute on the host and have no gradient, as in PyTorch.
"""

from __future__ import annotations

import functools

import numpy as np

from numdiff import _dtype, creation
from numdiff._host_functions import host_function
from numdiff.ops._util import ensure_tensor
from numdiff.ops.joining import cat, stack
from numdiff.ops.rearrange import meshgrid
from numdiff.ops.search import _host, _on_device_of
from numdiff.tensor import Tensor


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: for 2-D inputs, the block matrix whose block (i, j) is
    ``input[i, j] * other``; for n-D, the same along every dimension (the input with fewer
    dimensions gets leading ones).

    >>> numdiff.kron(numdiff.tensor([[1, 2]]), numdiff.tensor([[1], [10]]))
    tensor([[ 1,  2],
            [10, 20]])
    """
    input, other = ensure_tensor("kron", input), ensure_tensor("kron", other, "other")
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.shape)
    # a[i0, 1, i1, 1, ...] * b[1, j0, 1, j1, ...] -> [(i0, j0), (i1, j1), ...] flattened in pairs
    a = input.reshape(tuple(s for size in a_shape for s in (size, 1)))
    b = other.reshape(tuple(s for size in b_shape for s in (1, size)))
    return (a * b).reshape(tuple(m * n for m, n in zip(a_shape, b_shape)))


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element of each 1-D tensor, as rows (the last tensor varies
    fastest); one tensor is returned as it is.

    >>> numdiff.cartesian_prod(numdiff.tensor([1, 2]), numdiff.tensor([3, 4]))
    tensor([[1, 3],
            [1, 4],
            [2, 3],
            [2, 4]])
    """
    if not tensors:
        raise TypeError("cartesian_prod: expected at least one tensor")
    tensors = tuple(ensure_tensor("cartesian_prod", t, f"tensors[{i}]") for i, t in enumerate(tensors))
    for i, t in enumerate(tensors):
        if t.ndim != 1:
            raise ValueError(f"cartesian_prod: expects 1-D tensors, got tensors[{i}] of shape {tuple(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise TypeError(f"cartesian_prod: expects tensors of one dtype, got {sorted(map(str, dtypes))}")
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)


def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of the given blocks (0-d is 1 x 1, 1-D a row), zeros elsewhere,
    in the promoted dtype.

    >>> numdiff.block_diag(numdiff.tensor([[1, 2]]), numdiff.tensor(3))
    tensor([[1, 2, 0],
            [0, 0, 3]])
    """
    blocks = []
    for i, t in enumerate(tensors):
        t = ensure_tensor("block_diag", t, f"tensors[{i}]")
        if t.ndim > 2:
            raise ValueError(f"block_diag: expects tensors of at most 2 dimensions, got tensors[{i}] of shape {tuple(t.shape)}")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return creation.zeros((1, 0))
    dtype = functools.reduce(_dtype.promote, [_dtype.from_numpy(b._data.dtype) for b in blocks])
    device = blocks[0].device
    width = sum(b.shape[1] for b in blocks)
    rows, column = [], 0
    for b in blocks:
        height, columns = b.shape
        left = creation.zeros((height, column), dtype=dtype, device=device)
        right = creation.zeros((height, width - column - columns), dtype=dtype, device=device)
        rows.append(cat([left, b.to(dtype), right], dim=1))
        column += columns
    return cat(rows, dim=0)


@host_function
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """Counts of the elements in `bins` equal-width bins over [min, max] (the data's own range
    when both are 0); elements outside are ignored, max falls in the last bin. Same dtype as the
    input (floating point only), no gradient.

    >>> numdiff.histc(numdiff.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """
    input = ensure_tensor("histc", input)
    if isinstance(bins, bool) or not isinstance(bins, int) or bins <= 0:
        raise ValueError(f"histc: bins must be a positive int, got {bins!r}")
    if not input.is_floating_point():
        raise TypeError(f"histc: expects a floating point tensor, got dtype {input.dtype}")
    values = _host("histc", input).reshape(-1)
    low, high = float(min), float(max)
    if low > high:
        raise ValueError(f"histc: max must be at least min, got min={min} and max={max}")
    if low == high and values.size:
        low, high = float(values.min()), float(values.max())
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(f"histc: range of [{low}, {high}] is not finite")
    if low == high:
        low, high = low - 1.0, high + 1.0
    inside = values[(values >= low) & (values <= high)].astype(np.float64)
    # The bin of x is floor((x - min) * bins / (max - min)), with max in the last one.
    index = np.minimum(((inside - low) * bins / (high - low)).astype(np.int64), bins - 1)
    counts = np.bincount(index, minlength=bins).astype(values.dtype)
    return _on_device_of(counts, input)


@host_function
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0, 1, ... occurs in the 1-D non-negative integer `input` (at least
    `minlength` counts); with `weights`, the sum of each value's weights instead (float64 for
    integer weights, else their dtype), as in PyTorch. No gradient.

    >>> numdiff.bincount(numdiff.tensor([0, 1, 1, 3]))
    tensor([1, 2, 0, 1])
    """
    input = ensure_tensor("bincount", input)
    if isinstance(minlength, bool) or not isinstance(minlength, int) or minlength < 0:
        raise ValueError(f"bincount: minlength must be a non-negative int, got {minlength!r}")
    values = _host("bincount", input)
    if input.ndim != 1 or values.dtype.kind not in "iub":
        raise ValueError(
            f"bincount: only 1-d non-negative integral inputs are supported, got shape {tuple(input.shape)} "
            f"and dtype {input.dtype}"
        )
    if values.size and values.min() < 0:
        raise ValueError(f"bincount: only non-negative values can be counted, got {values.min()}")
    if weights is None:
        return _on_device_of(np.bincount(values, minlength=minlength).astype(np.int64), input)
    weights = ensure_tensor("bincount", weights, "weights")
    if tuple(weights.shape) != tuple(input.shape):
        raise ValueError(f"bincount: weights {tuple(weights.shape)} must have the input's shape {tuple(input.shape)}")
    w = _host("bincount", weights)
    dtype = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    return _on_device_of(np.bincount(values, weights=w, minlength=minlength).astype(dtype), input)


@host_function
def isin(elements: Tensor | float, test_elements: Tensor | float, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of `elements` occurs in `test_elements` (either may be a Python number), a bool
    tensor of the elements' shape; with `invert`, whether it does not. No gradient.

    >>> numdiff.isin(numdiff.tensor([1, 2, 3]), numdiff.tensor([2, 5]))
    tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin: expected elements or test_elements to be a Tensor, got two numbers")
    like = elements if isinstance(elements, Tensor) else test_elements
    a = _host("isin", elements) if isinstance(elements, Tensor) else np.asarray(elements)
    b = _host("isin", test_elements) if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    found = np.isin(a, b, assume_unique=assume_unique, invert=invert)
    return _on_device_of(np.asarray(found, dtype=np.bool_), like)
