"""max_unpool1d/2d/3d: the partial inverse of max pooling.

``max_unpool(x, indices)`` puts each value of x at its flat position ``indices`` (as max pooling's
return_indices reports them) in a zero (N, C, *output_size) tensor: a ``scatter_add`` along the
flattened plane, whose backward is a gather, so the unpooling is differentiable to every order on
every backend. The indices are an input of that op, not an attribute, so numdiff.compile and vmap
see each call's indices. Where indices repeat (overlapping pooling windows), the values add up;
PyTorch keeps one of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._ground.args import int_tuple, is_int
from numdiff.backend import to_host
from numdiff.creation import zeros
from numdiff.ops._pool_args import batched_input, unbatch
from numdiff.ops._util import ensure_tensor
from numdiff.ops.indexing import scatter_add
from numdiff.tensor import Tensor

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _output_size(op: str, dims: int, x_shape: tuple, kernel, stride, padding, output_size) -> tuple[int, ...]:
    """The unpooled spatial size: output_size's last `dims` entries if given (checked against the
    sizes max pooling could have come from), else ``(in - 1)*stride - 2*padding + kernel``."""
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(x_shape[2:], stride, padding, kernel))
    if output_size is None:
        size = default
    else:
        if is_int(output_size) or not hasattr(output_size, "__len__") or len(output_size) not in (dims, dims + 2):
            raise ValueError(
                f"{op}: output_size must hold {dims} (or {dims + 2}) sizes, got {output_size!r}"
            )
        size = int_tuple(op, "output_size", tuple(output_size)[-dims:], dims, 1)
        for i, (got, low, s) in enumerate(zip(size, default, stride)):
            if not low - s < got < low + s:
                raise ValueError(
                    f"{op}: output_size {size} is invalid for input {x_shape}: dimension {i} must be strictly "
                    f"between {low - s} and {low + s}"
                )
    if any(n < 1 for n in size):
        raise ValueError(f"{op}: the unpooled size {size} of input {x_shape} is not positive")
    return size


def _max_unpoolnd(op, dims, input, indices, kernel_size, stride, padding, output_size) -> Tensor:
    x, unbatched = batched_input(op, input, dims)
    indices = ensure_tensor(op, indices, "indices")
    if indices._data.dtype != np.int64 or tuple(indices.shape) != tuple(input.shape):
        raise ValueError(
            f"{op}: indices must be an int64 tensor of the input's shape {tuple(input.shape)}, got "
            f"{indices.dtype} {tuple(indices.shape)}"
        )
    kernel = int_tuple(op, "kernel_size", kernel_size, dims, 1, expand=True)
    stride = kernel if stride is None else int_tuple(op, "stride", stride, dims, 1, expand=True)
    padding = int_tuple(op, "padding", padding, dims, 0, expand=True)
    size = _output_size(op, dims, tuple(x.shape), kernel, stride, padding, output_size)
    plane = int(np.prod(size))
    positions = to_host(indices._data)
    if positions.size and (positions.min() < 0 or positions.max() >= plane):
        raise ValueError(
            f"{op}: indices must be in [0, {plane}) for the output size {size}, got values from "
            f"{positions.min()} to {positions.max()}"
        )
    n, c = x.shape[:2]
    if unbatched:
        indices = indices.unsqueeze(0)
    out = scatter_add(
        zeros(n, c, plane, dtype=x.dtype, device=x.device), 2, indices.reshape(n, c, -1), x.reshape(n, c, -1)
    )
    return unbatch(out.reshape(n, c, *size), unbatched, False)


def max_unpool1d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    """Zeros of the unpooled length with each input value at its `indices` (max_pool1d's).

    >>> F = numdiff.nn.functional
    >>> F.max_unpool1d(numdiff.tensor([[[3.0, 5.0]]]), numdiff.tensor([[[1, 3]]]), 2)
    tensor([[[0., 3., 0., 5.]]])
    """
    return _max_unpoolnd("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    """Zeros of the unpooled (H, W) with each input value at its flat `indices` (max_pool2d's).

    >>> F = numdiff.nn.functional
    >>> x, i = F.max_pool2d(numdiff.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
    >>> F.max_unpool2d(x, i, 2)[0, 0, 1]
    tensor([ 0.,  5.,  0.,  7.])
    """
    return _max_unpoolnd("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    """Zeros of the unpooled (D, H, W) with each input value at its flat `indices` (max_pool3d's).

    >>> F = numdiff.nn.functional
    >>> x, i = F.max_pool3d(numdiff.arange(8.0).reshape(1, 1, 2, 2, 2), 2, return_indices=True)
    >>> F.max_unpool3d(x, i, 2).flatten()
    tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """
    return _max_unpoolnd("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)
