"""Argument checks and shape bookkeeping for the pooling functions in numdiff.ops.pool."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.kernels.pool import pool_output_size
from numdiff.ops._util import ensure_tensor
from numdiff.tensor import Tensor


def int_tuple(op: str, name: str, value: Any, n: int, minimum: int) -> tuple[int, ...]:
    values = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) == 1 and n > 1:
        values = values * n
    if len(values) != n or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values
    ):
        raise ValueError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if any(v < minimum for v in values):
        bound = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{op}: {name} must be {bound}, got {value!r}")
    return tuple(int(v) for v in values)


def batched_input(op: str, input: Any, dims: int) -> tuple[Tensor, bool]:
    """A floating tensor of dims+2 (batched) or dims+1 (unbatched) dimensions, as batched."""
    x = ensure_tensor(op, input, "input")
    if x.ndim not in (dims + 1, dims + 2):
        raise ValueError(
            f"{op}: expected a {dims + 2}-D (batched) or {dims + 1}-D (unbatched) input, got shape {tuple(x.shape)}"
        )
    if x.dtype.numpy.kind != "f":
        raise TypeError(f"{op}: input must be a floating-point tensor, got {x.dtype}")
    if any(s == 0 for s in x.shape[-dims:]):
        raise ValueError(f"{op}: spatial dimensions must be non-empty, got input {tuple(x.shape)}")
    unbatched = x.ndim == dims + 1
    return (x.unsqueeze(0) if unbatched else x), unbatched


def pool_window(op, x, dims, kernel_size, stride, padding, dilation, ceil_mode):
    """Validated (kernel, stride, padding, dilation) tuples of length `dims`."""
    kernel = int_tuple(op, "kernel_size", kernel_size, dims, 1)
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else stride
    stride = int_tuple(op, "stride", stride, dims, 1)
    padding = int_tuple(op, "padding", padding, dims, 0)
    dilation = int_tuple(op, "dilation", dilation, dims, 1)
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{op}: padding {padding} must be at most half the kernel size {kernel}")
    for i in range(dims):
        size = x.shape[2 + i]
        if pool_output_size(size, kernel[i], stride[i], padding[i], dilation[i], bool(ceil_mode)) < 1:
            raise ValueError(
                f"{op}: kernel_size {kernel} with dilation {dilation} does not fit input {tuple(x.shape)} "
                f"with padding {padding}"
            )
    return kernel, stride, padding, dilation


def resolve_output_size(op: str, output_size: Any, spatial: tuple) -> tuple[int, ...]:
    n = len(spatial)
    values = (
        (output_size,) * n
        if isinstance(output_size, (int, np.integer)) or output_size is None
        else tuple(output_size)
    )
    if len(values) != n:
        raise ValueError(f"{op}: output_size must be an int or {n} values, got {output_size!r}")
    resolved = tuple(s if v is None else v for v, s in zip(values, spatial))
    if not all(isinstance(v, (int, np.integer)) and v >= 1 for v in resolved):
        raise ValueError(
            f"{op}: output_size must be positive ints (or None to keep a size), got {output_size!r}"
        )
    return tuple(int(v) for v in resolved)


def unbatch(out: Tensor, unbatched: bool, squeeze_h: bool) -> Tensor:
    if squeeze_h:
        out = out.squeeze(-2)
    return out.squeeze(0) if unbatched else out


def indices_tensor(indices: Any, unbatched: bool, squeeze_h: bool) -> Tensor:
    if squeeze_h:
        indices = indices.reshape(indices.shape[:2] + indices.shape[3:])
    if unbatched:
        indices = indices[0]
    return Tensor._wrap(indices, None, None)
