"""Argument checks and shape bookkeeping for the pooling functions in numdiff.ops.pool."""

from __future__ import annotations

from typing import Any

from numdiff._ground.args import check_output_elements, int_tuple, is_int, remember_checks
from numdiff._ground.pool_geometry import check_divisor, pool_output_size
from numdiff.ops._util import ensure_tensor
from numdiff.tensor import Tensor


def batched_input(op: str, input: Any, dims: int) -> tuple[Tensor, bool]:
    """A floating tensor of dims+2 (batched) or dims+1 (unbatched) dimensions, as batched."""
    x = ensure_tensor(op, input, "input")
    if x.ndim not in (dims + 1, dims + 2):
        raise ValueError(
            f"{op}: expected a {dims + 2}-D (batched) or {dims + 1}-D (unbatched) input, got shape {tuple(x.shape)}"
        )
    if x.dtype.numpy.kind not in "fV":
        raise TypeError(f"{op}: input must be a floating-point tensor, got {x.dtype}")
    if any(s == 0 for s in x.shape[-dims:]):
        raise ValueError(f"{op}: spatial dimensions must be non-empty, got input {tuple(x.shape)}")
    unbatched = x.ndim == dims + 1
    return (x.unsqueeze(0) if unbatched else x), unbatched


@remember_checks
def pool_window(op, x_shape, dims, kernel_size, stride, padding, dilation, ceil_mode):
    """Validated (kernel, stride, padding, dilation) tuples of length `dims`, for a batched input
    of shape `x_shape`."""
    kernel = int_tuple(op, "kernel_size", kernel_size, dims, 1, expand=True)
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        stride = kernel  # PyTorch's default
    stride = int_tuple(op, "stride", stride, dims, 1, expand=True)
    padding = int_tuple(op, "padding", padding, dims, 0, expand=True)
    dilation = int_tuple(op, "dilation", dilation, dims, 1, expand=True)
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{op}: padding {padding} must be at most half the kernel size {kernel}")
    spatial = []
    for i in range(dims):
        size = x_shape[2 + i]
        spatial.append(pool_output_size(size, kernel[i], stride[i], padding[i], dilation[i], bool(ceil_mode)))
        if spatial[-1] < 1:
            raise ValueError(
                f"{op}: kernel_size {kernel} with dilation {dilation} does not fit input {x_shape} "
                f"with padding {padding}"
            )
    check_output_elements(op, x_shape[:2] + tuple(spatial))
    return kernel, stride, padding, dilation


def divisor(op: str, divisor_override: Any) -> int | None:
    """divisor_override checked (None, or a non-zero int) and returned as the op takes it."""
    return None if divisor_override is None else check_divisor(op, divisor_override)


def resolve_output_size(op: str, output_size: Any, shape: tuple) -> tuple[int, ...]:
    """Adaptive pooling's output_size for a batched input of `shape`, as ints: an int, or a
    sequence whose None entries keep the input's size."""
    spatial = tuple(shape[2:])
    n = len(spatial)
    if output_size is None or is_int(output_size):
        values: tuple = (output_size,) * n
    elif isinstance(output_size, (str, bytes)) or not hasattr(output_size, "__iter__"):
        raise TypeError(
            f"{op}: output_size must be an int or {n} values, got {output_size!r} ({type(output_size).__name__})"
        )
    else:
        values = tuple(output_size)
    if len(values) != n:
        raise ValueError(f"{op}: output_size must be an int or {n} values, got {output_size!r}")
    resolved = tuple(s if v is None else v for v, s in zip(values, spatial))
    sizes = int_tuple(op, "output_size", resolved, n, 1)
    check_output_elements(op, tuple(shape[:2]) + sizes)
    return sizes


def unbatch(out: Tensor, unbatched: bool, squeeze_h: bool) -> Tensor:
    if squeeze_h:
        out = out.squeeze(-2)
    return out.squeeze(0) if unbatched else out


def indices_tensor(indices: Tensor, unbatched: bool, squeeze_h: bool) -> Tensor:
    """An index op's result shaped like the pooled output: tensor ops, not its array, so that
    under vmap every example keeps its own indices (a batched tensor's array is the first's)."""
    if squeeze_h:
        indices = indices.squeeze(2)
    return indices.squeeze(0) if unbatched else indices
