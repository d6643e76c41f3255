"""as_strided: a view of a tensor's memory with the shape, strides and storage offset the caller
gives (PyTorch's ``torch.as_strided`` / ``Tensor.as_strided``).

numdiff's tensors are NumPy arrays over a root base's memory, so the view is NumPy's as_strided of
the input's own elements. What numdiff refuses, by name and with the values: negative strides, and a
view that reaches memory outside the input's own elements (PyTorch's storage may hold more than the
tensor does; numdiff's gradient has nowhere to put those elements), which includes any input that
is not contiguous. The gradient is the transpose of the gather: every view element's gradient added
at the input element it reads (so overlapping views sum, as PyTorch's backward does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._ground.args import is_int
from numdiff.autograd.function import Function
from numdiff.backend import is_host
from numdiff.ops._util import ensure_tensor
from numdiff.ops.indexing import IndexAddIntoZeros
from numdiff.ops.registry import register
from numdiff.ops.shape import _as_view
from numdiff.tensor import Tensor


@register("as_strided", compile="call", view=True)
class AsStrided(Function):
    """Elements ``offset + sum_k i_k * stride[k]`` of the contiguous input, in a `size`-shaped view.
    Gradient: the view's gradient added at those flat positions of zeros (index_add_into_zeros)."""

    @staticmethod
    def forward(ctx, x, *, size, stride, offset):
        ctx.input_shape = x.shape
        ctx.key = (_positions(size, stride, offset),)
        if not is_host(x):  # a CudaArray: a view over its device buffer
            return x.as_strided(size, stride, offset)
        flat = x.reshape(-1)  # a view: the public function checked that x is contiguous
        return np.lib.stride_tricks.as_strided(flat[offset:], size, tuple(s * x.itemsize for s in stride))

    @staticmethod
    def backward(ctx, grad):
        size = int(np.prod(ctx.input_shape))
        return (IndexAddIntoZeros.apply(grad, key=ctx.key, shape=(size,)).reshape(ctx.input_shape),)


def _positions(size: tuple, stride: tuple, offset: int) -> np.ndarray:
    """The flat input position each element of the view reads, in the view's shape."""
    positions = np.full(size, offset, dtype=np.int64)
    for dim, (n, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[dim] = n
        positions = positions + (np.arange(n, dtype=np.int64) * step).reshape(shape)
    return positions


def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """A view of `input`'s memory with shape `size`, element strides `stride`, starting
    `storage_offset` elements into its storage (default: where `input` starts).

    >>> numdiff.arange(6.0).as_strided((2, 2), (1, 2))
    tensor([[0., 2.],
            [1., 3.]])
    """
    input = ensure_tensor("as_strided", input)
    size = tuple(size) if not is_int(size) else (size,)
    stride = tuple(stride) if not is_int(stride) else (stride,)
    if not all(is_int(n) for n in size + stride) or len(size) != len(stride):
        raise ValueError(f"as_strided: size and stride must be sequences of ints of one length, got size={size!r}, stride={stride!r}")
    if any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise ValueError(f"as_strided: size and stride must be non-negative, got size={size}, stride={stride}")
    start = input.storage_offset()
    offset = start if storage_offset is None else storage_offset
    if not is_int(offset) or offset < 0:
        raise ValueError(f"as_strided: storage_offset must be a non-negative int, got {storage_offset!r}")
    count = input.numel()
    if any(n == 0 for n in size):
        last = offset - 1
    else:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if offset < start or (last >= start + count) or (0 not in size and not input.is_contiguous()):
        raise ValueError(
            f"as_strided: size={size}, stride={stride}, storage_offset={offset} reads storage elements "
            f"{offset}..{last}, but the input (shape {tuple(input.shape)}, strides {input.stride()}, contiguous="
            f"{input.is_contiguous()}) holds elements {start}..{start + count - 1} contiguously: numdiff views only "
            "the input's own elements of a contiguous input (call .contiguous() first, or index the base tensor)"
        )
    attrs = {"size": tuple(int(n) for n in size), "stride": tuple(int(s) for s in stride), "offset": int(offset - start)}
    return _as_view(AsStrided.apply(input, **attrs), input, AsStrided, attrs)
