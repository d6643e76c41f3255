"""The flat result of the recurrent backward kernels, one definition for the CPU and CUDA kernels
and numdiff.ops.recurrent: which blocks it holds, and their views.

Each block is C-contiguous, so the caller reads it in place (see numdiff.kernels.recurrent for
what each block is).
"""

from __future__ import annotations

from math import prod
from typing import Any

__all__ = ["backward_blocks", "backward_size", "split"]


def backward_blocks(op: str, steps: int, batch: int, hidden: int) -> list[tuple[int, ...]]:
    """The shapes of the blocks of `op`'s result, in order ('lstm', 'gru' or 'rnn').

    >>> backward_blocks("lstm", 5, 2, 3)
    [(5, 2, 12), (2, 3), (2, 3)]
    """
    if op == "lstm":
        return [(steps, batch, 4 * hidden), (batch, hidden), (batch, hidden)]  # d gates, d h_0, d c_0
    if op == "gru":
        return [(steps, batch, 3 * hidden), (steps, batch, 3 * hidden), (batch, hidden)]  # d pre, d hidden, d h_0
    if op == "rnn":
        return [(steps, batch, hidden), (batch, hidden)]  # d pre, d h_0
    raise ValueError(f"backward_blocks: op must be 'lstm', 'gru' or 'rnn', got {op!r}")


def backward_size(op: str, steps: int, batch: int, hidden: int) -> int:
    """The length of `op`'s flat backward result."""
    return sum(prod(shape) for shape in backward_blocks(op, steps, batch, hidden))


def split(flat: Any, shapes: list[tuple[int, ...]]) -> list[Any]:
    """Views of a flat array (NumPy, CudaArray or Tensor) as consecutive blocks of these shapes."""
    views, start = [], 0
    for shape in shapes:
        size = prod(shape)
        views.append(flat[start : start + size].reshape(shape))
        start += size
    return views
