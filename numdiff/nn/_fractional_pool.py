"""fractional_max_pool2d (Graham's fractional max-pooling), as PyTorch's: windows of `kernel_size` that
start at pseudo-random, increasing offsets, one sequence per plane drawn from ``_random_samples``.

Composed of differentiable ops: the window elements are gathered by flat index, so the gradient
reaches the input through gather's backward, at the chosen maxima only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import creation
from numdiff._ground.args import int_tuple
from numdiff.ops import indexing, reduction
from numdiff.ops._util import ensure_tensor
from numdiff.tensor import Tensor

_OP = "fractional_max_pool2d"


def _starts(samples: np.ndarray, input_size: int, output_size: int, pool_size: int) -> np.ndarray:
    """Each plane's window starts: int((i + u) a) - int(u a) for i < output_size - 1, with
    a = (input_size - pool_size) / (output_size - 1) in the samples' dtype, and the last window flush
    with the end (PyTorch's generate_intervals). `samples` holds one u per plane: shape (P,)."""
    starts = np.empty((samples.shape[0], output_size), dtype=np.int64)
    if output_size > 1:
        dtype = samples.dtype.type
        alpha = dtype(input_size - pool_size) / dtype(output_size - 1)
        steps = np.arange(output_size - 1, dtype=samples.dtype)
        starts[:, :-1] = ((steps + samples[:, None]) * alpha).astype(np.int64) - (samples * alpha).astype(np.int64)[:, None]
    starts[:, -1] = input_size - pool_size
    return starts


def _output_size(op: str, size: tuple[int, int], output_size: Any, output_ratio: Any) -> tuple[int, int]:
    if output_size is not None:
        return int_tuple(op, "output_size", output_size, 2, 1, expand=True)
    if output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio, output_ratio)
    if len(ratio) != 2 or not all(isinstance(r, (int, float)) and 0.0 < r < 1.0 for r in ratio):
        raise ValueError(f"{op}: output_ratio must be a number or two numbers in (0, 1), got {output_ratio!r}")
    return int(size[0] * ratio[0]), int(size[1] * ratio[1])


def fractional_max_pool2d_with_indices(
    input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None, return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """fractional_max_pool2d's values and the flat positions (h * W + w) of the maxima."""
    input = ensure_tensor(_OP, input)
    if input.ndim not in (3, 4) or input.numel() == 0:
        raise ValueError(f"{_OP}: expects a non-empty 3D (C, H, W) or 4D (N, C, H, W) input, got shape {tuple(input.shape)}")
    kernel = int_tuple(_OP, "kernel_size", kernel_size, 2, 1, expand=True)
    batched = input if input.ndim == 4 else input.unsqueeze(0)
    n, c, height, width = batched.shape
    out_h, out_w = _output_size(_OP, (height, width), output_size, output_ratio)
    for name, out, pool, size in (("height", out_h, kernel[0], height), ("width", out_w, kernel[1], width)):
        if out + pool - 1 > size:
            raise ValueError(
                f"{_OP}: pool {name} {pool} too large relative to input {name} {size} for an output {name} of {out} "
                f"(needs output + pool - 1 <= input)"
            )
    if _random_samples is None:
        samples = creation.rand(n, c, 2, dtype=input.dtype, device=input.device)
    else:
        samples = ensure_tensor(_OP, _random_samples, "_random_samples")
        if tuple(samples.shape) != (n, c, 2):
            raise ValueError(
                f"{_OP}: _random_samples must have shape (N, C, 2) = {(n, c, 2)} for an input of shape "
                f"{tuple(input.shape)}, got {tuple(samples.shape)}"
            )
    host = samples.detach().cpu().numpy().reshape(n * c, 2)
    rows = _starts(host[:, 1], height, out_h, kernel[0])[:, :, None] + np.arange(kernel[0])  # (P, oh, kh)
    cols = _starts(host[:, 0], width, out_w, kernel[1])[:, :, None] + np.arange(kernel[1])  # (P, ow, kw)
    # (P, oh, ow, kh * kw): window elements in PyTorch's scan order, rows outer.
    flat = rows[:, :, None, :, None] * width + cols[:, None, :, None, :]
    flat = flat.reshape(n, c, out_h * out_w * kernel[0] * kernel[1])
    index = creation.tensor(flat, device=input.device)
    windows = indexing.gather(batched.reshape(n, c, height * width), 2, index)
    values, choice = reduction.max(windows.reshape(n, c, out_h, out_w, kernel[0] * kernel[1]), -1)
    positions = indexing.gather(index.reshape(n, c, out_h, out_w, -1), 4, choice.unsqueeze(-1)).squeeze(-1)
    if input.ndim == 3:
        values, positions = values.squeeze(0), positions.squeeze(0)
    return values, positions


def fractional_max_pool2d(
    input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None, return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:  # fmt: skip
    """Max over `kernel_size` windows whose starts step pseudo-randomly by 1 or 2 or more to reach
    `output_size` (or input size * `output_ratio`); with ``return_indices=True`` also the flat
    positions (h * W + w) of the maxima. ``_random_samples`` (N, C, 2) in [0, 1) fixes the windows.

    >>> F.fractional_max_pool2d(numdiff.randn(1, 2, 7, 7), 3, output_size=4).shape
    numdiff.Size([1, 2, 4, 4])
    """
    values, positions = fractional_max_pool2d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return (values, positions) if return_indices else values
